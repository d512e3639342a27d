/**
 * The write path of a table: rows are routed to their (partition, bucket) (write-routing.ts),
 * buffered, sorted and merged per key by the table's merge engine (an append table keeps them as
 * written), flushed to level-0 Parquet files (write-flush.ts), and committed as one APPEND or
 * OVERWRITE snapshot through the commit loop (write-commit.ts). The commit assigns the batch's
 * sequence numbers. This file holds the buffering between them: small tables held and large ones
 * deferred before they are split by bucket, and the writer kept within write-buffer-size.
 */
import { randomUUID } from 'node:crypto';
import type * as arrow from 'apache-arrow';
import { InvalidArgumentError } from '../errors.js';
import { arrowTypesEqual } from '../format/arrow-schema.js';
import { gatherRows, singleBatch, takeRows } from '../format/columns.js';
import type { Allocate } from '../format/column-layout.js';
import { approximateBytes, COALESCE_ROWS } from '../mergetree/write-buffer.js';
import { KIND_COLUMN, RowKind, type DataField, type Row } from '../schema/types.js';
import type { CommitBatch, FileChange } from '../snapshot/commit.js';
import { encoderPool, type EncoderPool } from '../format/encoder-pool.js';
import type { Table } from './table.js';
import { arrowValue, RowRouter } from './write-routing.js';
import {
  flushBucket,
  flushPoolFor,
  newBucketWriter,
  PARALLEL_MIN_WRITE_BUFFER,
  sharedCopyBudget,
  spillBeforeFlush,
  type BucketWriter,
  type ByteBudget,
} from './write-flush.js';
import { commitAppendBatch, commitOverwriteBatch, type CommitResult, type OverwriteMode } from './write-commit.js';

export type { CommitResult, OverwriteMode } from './write-commit.js';

/** Rows routed and buffered at a time by `write`: the most a buffer overshoots its limit by. */
const WRITE_SLICE_ROWS = 1024;

/**
 * Rows of small `writeArrow` tables held (routed, not yet buffered) before each bucket's rows of
 * all of them are gathered into its buffer at once: one copy per row instead of a per-bucket copy
 * of each table and a second one joining those copies into the buffer's 16k-row tables.
 */
const HOLD_ROWS = 65_536;

/** Small `writeArrow` tables routed but not yet in their buckets' buffers (see HOLD_ROWS). */
interface HeldInput {
  table: arrow.Table;
  /** Each row's bucket. */
  buckets: Int32Array;
}

/**
 * The last large unpartitioned `writeArrow` table, routed but not yet split into its buckets'
 * buffers (see `deferSplit`): each bucket's rows are copied into its buffer in that bucket's turn
 * of a pooled flush, or before anything else is buffered or flushed.
 */
interface DeferredInput {
  table: arrow.Table;
  /** Per bucket, its rows of `table` in arrival order; emptied once copied into the bucket's buffer. */
  rows: Uint32Array[];
  /** Approximate bytes of the rows not yet copied (counted against write-buffer-size like buffered rows). */
  bytes: number;
  bytesPerRow: number;
}

export interface WriterOptions {
  /** Who commits (recorded in each snapshot). A commit identifier given to `commit()` is unique in the table whatever the user. @default `writer-<random uuid>` */
  commitUser?: string;
  /**
   * Route every partition by the table's `bucket` option, even one whose files were written for
   * another count: for an overwrite, which replaces whole partitions (Paimon's INSERT OVERWRITE
   * rescale). By default an existing partition keeps the bucket count its files have.
   */
  tableBucketCount?: boolean;
}

