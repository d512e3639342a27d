/**
 * The write buffer of one (partition, bucket): records are numbered by arrival, kept as Arrow
 * batches, and on flush sorted by (key, sequence fields, arrival) and merged per key by the merge
 * engine into one record per key — a level-0 file's content. When the buffer outgrows
 * `write-buffer-size` and `write-buffer-spillable` is on, its rows are sorted into a run and
 * spilled to a temp file; flush merges the spilled runs with what is in memory.
 */
import * as arrow from 'apache-arrow';
import { InvalidArgumentError, SchemaMismatchError } from '../errors.js';
import { arrowTypesEqual, physicalArrowSchema } from '../format/arrow-schema.js';
import { tableFromColumns } from '../format/column-layout.js';
import { concatTables, emptyTable, gatherRows, rowsToTable, singleBatch, takeRows } from '../format/columns.js';
import { KIND_COLUMN, isRetract, type Row, type TableSchema } from '../schema/types.js';
import { kindColumn, sequenceColumn } from './arrow-build.js';
import { columnChunk } from './column-access.js';
import type { MergeConfig } from './merge-config.js';
import { mergeEngineFor, type MergeFunction } from './merge-function.js';
import { materializeMerge } from './merge-output.js';
import {
  storedSequence,
  versionsOfRuns,
  versionsOfTables,
  type SequencedTable,
  type VersionOrder,
} from './merge-plan.js';
import { SPILL_BATCH_ROWS, SpillDirectory } from './spill.js';
import { alignRunStreams, type RunStream } from './stream-merge.js';

/**
 * Rows below which an added table is held with other small ones and copied into one table once
 * they reach it: a buffer fed row by row (JSONL, CSV) keeps a few large Arrow tables, not
 * thousands of small ones whose per-table objects would outweigh their rows.
 */
export const COALESCE_ROWS = 16_384;
/** Rows of each piece a flush yields: the unit the Parquet encoder receives, and the most a flush holds beyond the buffer. */
const FLUSH_PIECE_ROWS = 65_536;

/** Configuration of one write buffer, from the table's options. */
export interface WriteBufferOptions {
  schema: TableSchema;
  merge: MergeConfig;
  /** `write-buffer-size` in bytes (approximate in-memory Arrow size). */
  writeBufferSize: number;
  /** `write-buffer-spillable`: spill sorted runs to temp files instead of asking for an early flush. */
  spillable: boolean;
  /** `changelog-producer = input`: flush also returns every raw record. */
  keepRawChangelog?: boolean;
  /** First arrival sequence number (default 0); later flushes of the same batch continue from where the last stopped. */
  firstSequence?: number;
  /** Folder for spill files (default: the OS temp directory). */
  spillRoot?: string;
  /** `write-buffer-spill.max-disk-size`: past it the buffer stops spilling and reports isFull (default unbounded). */
  spillMaxDiskSize?: number;
  /** Rows of each piece `flushPieces` yields (default FLUSH_PIECE_ROWS). */
  pieceRows?: number;
  /** Added tables below this many rows are joined with other small ones (default COALESCE_ROWS). */
  coalesceRows?: number;
}

/** What one flush produces. */
export interface FlushResult {
  /** One record per key, sorted by key; kinds as merged (level-0 files keep -U/-D). */
  data: arrow.Table;
  /** With keepRawChangelog: every raw record, in merge order, with its own kind and sequence number. */
  changelog?: arrow.Table;
  /** Rows in `data`. */
  rowCount: number;
  /** Records consumed by this flush (sequence numbers used). */
  inputCount: number;
}

/**
 * A flush's merged output as a gather plan (WriteBuffer.takeGatherPlan): output row k is row
 * `row[k]` of `sources[source[k]]` (of `sources[0]` when `source` is null) with arrival sequence
 * `sequence[k]` and kind `kind[k]` — what `flushPieces` would materialize, in the same order.
 */
