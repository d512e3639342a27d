/**
 * The write path of a table: rows are routed to their (partition, bucket), buffered, sorted and
 * merged per key by the table's merge engine (an append table keeps them as written), flushed to
 * level-0 Parquet files, and committed as one APPEND snapshot. The commit assigns the batch's
 * sequence numbers.
 */
import { randomUUID } from 'node:crypto';
import type * as arrow from 'apache-arrow';
import { InvalidArgumentError } from '../errors.js';
import { arrowTypesEqual } from '../format/arrow-schema.js';
import { gatherRows, singleBatch, takeRows } from '../format/columns.js';
import { sharedMemory, type Allocate } from '../format/column-layout.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import { approximateBytes, COALESCE_ROWS, WriteBuffer } from '../mergetree/write-buffer.js';
import { RollingFileSink } from '../mergetree/rolling-writer.js';
import { mergeConfigFromOptions } from '../mergetree/merge-config.js';
import { bucketOf, bucketOfInt32, bucketOfInt64Words } from '../schema/bucket.js';
import { chunkOfData } from '../mergetree/column-access.js';
import { partitionPath } from '../schema/partition.js';
import { KIND_COLUMN, RowKind, type DataField, type DataType, type Row, type Value } from '../schema/types.js';
import { requestAction, type CommitBatch, type FileChange } from '../snapshot/commit.js';
import { findPartitionTotalBuckets, readDataManifests } from '../manifest/scan.js';
import { commitToTable } from './table-commit.js';
import { sharedCommitterOf } from './shared-committer.js';
import { openLevel0File, writeLevel0Gathered } from './level0-file.js';
import { encoderPool, type EncoderPool } from '../format/encoder-pool.js';
import type { Table } from './table.js';

/**
 * The smallest `write-buffer-size` whose flushes encode on the encoder pool: each worker costs an
 * isolate and a wasm memory (tens of MB), which a writer told to stay small must not pay.
 */
const PARALLEL_MIN_WRITE_BUFFER = 64 * 1024 * 1024;

/**
 * A pooled flush shares each bucket's buffered rows with the workers in shared memory (they gather
 * the merged rows from it): a bucket split off a deferred table is split into shared memory, other
 * buffered rows are copied there once. The shared copies alive at a time are at most this part of
 * write-buffer-size, so a flush holds the buffer plus an eighth. A bucket holding more flushes
 * the older way: its merged rows gathered here, a row group at a time.
 */
const SHARED_COPY_SHARE = 8;

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

/** What an OVERWRITE replaces: the whole table, the partitions written to, or those matching a spec. */
export type OverwriteMode = 'all' | 'dynamic' | { match: Record<string, string> };

export interface CommitResult {
  /** The snapshot that holds the batch (also when an earlier attempt had committed it), if any. */
  snapshot?: Snapshot;
  /** True when the same commit identifier had already landed (any process, any commit user): nothing was written twice. */
  alreadyCommitted: boolean;
  /** With alreadyCommitted: the id of the snapshot it had landed in, when that snapshot has expired since (`snapshot` is then unset). */
  expiredSnapshotId?: number;
  /** Data files written by this commit. */
  files: number;
  /** Rows written, before merging. */
  rows: number;
  /** Set when the table's after-commit hook failed (inline compaction, the Iceberg export); the commit itself stands. */
  compactionError?: Error;
}

interface BucketWriter {
  partition: string;
  bucket: number;
  buffer: WriteBuffer;
}