export class TableWriter {
  readonly commitUser: string;
  private readonly buckets = new Map<string, BucketWriter>();
  private readonly pendingData: FileChange[] = [];
  private readonly pendingChangelog: FileChange[] = [];
  private rows = 0;
  private readonly appendOnly: boolean;
  private readonly router: RowRouter;
  /** The writes not finished yet, in call order (see inOrder). */
  private pendingWrites: Promise<void> = Promise.resolve();
  /** Small unpartitioned `writeArrow` tables held before buffering (see HOLD_ROWS), with their rows and bytes. */
  private held: HeldInput[] = [];
  private heldRows = 0;
  private heldBytes = 0;
  /** A large table whose split into buckets waits for the flush (see deferSplit); only while nothing is held. */
  private deferred: DeferredInput | null = null;

  constructor(
    readonly table: Table,
    opts: WriterOptions = {},
  ) {
    this.commitUser = opts.commitUser ?? `writer-${randomUUID()}`;
    this.appendOnly = table.schema.primaryKeys.length === 0;
    this.router = new RowRouter(table, opts);
  }

  /** An append table takes inserts only: a retraction has no key to retract. */
  private checkInsertOnly(kinds: ArrayLike<number> | undefined): void {
    if (!this.appendOnly || !kinds) return;
    for (let i = 0; i < kinds.length; i++) {
      if (kinds[i] !== RowKind.INSERT) {
        throw new InvalidArgumentError(
          `row ${i} is a ${['+I', '-U', '+U', '-D'][kinds[i]] ?? kinds[i]} record, but ${this.table.name} has no primary key (an append table) and takes inserts only; ` +
            'remove rows with `varve delete --where` (deleteWhere), or give the table a primary key',
        );
      }
    }
  }

  /**
   * Buffers validated rows; `kinds` gives each row's kind (default +I). Resolves once the rows are
   * buffered (with `write-buffer-spillable = false`, a full buffer is first flushed to an extra
   * level-0 file).
   */
  write(rows: Row[], kinds?: ArrayLike<number>): Promise<void> {
    return this.inOrder(() => this.writeRows(rows, kinds));
  }

  /**
   * Runs writes one after another in call order, and lets commit wait for them: a write may wait
   * (for the bucket count of a partition it has not seen) before it buffers its rows, and rows
   * must reach the buffers in the order they were written, also when a caller does not await.
   */
  private inOrder(task: () => Promise<void>): Promise<void> {
    const run = this.pendingWrites.then(task);
    this.pendingWrites = run.catch(() => undefined);
    return run;
  }

  private async writeRows(rows: Row[], kinds?: ArrayLike<number>): Promise<void> {
    if (kinds && kinds.length !== rows.length) {
      throw new InvalidArgumentError(`got ${rows.length} rows but ${kinds.length} row kinds`);
    }
    this.checkInsertOnly(kinds);
    // Rows reach each bucket in the order they were written.
    await this.releaseHeld();
    // Slice by slice, so the buffers never overshoot write-buffer-size by more than a slice: a
    // full buffer spills or flushes where Paimon's record-by-record check would.
    for (let from = 0; from < rows.length; from += WRITE_SLICE_ROWS) {
      const to = Math.min(rows.length, from + WRITE_SLICE_ROWS);
      const groups = new Map<string, { rows: Row[]; kinds: number[] }>();
      const partitions: string[] = [];
      for (let i = from; i < to; i++) partitions.push(this.router.partitionOf((f) => rows[i][f.name] ?? null));
      await this.router.resolveBuckets(partitions);
      for (let i = from; i < to; i++) {
        const row = rows[i];
        const id = this.router.route(partitions[i - from], (f) => row[f.name] ?? null);
        let g = groups.get(id);
        if (!g) groups.set(id, (g = { rows: [], kinds: [] }));
        g.rows.push(row);
        g.kinds.push(kinds ? kinds[i] : RowKind.INSERT);
      }
      for (const [id, g] of groups) this.bucketWriter(id).buffer.add(g.rows, g.kinds);
      await this.boundMemory();
    }
    this.rows += rows.length;
  }