export interface GatherPlan {
  /** Single-batch tables in the physical layout (the table's columns, `_SEQUENCE_NUMBER`, `_VALUE_KIND`); emptied once copied for the workers. */
  sources: arrow.Table[];
  source: Uint16Array | null;
  row: Uint32Array;
  sequence: Float64Array;
  kind: Uint8Array;
  /** Output rows. */
  count: number;
  /** Records consumed (sequence numbers used). */
  inputCount: number;
}

/** The write buffer of one (partition, bucket): buffers, numbers, spills, and flushes merged records. */
export class WriteBuffer {
  readonly engine: MergeFunction;
  private readonly physical: arrow.Schema;
  private readonly order: VersionOrder;
  private readonly spills: SpillDirectory;
  /** Single-batch tables in arrival order; then `small`, the small tables added after them. */
  private pending: arrow.Table[] = [];
  private small: arrow.Table[] = [];
  private smallRows = 0;
  private pendingBytes = 0;
  private pendingRows = 0;
  private spilledRows = 0;
  /** Bytes and rows appended since the last flush (in memory or spilled): the rows' average size. */
  private addedBytes = 0;
  private addedRows = 0;
  private next: number;

  constructor(private readonly opts: WriteBufferOptions) {
    if (!(opts.writeBufferSize > 0)) {
      throw new InvalidArgumentError(
        `write-buffer-size must be a positive number of bytes, got ${opts.writeBufferSize}`,
      );
    }
    this.engine = mergeEngineFor(opts.merge);
    // Configuration mistakes surface when the writer is created, not at the first flush.
    this.engine.validate(opts.schema);
    this.physical = physicalArrowSchema(opts.schema);
    this.order = {
      keyColumns: opts.schema.primaryKeys,
      sequenceFields: opts.merge.sequenceFields,
      sequenceDescending: opts.merge.sequenceDescending,
    };
    this.spills = new SpillDirectory(opts.spillRoot);
    this.next = opts.firstSequence ?? 0;
  }

  /** The arrival sequence number the next record gets. */
  get nextSequence(): number {
    return this.next;
  }

  /** Approximate bytes held in memory. */
  get memoryBytes(): number {
    return this.pendingBytes;
  }

  /** Average in-memory bytes of a record buffered since the last flush (0 when empty). */
  get bytesPerRecord(): number {
    return this.addedRows === 0 ? 0 : this.addedBytes / this.addedRows;
  }

  /** Records buffered (in memory and spilled) since the last flush. */
  get size(): number {
    return this.pendingRows + this.spilledRows;
  }

  /** Sorted runs spilled to disk since the last flush. */
  get spilledRuns(): number {
    return this.spills.runCount;
  }

  /** True when the in-memory part reached `write-buffer-size` and cannot spill: flush now. */
  isFull(): boolean {
    return this.pendingBytes >= this.opts.writeBufferSize && !this.canSpill();
  }

  /**
   * Restarts arrival numbering for a new batch (the commit gives every batch its own base), so
   * numbers do not keep growing across commits. Only valid while the buffer is empty.
   */
  restartSequence(first = 0): void {
    if (this.size > 0) {
      throw new InvalidArgumentError(
        `cannot restart sequence numbers with ${this.size} records still buffered; flush first`,
      );
    }
    this.next = first;
  }

  private canSpill(): boolean {
    return this.opts.spillable && this.spills.diskBytes < (this.opts.spillMaxDiskSize ?? Infinity);
  }

  /** Buffers row objects with their kinds (default +I); -U/-D are dropped under ignore-delete. */
  add(rows: Row[], kinds?: Uint8Array | number[]): void {
    if (kinds && kinds.length !== rows.length) {
      throw new InvalidArgumentError(`got ${rows.length} rows but ${kinds.length} row kinds; pass one kind per row`);
    }
    let keepRows = rows;
    let keepKinds: ArrayLike<number> = kinds ?? new Uint8Array(rows.length);
    if (kinds && this.opts.merge.ignoreDelete) {
      const idx: number[] = [];
      for (let i = 0; i < kinds.length; i++) if (!isRetract(kinds[i])) idx.push(i);
      if (idx.length !== rows.length) {
        keepRows = idx.map((i) => rows[i]);
        keepKinds = idx.map((i) => kinds[i]);
      }
    }
    const n = keepRows.length;
    if (n === 0) return;
    const kind = Uint8Array.from(keepKinds);
    this.append(rowsToTable(this.opts.schema.fields, keepRows, { sequence: this.arrivalSequence(n), kind }));
  }