export class TableWriter {
  readonly commitUser: string;
  private readonly buckets = new Map<string, BucketWriter>();
  private readonly pendingData: FileChange[] = [];
  private readonly pendingChangelog: FileChange[] = [];
  private rows = 0;
  private readonly partitionFields: DataField[];
  private readonly bucketFields: DataField[];
  private readonly bucketTypes: DataType[];
  // Fixed per table: computed once, not per routed row.
  private readonly partitionNames: string[];
  private readonly partitionTypes: DataType[];
  private readonly partitionDefaultName: string;
  private readonly numBuckets: number;
  private readonly appendOnly: boolean;
  /** Bucket count per partition written to: its live files' count, or the table's for a new partition. */
  private readonly partitionBuckets = new Map<string, number>();
  private readonly tableBucketCount: boolean;
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
    const s = table.schema;
    const byName = (n: string) => s.fields.find((f) => f.name === n)!;
    this.partitionFields = s.partitionKeys.map(byName);
    const bucketKey = table.options.bucketKey;
    this.appendOnly = s.primaryKeys.length === 0;
    this.bucketFields = (bucketKey.length ? bucketKey : s.primaryKeys.filter((k) => !s.partitionKeys.includes(k))).map(byName);
    if (this.bucketFields.length === 0) this.bucketFields = s.primaryKeys.map(byName);
    this.bucketTypes = this.bucketFields.map((f) => f.type);
    this.partitionNames = this.partitionFields.map((f) => f.name);
    this.partitionTypes = this.partitionFields.map((f) => f.type);
    this.partitionDefaultName = table.options.partitionDefaultName;
    // A bucket-unaware append table (bucket = -1) keeps every row of a partition in bucket 0 (as
    // Paimon does); its files record one bucket, and no hash is computed (no bucket key).
    this.numBuckets = table.options.bucket === -1 ? 1 : table.options.bucket;
    this.tableBucketCount = opts.tableBucketCount === true || table.options.bucket === -1;
  }

  /**
   * Learns the bucket count of each partition not seen yet. `bucket` applies to new partitions;
   * an existing partition keeps the count its files were written for until `rescale` rewrites it
   * (as Paimon records totalBuckets per file), so a partition never holds files of two counts.
   */
  private async resolveBuckets(partitions: Iterable<string>): Promise<void> {
    const unknown = new Set<string>();
    for (const p of partitions) if (!this.partitionBuckets.has(p)) unknown.add(p);
    if (unknown.size === 0) return;
    let found = new Map<string, number>();
    if (!this.tableBucketCount) {
      const t = this.table;
      // The newest snapshot this table object committed or read: a rescale since then makes the
      // commit fail on its bucket-count check (a conflict naming the partition), never mix counts.
      const latest = t.commitSnapshots.newestKnown() ?? (await t.snapshots.latest());
      if (latest) found = await findPartitionTotalBuckets(t.store, t.path, await readDataManifests(t.store, t.path, latest, t.manifestCache), unknown, undefined, t.manifestCache);
    }
    for (const p of unknown) this.partitionBuckets.set(p, found.get(p) ?? this.numBuckets);
  }

  /** The partition path of a row whose column values `valueOf` gives. */
  private partitionOf(valueOf: (f: DataField) => Value): string {
    return this.partitionFields.length ? partitionPath(this.partitionNames, this.partitionFields.map(valueOf), this.partitionTypes, this.partitionDefaultName) : '';
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
      for (let i = from; i < to; i++) partitions.push(this.partitionOf((f) => rows[i][f.name] ?? null));
      await this.resolveBuckets(partitions);
      for (let i = from; i < to; i++) {
        const row = rows[i];
        const id = this.route(partitions[i - from], (f) => row[f.name] ?? null);
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
    const bucketVectors = this.bucketFields.map(vectorOf);
    const partitionVectors = this.partitionFields.map(vectorOf);
    const groups = new Map<string, number[] | Uint32Array>();
    if (partitionVectors.length === 0) {
      // Unpartitioned (the common bulk case): bucket numbers into a typed array, then one
      // counting pass builds each bucket's row indices — no per-row strings or maps.
      await this.resolveBuckets(['']);
      const numBuckets = this.partitionBuckets.get('')!;
      const buckets = this.bucketsOfColumns(flat, bucketVectors, numBuckets);
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
      const vectors = new Map(this.partitionFields.map((f, k) => [f.name, partitionVectors[k]]));
      this.bucketFields.forEach((f, k) => vectors.set(f.name, bucketVectors[k]));
      const valueAt = (i: number) => (f: DataField) => arrowValue(f, vectors.get(f.name)!.get(i));
      const partitions: string[] = new Array(n);
      for (let i = 0; i < n; i++) partitions[i] = this.partitionOf(valueAt(i));
      await this.resolveBuckets(partitions);
      for (let i = 0; i < n; i++) {
        const id = this.route(partitions[i], valueAt(i));
        let g = groups.get(id) as number[] | undefined;
        if (!g) groups.set(id, (g = []));
        g.push(i);
      }
    }
    for (const [id, idx] of groups) {
      const bw = this.bucketWriter(id);
      bw.buffer.addTable(idx.length === n ? flat : takeRows(flat, idx instanceof Uint32Array ? idx : Uint32Array.from(idx)));
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
    if (this.heldRows >= HOLD_ROWS || this.heldBytes >= this.table.options.writeBufferSize / 4) await this.releaseHeld();
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
    const numBuckets = this.partitionBuckets.get('')!;
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
   * The bucket of every row of `flat`: a one-column integer bucket key without nulls is hashed
   * straight from its values (the bulk case), any other through a value per row.
   */
  private bucketsOfColumns(flat: arrow.Table, vectors: arrow.Vector[], numBuckets: number): Int32Array {
    const n = flat.numRows;
    const buckets = new Int32Array(n);
    const root = this.bucketTypes.length === 1 ? this.bucketTypes[0].root : undefined;
    const data = vectors.length === 1 && vectors[0].data.length === 1 ? vectors[0].data[0] : undefined;
    if (data && data.nullCount === 0 && (root === 'BIGINT' || root === 'INT' || root === 'SMALLINT' || root === 'TINYINT')) {
      const chunk = chunkOfData(data, this.bucketFields[0].name);
      if (chunk.kind === 'int64' && root === 'BIGINT') {
        const w = chunk.words!;
        for (let i = 0; i < n; i++) buckets[i] = bucketOfInt64Words(w[2 * i], w[2 * i + 1], numBuckets);
        return buckets;
      }
      if (chunk.kind === 'int' && root !== 'BIGINT') {
        const v = chunk.num!;
        for (let i = 0; i < n; i++) buckets[i] = bucketOfInt32(v[i], numBuckets);
        return buckets;
      }
    }
    const values: Value[] = new Array(vectors.length);
    for (let i = 0; i < n; i++) {
      for (let k = 0; k < vectors.length; k++) values[k] = arrowValue(this.bucketFields[k], vectors[k].get(i));
      buckets[i] = bucketOf(this.bucketTypes, values, numBuckets);
    }
    return buckets;
  }

  /** `partition\0bucket` of a row of `partition` (bucket count resolved) whose column values `valueOf` gives. */
  private route(partition: string, valueOf: (f: DataField) => Value): string {
    const bucket = bucketOf(this.bucketTypes, this.bucketFields.map(valueOf), this.partitionBuckets.get(partition)!);
    return `${partition}\u0000${bucket}`;
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
    const bytes = filled.reduce((s, bw) => s + bw.buffer.size * bw.buffer.bytesPerRecord, 0) + (this.deferred?.bytes ?? 0);
    // Enough rows (the pool's minFlushBytes, see PARALLEL_FLUSH_BYTES) and a write buffer large
    // enough to afford the workers (PARALLEL_MIN_WRITE_BUFFER); one bucket's file too, its row
    // groups spread over the workers.
    const roomy = this.table.options.writeBufferSize >= PARALLEL_MIN_WRITE_BUFFER;
    const spilled = filled.some((bw) => bw.buffer.spilledRuns > 0);
    const pool = roomy && bytes >= encoderPool().minFlushBytes ? encoderPool() : undefined;
    // The deferred table is split bucket by bucket only by the pooled flush of in-memory buffers.
    if (spilled || !pool?.available) this.releaseDeferred();
    if (spilled) this.spillBeforeFlush(filled);
    if (pool?.available) {
      // Side by side: each bucket's file goes to a worker's encoder while this thread sorts and
      // gathers the next pieces. Every flush is awaited before a failure is thrown, so no file is
      // still being written when the caller sees the error (and nothing is committed).
      const shared = new ByteBudget(this.table.options.writeBufferSize / SHARED_COPY_SHARE);
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
   * Rows that outgrew write-buffer-size have spilled: before the first flush the largest in-memory
   * parts go to disk too, one more run each, until what stays in memory is at most an eighth of
   * the buffer, so the flushes (encoder, a batch per run, the file's bytes) run beside little
   * buffered rather than on top of a full buffer; small parts (a writer of many buckets) stay in
   * memory. Measured on the 2M-row JSONL write (32 MB buffer, 4 buckets): peak RSS about 30 MB lower.
   */
  private spillBeforeFlush(filled: BucketWriter[]): void {
    let inMemory = filled.reduce((sum, bw) => sum + bw.buffer.memoryBytes, 0);
    const keep = this.table.options.writeBufferSize / 8;
    for (const bw of [...filled].sort((a, b) => b.buffer.memoryBytes - a.buffer.memoryBytes)) {
      if (inMemory <= keep) return;
      const bytes = bw.buffer.memoryBytes;
      if (bw.buffer.spillMemory()) inMemory -= bytes;
    }
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
    const files = batch.newFiles.length;
    if (files === 0 && batch.changelogFiles.length === 0) return { alreadyCommitted: false, files: 0, rows };
    // Writers of this process on this table share one committer: their batches waiting at the
    // same time land in one snapshot (one `append` action of the commit loop, hooks included)
    // instead of racing each other for snapshot ids.
    const result = await sharedCommitterOf(this.table).submit(this.table, {
      batch,
      // A given identifier deduplicates table-wide through its index, however old the commit.
      identifier: commitIdentifier,
      commitUser: this.commitUser,
      schemaId: this.table.schema.id,
    });
    const expired = result.expiredSnapshotId !== undefined ? { expiredSnapshotId: result.expiredSnapshotId } : {};
    const hook = result.hookError !== undefined ? { compactionError: result.hookError } : {};
    return { snapshot: result.snapshot, alreadyCommitted: result.alreadyCommitted, files, rows, ...expired, ...hook };
  }

  /**
   * Commits everything written since the last commit as one OVERWRITE snapshot (an `overwrite`
   * action of the commit loop, hooks included) that replaces the whole table (`all`), the
   * partitions the rows went to (`dynamic`), or the partitions matching a spec; with no rows
   * written, `all` empties the table (truncate).
   */
  private async commitOverwrite(commitIdentifier: string | undefined, mode: OverwriteMode): Promise<CommitResult> {
    const fresh = commitIdentifier === undefined;
    const rows = this.rows;
    const touched = new Set([...this.buckets.values()].filter((bw) => this.hasRows(bw)).map((bw) => bw.partition));
    for (const f of this.pendingData) touched.add(f.partition);
    const batch = await this.prepareCommit();
    this.rows = 0;
    const overwrite = mode === 'all' ? {} : mode === 'dynamic' ? { partitions: [...touched] } : { match: mode.match };
    if (mode === 'dynamic' && touched.size === 0) return { alreadyCommitted: false, files: 0, rows };
    const action = requestAction(
      {
        commitUser: this.commitUser,
        commitIdentifier: commitIdentifier ?? randomUUID(),
        kind: 'OVERWRITE',
        schemaId: this.table.schema.id,
        batches: [batch],
        overwrite,
        allowEmpty: true,
      },
      'overwrite',
    );
    const result = await commitToTable(this.table, action, fresh ? { dedupLookback: 0 } : {});
    const files = batch.newFiles.length;
    const hook = result.hookError !== undefined ? { compactionError: result.hookError } : {};
    if (result.expiredSnapshotId !== undefined) return { alreadyCommitted: true, expiredSnapshotId: result.expiredSnapshotId, files, rows };
    return { snapshot: result.snapshot, alreadyCommitted: result.alreadyCommitted, files, rows, ...hook };
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
      const [partition, bucket] = id.split('\u0000');
      const t = this.table;
      bw = {
        partition,
        bucket: Number(bucket),
        buffer: new WriteBuffer({
          schema: t.schema,
          merge: mergeConfigFromOptions(t.options, t.schema.primaryKeys),
          writeBufferSize: t.options.writeBufferSize,
          // An append buffer is already in file order: a full one is written out, not spilled.
          spillable: t.options.writeBufferSpillable && !this.appendOnly,
          keepRawChangelog: t.options.changelogProducer === 'input',
        }),
      };
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

  /**
   * Writes a buffer's merged records as level-0 files, each piece encoded as the buffer's flush
   * yields it (lib/table/level0-file.ts); a spilled buffer's files roll at `target-file-size`
   * (estimated from in-memory bytes per row).
   */
  private async flushBucket(bw: BucketWriter, pool?: EncoderPool, shared?: ByteBudget): Promise<void> {
    // An in-memory buffer is at most write-buffer-size: one file. A spilled one may hold far more
    // than memory; its merge streams out into files rolled at target-file-size.
    const target = bw.buffer.spilledRuns > 0 ? this.table.options.targetFileSize : Infinity;
    const where = { partition: bw.partition, bucket: bw.bucket, totalBuckets: this.partitionBuckets.get(bw.partition) ?? this.numBuckets };
    // On the pool, the workers gather the merged rows too: this thread sorts and merges, then
    // goes on to the next bucket while they gather and encode this one's row groups.
    if (pool && shared) {
      // One bucket at a time splits (its rows of a deferred table), sorts, merges and posts its
      // row groups; the next one starts as soon as this one has posted its last, so it is split
      // and sorted while the workers encode this one's.
      const leave = await shared.enter();
      try {
        this.releaseDeferredBucket(bw, sharedMemory);
        const copy = bw.buffer.memoryBytes;
        const plan = copy <= shared.limit ? bw.buffer.takeGatherPlan() : null;
        if (plan !== null) {
          await shared.acquire(copy);
          try {
            const file = await writeLevel0Gathered(this.table, where, plan, pool, leave);
            if (file !== null) this.pendingData.push(file);
          } finally {
            shared.release(copy);
          }
          return;
        }
      } finally {
        leave();
      }
    }
    this.releaseDeferredBucket(bw);
    const bytesPerRow = Math.max(1, bw.buffer.bytesPerRecord);
    const data = new RollingFileSink(target, bytesPerRow, 1, () => openLevel0File(this.table, where, 'data', pool), (f) => void this.pendingData.push(f));
    const changelog = new RollingFileSink(target, bytesPerRow, 1, () => openLevel0File(this.table, where, 'changelog', pool), (f) => void this.pendingChangelog.push(f));
    try {
      for await (const out of bw.buffer.flushPieces()) {
        await data.add(out.data);
        if (out.changelog) await changelog.add(out.changelog);
      }
    } catch (e) {
      await data.discard();
      await changelog.discard();
      throw e;
    }
    await data.finish();
    await changelog.finish();
  }
}

/**
 * A pooled flush's pacing: bytes of shared copies held at a time, up to a limit (`acquire` waits
 * until what it asks for fits, or nothing else is held), and one bucket at a time in the sort and
 * post stage (`enter` waits for the bucket before to leave it; the function it returns leaves).
 */
class ByteBudget {
  private used = 0;
  private readonly waiting: (() => void)[] = [];
  private stage: Promise<void> = Promise.resolve();

  constructor(readonly limit: number) {}

  async enter(): Promise<() => void> {
    const before = this.stage;
    let leave!: () => void;
    this.stage = new Promise<void>((r) => (leave = r));
    await before;
    return leave;
  }

  async acquire(bytes: number): Promise<void> {
    while (this.used > 0 && this.used + bytes > this.limit) await new Promise<void>((r) => this.waiting.push(r));
    this.used += bytes;
  }

  release(bytes: number): void {
    this.used -= bytes;
    for (const w of this.waiting.splice(0)) w();
  }
}

/** The JS value (lib/schema/types.ts) of an Arrow cell of a routing column. */
function arrowValue(f: DataField, v: unknown): Value {
  if (v === null || v === undefined) return null;
  switch (f.type.root) {
    case 'BIGINT':
    case 'TIMESTAMP':
      return typeof v === 'bigint' ? v : BigInt(v as number);
    case 'DATE':
      // Arrow JS returns DateDay cells as epoch milliseconds.
      return typeof v === 'number' ? Math.round(v / 86_400_000) : (v as Value);
    default:
      return v as Value;
  }
}

/** True when two tables' columns have the same names and types in the same order (their rows can be gathered together). */
function sameColumns(a: arrow.Schema, b: arrow.Schema): boolean {
  return a.fields.length === b.fields.length && a.fields.every((f, i) => f.name === b.fields[i].name && arrowTypesEqual(f.type, b.fields[i].type));
}