  /**
   * Buffers an Arrow table with the table's columns (by name) and an optional `_VALUE_KIND`
   * column: the bulk path, with no row objects. The writer may keep referencing the table's
   * buffers until the next commit (small and large tables are held before they are split by
   * bucket): do not change them afterwards.
   */
  writeArrow(data: arrow.Table): Promise<void> {
    return this.inOrder(() => this.writeTable(data));
  }

  private async writeTable(data: arrow.Table): Promise<void> {
    const n = data.numRows;
    if (n === 0) return;
    const flat = singleBatch(data);
    const kindVector = this.appendOnly ? flat.getChild(KIND_COLUMN) : null;
    if (kindVector) this.checkInsertOnly(kindVector.toArray() as ArrayLike<number>);
    const vectorOf = (f: DataField): arrow.Vector => {
      const v = flat.getChild(f.name);
      if (!v) throw new InvalidArgumentError(`input has no column "${f.name}"; it has ${data.schema.names.join(', ')}`);
      return v;
    };
    const bucketVectors = this.router.bucketFields.map(vectorOf);
    const partitionVectors = this.router.partitionFields.map(vectorOf);
    const groups = new Map<string, number[] | Uint32Array>();
    if (partitionVectors.length === 0) {
      // Unpartitioned (the common bulk case): bucket numbers into a typed array, then one
      // counting pass builds each bucket's row indices — no per-row strings or maps.
      await this.router.resolveBuckets(['']);
      const numBuckets = this.router.bucketCount('');
      const buckets = this.router.bucketsOfColumns(flat, bucketVectors, numBuckets);
      if (n < COALESCE_ROWS && numBuckets > 1) {
        await this.hold(flat, buckets);
        this.rows += n;
        return;
      }
      await this.releaseHeld();
      const counts = new Uint32Array(numBuckets);
      for (let i = 0; i < n; i++) counts[buckets[i]]++;
      const indices = Array.from(counts, (c) => new Uint32Array(c));
      const fill = new Uint32Array(numBuckets);
      for (let i = 0; i < n; i++) indices[buckets[i]][fill[buckets[i]]++] = i;
      if (numBuckets > 1 && this.pooledFlushPossible()) {
        this.deferSplit(flat, indices);
        this.rows += n;
        await this.boundMemory();
        return;
      }
      indices.forEach((idx, b) => idx.length && groups.set(`\u0000${b}`, idx));
    } else {
      await this.releaseHeld();
      const vectors = new Map(this.router.partitionFields.map((f, k) => [f.name, partitionVectors[k]]));
      this.router.bucketFields.forEach((f, k) => vectors.set(f.name, bucketVectors[k]));
      const valueAt = (i: number) => (f: DataField) => arrowValue(f, vectors.get(f.name)!.get(i));
      const partitions: string[] = new Array(n);
      for (let i = 0; i < n; i++) partitions[i] = this.router.partitionOf(valueAt(i));
      await this.router.resolveBuckets(partitions);
      for (let i = 0; i < n; i++) {
        const id = this.router.route(partitions[i], valueAt(i));
        let g = groups.get(id) as number[] | undefined;
        if (!g) groups.set(id, (g = []));
        g.push(i);
      }
    }
    for (const [id, idx] of groups) {
      const bw = this.bucketWriter(id);
      bw.buffer.addTable(
        idx.length === n ? flat : takeRows(flat, idx instanceof Uint32Array ? idx : Uint32Array.from(idx)),
      );
      await this.boundMemory();
    }
    this.rows += n;
  }

  /**
   * Holds a small routed table: checked now (a bad table fails its own call), buffered when the
   * held rows reach HOLD_ROWS or a quarter of `write-buffer-size`, or before anything else is
   * buffered or flushed.
   */
  private async hold(flat: arrow.Table, buckets: Int32Array): Promise<void> {
    // A deferred table came first: its rows reach the buffers before these.
    this.releaseDeferred();
    const first = this.held[0]?.table.schema;
    if (first && !sameColumns(first, flat.schema)) await this.releaseHeld();
    this.bucketWriter(`\u0000${buckets[0]}`).buffer.checkTable(flat);
    this.held.push({ table: flat, buckets });
    this.heldRows += flat.numRows;
    this.heldBytes += approximateBytes(flat);
    if (this.heldRows >= HOLD_ROWS || this.heldBytes >= this.table.options.writeBufferSize / 4)
      await this.releaseHeld();
  }