  /**
   * Throws what `addTable` would throw for the table (a missing column, a column of another type,
   * a row kind out of range), buffering nothing: a writer that holds input before it buffers it
   * rejects a bad table in the call that passed it.
   */
  checkTable(input: arrow.Table): void {
    const flat = singleBatch(input);
    this.inputColumns(flat);
    this.inputKinds(flat);
  }

  /** Buffers an Arrow table of the table's columns (by name), with an optional `_VALUE_KIND` column. */
  addTable(input: arrow.Table): void {
    const flat = singleBatch(input);
    const n = flat.numRows;
    if (n === 0) return;
    const children = this.inputColumns(flat);
    const { kind, kindAt } = this.inputKinds(flat);
    const keep: number[] = [];
    if (kindAt >= 0 && this.opts.merge.ignoreDelete) for (let i = 0; i < n; i++) if (!isRetract(kind[i])) keep.push(i);
    const filtered = keep.length < n && kindAt >= 0 && this.opts.merge.ignoreDelete;
    if (filtered && keep.length === 0) return;
    // Sequence numbers are assigned to the rows that stay, in arrival order.
    const sequence = filtered ? new Float64Array(n) : this.arrivalSequence(n);
    let table = tableFromColumns(this.physical, [...children, sequenceColumn(sequence, n), kindColumn(kind, n)], n);
    if (filtered) table = this.renumber(takeRows(table, Uint32Array.from(keep)));
    this.append(table);
  }

  /** The input's columns in table order (by name), checked against the table's types. */
  private inputColumns(flat: arrow.Table): arrow.Data[] {
    const batch = flat.batches[0];
    return this.opts.schema.fields.map((f, c) => {
      const i = flat.schema.fields.findIndex((x) => x.name === f.name);
      if (i < 0)
        throw new SchemaMismatchError(`input has no column ${f.name}; it has ${flat.schema.names.join(', ')}`, f.name);
      const expected = this.physical.fields[c].type;
      if (!arrowTypesEqual(flat.schema.fields[i].type, expected)) {
        throw new SchemaMismatchError(
          `column ${f.name} is ${String(flat.schema.fields[i].type)} in the input but ${String(expected)} in the table`,
          f.name,
        );
      }
      return batch.data.children[i];
    });
  }

  /** Each input row's kind (+I without a `_VALUE_KIND` column), checked to be a row kind. */
  private inputKinds(flat: arrow.Table): { kind: Uint8Array; kindAt: number } {
    const n = flat.numRows;
    const kindAt = flat.schema.fields.findIndex((x) => x.name === KIND_COLUMN);
    const kind = new Uint8Array(n);
    if (kindAt >= 0) {
      const src = columnChunk(flat, kindAt).num!;
      for (let i = 0; i < n; i++) {
        const k = src[i];
        if (k < 0 || k > 3)
          throw new InvalidArgumentError(`row ${i} has ${KIND_COLUMN} ${k}; use 0 (+I), 1 (-U), 2 (+U) or 3 (-D)`);
        kind[i] = k;
      }
    }
    return { kind, kindAt };
  }