  /**
   * True when this writer's flushes may run on the encoder pool (a write buffer large enough to
   * afford its workers, and workers available here): only then is splitting a table by bucket
   * worth deferring to the flush, where it overlaps the workers' encoding.
   */
  private pooledFlushPossible(): boolean {
    return this.table.options.writeBufferSize >= PARALLEL_MIN_WRITE_BUFFER && encoderPool().available;
  }

  /**
   * Keeps a routed table (`rows`: each bucket's rows of it, in arrival order) unsplit until the
   * flush: a pooled flush then copies each bucket's rows into its buffer in that bucket's turn
   * (`flushBucket`), so the workers start encoding the first bucket while this thread splits and
   * sorts the next, instead of waiting for every bucket to be split first. Like a held table it is
   * checked now, counted against write-buffer-size, and referenced, not copied (the caller must not
   * change its buffers afterwards). Any later write, or a flush off the pool, splits it first.
   */
  private deferSplit(flat: arrow.Table, rows: Uint32Array[]): void {
    const first = rows.findIndex((r) => r.length > 0);
    this.bucketWriter(`\u0000${first}`).buffer.checkTable(flat);
    // Every bucket it writes to has its writer now, so commit sees it as touched.
    rows.forEach((r, b) => r.length > 0 && this.bucketWriter(`\u0000${b}`));
    const bytes = approximateBytes(flat);
    this.deferred = { table: flat, rows, bytes, bytesPerRow: bytes / flat.numRows };
  }

  /** Rows of the deferred table waiting for a bucket (0 when none). */
  private deferredRows(bw: BucketWriter): number {
    return this.deferred !== null && bw.partition === '' ? (this.deferred.rows[bw.bucket]?.length ?? 0) : 0;
  }

  /** True when a bucket has rows to flush: buffered, or waiting in the deferred table. */
  private hasRows(bw: BucketWriter): boolean {
    return bw.buffer.size > 0 || this.deferredRows(bw) > 0;
  }

  /**
   * Copies the deferred table's rows of one bucket into its buffer (arrival order kept: nothing
   * else was buffered since), into memory from `alloc` (a pooled flush: shared memory, which the
   * encoder workers then read as it is instead of a second copy of the bucket).
   */
  private releaseDeferredBucket(bw: BucketWriter, alloc?: Allocate): void {
    const d = this.deferred;
    const count = this.deferredRows(bw);
    if (d === null || count === 0) return;
    const rows = d.rows[bw.bucket];
    d.rows[bw.bucket] = new Uint32Array(0);
    d.bytes = Math.max(0, d.bytes - count * d.bytesPerRow);
    if (d.rows.every((r) => r.length === 0)) this.deferred = null;
    bw.buffer.addTable(count === d.table.numRows ? d.table : takeRows(d.table, rows, alloc));
  }

  /** Copies every bucket's rows of the deferred table into its buffer. */
  private releaseDeferred(): void {
    const d = this.deferred;
    if (d === null) return;
    d.rows.forEach((r, b) => r.length > 0 && this.releaseDeferredBucket(this.bucketWriter(`\u0000${b}`)));
    this.deferred = null;
  }

  /**
   * Buffers the held tables: each bucket's rows of all of them, in arrival order, gathered into one
   * table at once, as its buffer would have received them table by table; then (unless
   * `keepDeferred`, for a flush that splits it bucket by bucket) the deferred table.
   */
  private async releaseHeld(opts: { keepDeferred?: boolean } = {}): Promise<void> {
    if (!opts.keepDeferred) this.releaseDeferred();
    const held = this.held;
    if (held.length === 0) return;
    this.held = [];
    this.heldRows = 0;
    this.heldBytes = 0;
    // Held tables are unpartitioned (see writeArrow): the table's bucket count, resolved before they were routed.
    const numBuckets = this.router.bucketCount('');
    const counts = new Uint32Array(numBuckets);
    for (const h of held) for (let i = 0; i < h.buckets.length; i++) counts[h.buckets[i]]++;
    const sources = Array.from(counts, (c) => new Uint16Array(c));
    const rows = Array.from(counts, (c) => new Uint32Array(c));
    const fill = new Uint32Array(numBuckets);
    held.forEach((h, t) => {
      const b = h.buckets;
      for (let i = 0; i < b.length; i++) {
        const at = fill[b[i]]++;
        sources[b[i]][at] = t;
        rows[b[i]][at] = i;
      }
    });
    const tables = held.map((h) => h.table);
    for (let b = 0; b < numBuckets; b++) {
      if (counts[b] === 0) continue;
      this.bucketWriter(`\u0000${b}`).buffer.addTable(gatherRows(tables, sources[b], rows[b]));
      await this.boundMemory();
    }
  }

  /**
   * Keeps the writer within `write-buffer-size`. The limit is for the writer as a whole, like
   * Paimon's memory pool shared by a task's writers: when all buffers together reach it, the one
   * holding the most memory gives it up — spilled as a sorted run when spilling is on (and the
   * spill disk budget allows), otherwise flushed now as an extra level-0 file whose sequence
   * numbers the next flush of the same buffer continues.
   */
  private async boundMemory(): Promise<void> {
    const limit = this.table.options.writeBufferSize;
    for (;;) {
      let total = this.heldBytes + (this.deferred?.bytes ?? 0);
      let largest: BucketWriter | undefined;
      for (const bw of this.buckets.values()) {
        total += bw.buffer.memoryBytes;
        if (!largest || bw.buffer.memoryBytes > largest.buffer.memoryBytes) largest = bw;
      }
      if (total < limit) return;
      if (this.heldBytes > 0 || this.deferred !== null) {
        await this.releaseHeld();
        continue;
      }
      if (!largest || largest.buffer.memoryBytes === 0) return;
      if (!largest.buffer.spillMemory()) await this.flushBucket(largest);
    }
  }