  /** Sorts and merges everything buffered into one record per key; the buffer is empty afterwards. */
  flush(): FlushResult {
    const inputCount = this.size;
    try {
      if (inputCount === 0) {
        const empty = emptyTable(this.physical);
        return { data: empty, changelog: this.opts.keepRawChangelog ? empty : undefined, rowCount: 0, inputCount: 0 };
      }
      const memory = this.takePending();
      const schema = this.opts.schema;
      // An append table's buffer is already its file: rows in arrival order, nothing to sort or
      // merge (the writer never spills one).
      if (this.opts.merge.appendOnly && this.spills.runCount === 0 && memory) {
        const table = singleBatch(
          concatTables(
            memory.map((m) => m.table),
            this.physical,
          ),
        );
        return { data: table, changelog: undefined, rowCount: table.numRows, inputCount };
      }
      let versions;
      if (this.spills.runCount === 0) {
        versions = versionsOfTables(schema, memory!, this.order);
      } else {
        const runs: SequencedTable[] = [];
        for (let r = 0; r < this.spills.runCount; r++) runs.push(sequenced(singleBatch(this.spills.read(r))));
        if (memory) runs.push(sequenced(this.sortedCopy(memory)));
        versions = versionsOfRuns(schema, runs, this.order);
      }
      const result = this.engine.merge(versions, { rawInput: true, dropRetracts: false });
      const data = materializeMerge(versions, result, { allInsert: false });
      const changelog = this.opts.keepRawChangelog
        ? versions.sources.length === 1
          ? takeRows(versions.sources[0], versions.row)
          : gatherRows(versions.sources, versions.source, versions.row)
        : undefined;
      return { data, changelog, rowCount: data.numRows, inputCount };
    } finally {
      this.reset();
    }
  }

  /**
   * Sorts and merges everything buffered, yielding the result in key order piece by piece. With
   * spilled runs the merge streams: each run is read back a batch at a time and merged by a k-way
   * merge, so memory holds a batch per run, not the buffer's whole content. The buffer is empty
   * afterwards.
   */
  async *flushPieces(): AsyncGenerator<FlushResult> {
    if (this.spills.runCount === 0) {
      yield* this.memoryPieces();
      return;
    }
    try {
      const memory = this.takePending();
      const runs: RunStream[] = [];
      for (let r = 0; r < this.spills.runCount; r++) runs.push({ chunks: this.spills.chunks(r), sequenceBase: 0 });
      if (memory) runs.push({ chunks: this.sortedChunks(memory), sequenceBase: 0 });
      for await (const pieces of alignRunStreams(runs, this.opts.schema.primaryKeys)) {
        const inputs = pieces.map((p) => sequenced(singleBatch(p.table)));
        const versions = versionsOfRuns(this.opts.schema, inputs, this.order);
        const result = this.engine.merge(versions, { rawInput: true, dropRetracts: false });
        const data = materializeMerge(versions, result, { allInsert: false });
        const changelog = this.opts.keepRawChangelog
          ? gatherRows(versions.sources, versions.source, versions.row)
          : undefined;
        yield { data, changelog, rowCount: data.numRows, inputCount: versions.size };
      }
    } finally {
      this.reset();
    }
  }

  /**
   * The in-memory buffer's merged records in pieces of FLUSH_PIECE_ROWS, sorted and merged once
   * and materialized piece by piece, so a flush holds the buffer and one piece, never a merged
   * copy of the buffer (nor an encoder fed all of it at once). An append buffer yields its
   * tables as they are.
   */
  private *memoryPieces(): Generator<FlushResult> {
    const inputCount = this.size;
    try {
      const memory = this.takePending();
      if (memory === null) {
        yield this.flush();
        return;
      }
      if (this.opts.merge.appendOnly) {
        for (const m of memory)
          yield { data: m.table, changelog: undefined, rowCount: m.table.numRows, inputCount: m.table.numRows };
        return;
      }
      const versions = versionsOfTables(this.opts.schema, memory, this.order);
      const result = this.engine.merge(versions, { rawInput: true, dropRetracts: false });
      const raw = this.opts.keepRawChangelog;
      const size = this.opts.pieceRows ?? FLUSH_PIECE_ROWS;
      const pieces = Math.max(1, Math.ceil(result.count / size), raw ? Math.ceil(versions.size / size) : 0);
      for (let p = 0; p < pieces; p++) {
        const from = Math.min(result.count, p * size),
          to = Math.min(result.count, from + size);
        const data = materializeMerge(versions, result, { allInsert: false }, { from, to });
        const vFrom = Math.min(versions.size, p * size),
          vTo = Math.min(versions.size, vFrom + size);
        const changelog = raw
          ? gatherRows(versions.sources, versions.source.subarray(vFrom, vTo), versions.row.subarray(vFrom, vTo))
          : undefined;
        yield { data, changelog, rowCount: data.numRows, inputCount: p === 0 ? inputCount : 0 };
      }
    } finally {
      this.reset();
    }
  }

  /**
   * The in-memory buffer sorted and merged, its output left ungathered: the buffered tables and,
   * per output row, where it comes from, so another thread can gather and encode the pieces (the
   * encoder pool; lib/format/encoder-pool.ts `openGathered`). Null — nothing taken, flush with
   * `flushPieces` — unless the buffer holds only in-memory rows of a primary-key table without a
   * raw changelog whose merge engine keeps whole rows (deduplicate, first-row). The buffer is empty
   * afterwards otherwise.
   */
  takeGatherPlan(): GatherPlan | null {
    if (this.spills.runCount > 0 || this.opts.merge.appendOnly || this.opts.keepRawChangelog || this.size === 0)
      return null;
    const inputCount = this.size;
    const engine = this.engine;
    // The engines that emit whole versions (TakeResult); the others compute column-wise results.
    if (engine.name !== 'deduplicate' && engine.name !== 'first-row') return null;
    try {
      const memory = this.takePending()!;
      const versions = versionsOfTables(this.opts.schema, memory, this.order);
      const result = engine.merge(versions, { rawInput: true, dropRetracts: false });
      if (result.mode !== 'take')
        throw new InvalidArgumentError(
          `the ${engine.name} merge engine returned column-wise results where whole rows were expected; this is a bug in varve`,
        );
      const count = result.count;
      const source = versions.sources.length === 1 ? null : new Uint16Array(count);
      const row = new Uint32Array(count);
      for (let k = 0; k < count; k++) {
        const v = result.version[k];
        row[k] = versions.row[v];
        if (source !== null) source[k] = versions.source[v];
      }
      return {
        sources: versions.sources,
        source,
        row,
        sequence: result.sequence.subarray(0, count),
        kind: result.kind.subarray(0, count),
        count,
        inputCount,
      };
    } finally {
      this.reset();
    }
  }

  /**
   * Spills the in-memory rows as a sorted run when spilling is on and the disk budget allows;
   * false when it cannot (the caller flushes instead). The writer calls it on the buffer holding
   * the most memory when all its buffers together reach `write-buffer-size`.
   */
  spillMemory(): boolean {
    if (this.pendingRows === 0 || !this.canSpill()) return false;
    this.spill();
    return true;
  }

  /** Drops everything buffered and deletes spill files; sequence numbering continues. */
  close(): void {
    this.reset();
  }

  private reset(): void {
    this.pending = [];
    this.small = [];
    this.smallRows = 0;
    this.pendingBytes = 0;
    this.pendingRows = 0;
    this.spilledRows = 0;
    this.addedBytes = 0;
    this.addedRows = 0;
    this.spills.clear();
  }

  /** Gives the rows of a freshly built table their arrival sequence numbers. */
  private renumber(table: arrow.Table): arrow.Table {
    const n = table.numRows;
    const children = table.batches[0].data.children.slice();
    children[children.length - 2] = sequenceColumn(this.arrivalSequence(n), n);
    return tableFromColumns(this.physical, children, n);
  }

  /** The arrival numbers the next `n` records get (`append` advances past them). */
  private arrivalSequence(n: number): Float64Array {
    const sequence = new Float64Array(n);
    for (let i = 0; i < n; i++) sequence[i] = this.next + i;
    return sequence;
  }

  /**
   * The buffered tables' rows in merge order as a run read a batch at a time, each batch gathered
   * when the merge asks for it: a flush with spilled runs holds the buffer and one batch of it,
   * never a sorted copy of the buffer.
   */
  private async *sortedChunks(memory: SequencedTable[]): AsyncGenerator<arrow.Table> {
    const v = versionsOfTables(this.opts.schema, memory, this.order);
    for (let at = 0; at < v.size; at += SPILL_BATCH_ROWS) {
      const end = Math.min(v.size, at + SPILL_BATCH_ROWS);
      yield gatherRows(v.sources, v.source.subarray(at, end), v.row.subarray(at, end));
    }
  }