  /** Flushes every buffer to level-0 files and returns the batch to commit (nothing is committed). */
  async prepareCommit(): Promise<CommitBatch> {
    await this.pendingWrites;
    await this.releaseHeld({ keepDeferred: true });
    const filled = [...this.buckets.values()].filter((bw) => this.hasRows(bw));
    const bytes =
      filled.reduce((s, bw) => s + bw.buffer.size * bw.buffer.bytesPerRecord, 0) + (this.deferred?.bytes ?? 0);
    const spilled = filled.some((bw) => bw.buffer.spilledRuns > 0);
    const pool = flushPoolFor(this.table, bytes);
    // The deferred table is split bucket by bucket only by the pooled flush of in-memory buffers.
    if (spilled || !pool) this.releaseDeferred();
    if (spilled) spillBeforeFlush(filled, this.table.options.writeBufferSize);
    if (pool) {
      // Side by side: each bucket's file goes to a worker's encoder while this thread sorts and
      // gathers the next pieces. Every flush is awaited before a failure is thrown, so no file is
      // still being written when the caller sees the error (and nothing is committed).
      const shared = sharedCopyBudget(this.table);
      const results = await Promise.allSettled(filled.map((bw) => this.flushBucket(bw, pool, shared)));
      const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) throw failed.reason;
    } else {
      // One bucket at a time: every flush streams through the one wasm encoder, whose memory
      // never shrinks, so flushes side by side would each leave a row group's worth behind.
      for (const bw of this.buckets.values()) await this.flushBucket(bw);
    }
    // The next batch numbers its rows from 0 again: the commit gives every batch its own base.
    for (const bw of this.buckets.values()) bw.buffer.restartSequence(0);
    const batch: CommitBatch = {
      rowCount: this.sequenceSpan(),
      newFiles: this.pendingData.splice(0),
      changelogFiles: this.pendingChangelog.splice(0),
    };
    return batch;
  }

  /**
   * Flushes and commits everything written since the last commit as one APPEND snapshot.
   * `commitIdentifier` should be derived from the input (a message id, an object key + etag) so
   * that a retried call that had already landed commits nothing — in any process, under any commit
   * user, however many commits came in between (lib/snapshot/commit-identifier.ts).
   */
  async commit(commitIdentifier?: string, opts: { overwrite?: OverwriteMode } = {}): Promise<CommitResult> {
    // Every write called before the commit is in it, awaited or not.
    await this.pendingWrites;
    await this.releaseHeld({ keepDeferred: true });
    if (opts.overwrite !== undefined) return this.commitOverwrite(commitIdentifier, opts.overwrite);
    const rows = this.rows;
    const batch = await this.prepareCommit();
    this.rows = 0;
    return commitAppendBatch(this.table, batch, { commitUser: this.commitUser, commitIdentifier, rows });
  }

  /**
   * Commits everything written since the last commit as one OVERWRITE snapshot (an `overwrite`
   * action of the commit loop, hooks included) that replaces the whole table (`all`), the
   * partitions the rows went to (`dynamic`), or the partitions matching a spec; with no rows
   * written, `all` empties the table (truncate).
   */
  private async commitOverwrite(commitIdentifier: string | undefined, mode: OverwriteMode): Promise<CommitResult> {
    const rows = this.rows;
    const touched = new Set([...this.buckets.values()].filter((bw) => this.hasRows(bw)).map((bw) => bw.partition));
    for (const f of this.pendingData) touched.add(f.partition);
    const batch = await this.prepareCommit();
    this.rows = 0;
    return commitOverwriteBatch(this.table, batch, {
      commitUser: this.commitUser,
      commitIdentifier,
      rows,
      mode,
      touched,
    });
  }

  /** Drops buffered rows and temporary spill files. */
  async close(): Promise<void> {
    await this.pendingWrites;
    this.held = [];
    this.heldRows = 0;
    this.heldBytes = 0;
    this.deferred = null;
    for (const bw of this.buckets.values()) await bw.buffer.close();
    this.buckets.clear();
  }

  private bucketWriter(id: string): BucketWriter {
    let bw = this.buckets.get(id);
    if (!bw) {
      bw = newBucketWriter(this.table, id, this.appendOnly);
      this.buckets.set(id, bw);
    }
    return bw;
  }

  /** Largest relative sequence number used by this batch, plus one. */
  private sequenceSpan(): number {
    let span = 0;
    for (const f of this.pendingData) span = Math.max(span, f.file.maxSequenceNumber + 1);
    for (const f of this.pendingChangelog) span = Math.max(span, f.file.maxSequenceNumber + 1);
    return span;
  }

  /** Flushes one bucket's buffer (and its rows of the deferred table) to level-0 files of this batch. */
  private flushBucket(bw: BucketWriter, pool?: EncoderPool, shared?: ByteBudget): Promise<void> {
    const to = {
      totalBuckets: this.router.bucketCount(bw.partition),
      data: this.pendingData,
      changelog: this.pendingChangelog,
      releaseDeferred: (alloc?: Allocate) => this.releaseDeferredBucket(bw, alloc),
    };
    return flushBucket(this.table, bw, to, pool, shared);
  }
}

/** True when two tables' columns have the same names and types in the same order (their rows can be gathered together). */
function sameColumns(a: arrow.Schema, b: arrow.Schema): boolean {
  return (
    a.fields.length === b.fields.length &&
    a.fields.every((f, i) => f.name === b.fields[i].name && arrowTypesEqual(f.type, b.fields[i].type))
  );
}