  /** A copy of the buffered tables' rows in merge order. */
  private sortedCopy(memory: SequencedTable[]): arrow.Table {
    const v = versionsOfTables(this.opts.schema, memory, this.order);
    return gatherRows(v.sources, v.source, v.row);
  }

  private append(table: arrow.Table): void {
    this.next += table.numRows;
    const coalesceRows = this.opts.coalesceRows ?? COALESCE_ROWS;
    if (table.numRows < coalesceRows) {
      this.small.push(table);
      this.smallRows += table.numRows;
      if (this.smallRows >= coalesceRows) this.coalesce();
    } else {
      // Arrival order: the small tables added before it come first.
      this.coalesce();
      this.pending.push(table);
    }
    const bytes = approximateBytes(table);
    this.pendingRows += table.numRows;
    this.pendingBytes += bytes;
    this.addedRows += table.numRows;
    this.addedBytes += bytes;
    if (this.pendingBytes >= this.opts.writeBufferSize && this.canSpill()) this.spill();
  }

  /** The small tables held so far as one table, after the others. */
  private coalesce(): void {
    if (this.small.length === 0) return;
    this.pending.push(this.small.length === 1 ? this.small[0] : singleBatch(concatTables(this.small, this.physical)));
    this.small = [];
    this.smallRows = 0;
  }

  /**
   * Sorts the in-memory rows into merge order and writes them as one run, a batch at a time
   * gathered straight from the buffered tables: the spill holds the buffer and one batch, never
   * a sorted copy of the buffer.
   */
  private spill(): void {
    const memory = this.takePending();
    if (!memory) return;
    const v = versionsOfTables(this.opts.schema, memory, this.order);
    const run = this.spills.openRun();
    try {
      for (let at = 0; at < v.size; at += SPILL_BATCH_ROWS) {
        const end = Math.min(v.size, at + SPILL_BATCH_ROWS);
        run.append(gatherRows(v.sources, v.source.subarray(at, end), v.row.subarray(at, end)));
      }
    } catch (e) {
      run.abandon();
      throw e;
    }
    run.end();
    this.spilledRows += v.size;
  }

  /** The in-memory tables (arrival order) with their sequence numbers, emptying the in-memory part. */
  private takePending(): SequencedTable[] | null {
    this.coalesce();
    if (this.pending.length === 0) return null;
    if (this.pending.length > 0xffff) this.pending = [singleBatch(concatTables(this.pending, this.physical))];
    const tables = this.pending.map(sequenced);
    this.pending = [];
    this.pendingBytes = 0;
    this.pendingRows = 0;
    return tables;
  }
}

/** A physical-layout table with its stored `_SEQUENCE_NUMBER` as doubles (the buffer's arrival numbers). */
function sequenced(table: arrow.Table): SequencedTable {
  return { table, sequence: storedSequence(table) };
}

/**
 * Bytes a table's rows occupy: values, offsets and bitmaps of its rows only. Arrow's own
 * byteLength counts whole shared buffers, so a slice of a big batch would look as big as it.
 */
export function approximateBytes(table: arrow.Table): number {
  let bytes = 0;
  for (const batch of table.batches) {
    for (const d of batch.data.children) {
      const n = d.length;
      bytes += d.nullCount > 0 ? (n + 7) >> 3 : 0;
      if (d.valueOffsets) {
        const o = d.valueOffsets as Int32Array;
        bytes += 4 * (n + 1) + (o[n] - o[0]);
      } else if (d.values) {
        const v = d.values as ArrayBufferView & { length: number };
        bytes +=
          d.typeId === arrow.Type.Bool ? (n + 7) >> 3 : (v.byteLength / Math.max(1, v.length)) * n * (d.stride || 1);
      }
    }
  }
  return bytes;
}
