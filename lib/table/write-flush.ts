/**
 * Flushing a writer's buckets to level-0 files: the per-bucket buffer, whether a flush runs on the
 * encoder pool, the pooled flush's pacing (shared copies within a share of write-buffer-size, one
 * bucket at a time in the sort-and-post stage), the spill before a flush of spilled buffers, and
 * the flush of one bucket.
 */
import { sharedMemory, type Allocate } from '../format/column-layout.js';
import { encoderPool, type EncoderPool } from '../format/encoder-pool.js';
import { mergeConfigFromOptions } from '../mergetree/merge-config.js';
import { RollingFileSink } from '../mergetree/rolling-writer.js';
import { WriteBuffer } from '../mergetree/write-buffer.js';
import type { FileChange } from '../snapshot/commit.js';
import { openLevel0File, writeLevel0Gathered } from './level0-file.js';
import type { Table } from './table.js';

/**
 * The smallest `write-buffer-size` whose flushes encode on the encoder pool: each worker costs an
 * isolate and a wasm memory (tens of MB), which a writer told to stay small must not pay.
 */
export const PARALLEL_MIN_WRITE_BUFFER = 64 * 1024 * 1024;

/**
 * A pooled flush shares each bucket's buffered rows with the workers in shared memory (they gather
 * the merged rows from it): a bucket split off a deferred table is split into shared memory, other
 * buffered rows are copied there once. The shared copies alive at a time are at most this part of
 * write-buffer-size, so a flush holds the buffer plus an eighth. A bucket holding more flushes
 * the older way: its merged rows gathered here, a row group at a time.
 */
const SHARED_COPY_SHARE = 8;

/** One (partition, bucket) of a writer and its buffer. */
export interface BucketWriter {
  partition: string;
  bucket: number;
  buffer: WriteBuffer;
}

/** The writer of bucket `id` (`partition\0bucket`), with an empty buffer. */
export function newBucketWriter(table: Table, id: string, appendOnly: boolean): BucketWriter {
  const [partition, bucket] = id.split('\u0000');
  return {
    partition,
    bucket: Number(bucket),
    buffer: new WriteBuffer({
      schema: table.schema,
      merge: mergeConfigFromOptions(table.options, table.schema.primaryKeys),
      writeBufferSize: table.options.writeBufferSize,
      // An append buffer is already in file order: a full one is written out, not spilled.
      spillable: table.options.writeBufferSpillable && !appendOnly,
      keepRawChangelog: table.options.changelogProducer === 'input',
    }),
  };
}

/**
 * The encoder pool a flush of `bytes` runs on, if any: enough rows (the pool's minFlushBytes) and
 * a write buffer large enough to afford the workers (PARALLEL_MIN_WRITE_BUFFER); one bucket's file
 * too, its row groups spread over the workers.
 */
export function flushPoolFor(table: Table, bytes: number): EncoderPool | undefined {
  const roomy = table.options.writeBufferSize >= PARALLEL_MIN_WRITE_BUFFER;
  const pool = roomy && bytes >= encoderPool().minFlushBytes ? encoderPool() : undefined;
  return pool?.available ? pool : undefined;
}

/** The pacing of one pooled flush of `table`'s writer. */
export function sharedCopyBudget(table: Table): ByteBudget {
  return new ByteBudget(table.options.writeBufferSize / SHARED_COPY_SHARE);
}

/**
 * Rows that outgrew write-buffer-size have spilled: before the first flush the largest in-memory
 * parts go to disk too, one more run each, until what stays in memory is at most an eighth of
 * the buffer, so the flushes (encoder, a batch per run, the file's bytes) run beside little
 * buffered rather than on top of a full buffer; small parts (a writer of many buckets) stay in
 * memory. Measured on the 2M-row JSONL write (32 MB buffer, 4 buckets): peak RSS about 30 MB lower.
 */
export function spillBeforeFlush(filled: BucketWriter[], writeBufferSize: number): void {
  let inMemory = filled.reduce((sum, bw) => sum + bw.buffer.memoryBytes, 0);
  const keep = writeBufferSize / 8;
  for (const bw of [...filled].sort((a, b) => b.buffer.memoryBytes - a.buffer.memoryBytes)) {
    if (inMemory <= keep) return;
    const bytes = bw.buffer.memoryBytes;
    if (bw.buffer.spillMemory()) inMemory -= bytes;
  }
}

/** Where a bucket's flush puts what it wrote, and how it takes its rows of a deferred table first. */
export interface FlushTarget {
  totalBuckets: number;
  data: FileChange[];
  changelog: FileChange[];
  /** Copies the bucket's rows of the writer's deferred table into its buffer (into memory from `alloc`). */
  releaseDeferred: (alloc?: Allocate) => void;
}

/**
 * Writes a buffer's merged records as level-0 files, each piece encoded as the buffer's flush
 * yields it (lib/table/level0-file.ts); a spilled buffer's files roll at `target-file-size`
 * (estimated from in-memory bytes per row).
 */
export async function flushBucket(
  table: Table,
  bw: BucketWriter,
  to: FlushTarget,
  pool?: EncoderPool,
  shared?: ByteBudget,
): Promise<void> {
  const where = { partition: bw.partition, bucket: bw.bucket, totalBuckets: to.totalBuckets };
  // On the pool, the workers gather the merged rows too: this thread sorts and merges, then
  // goes on to the next bucket while they gather and encode this one's row groups.
  if (pool && shared && (await flushGathered(table, bw, where, to, pool, shared))) return;
  to.releaseDeferred();
  // An in-memory buffer is at most write-buffer-size: one file. A spilled one may hold far more
  // than memory; its merge streams out into files rolled at target-file-size.
  const target = bw.buffer.spilledRuns > 0 ? table.options.targetFileSize : Infinity;
  const bytesPerRow = Math.max(1, bw.buffer.bytesPerRecord);
  const data = new RollingFileSink(
    target,
    bytesPerRow,
    1,
    () => openLevel0File(table, where, 'data', pool),
    (f) => void to.data.push(f),
  );
  const changelog = new RollingFileSink(
    target,
    bytesPerRow,
    1,
    () => openLevel0File(table, where, 'changelog', pool),
    (f) => void to.changelog.push(f),
  );
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

/**
 * One bucket at a time splits (its rows of a deferred table), sorts, merges and posts its row
 * groups; the next one starts as soon as this one has posted its last, so it is split and sorted
 * while the workers encode this one's. False when the bucket's rows are too many to share
 * (flushed the older way then).
 */
async function flushGathered(
  table: Table,
  bw: BucketWriter,
  where: { partition: string; bucket: number; totalBuckets: number },
  to: FlushTarget,
  pool: EncoderPool,
  shared: ByteBudget,
): Promise<boolean> {
  const leave = await shared.enter();
  try {
    to.releaseDeferred(sharedMemory);
    const copy = bw.buffer.memoryBytes;
    const plan = copy <= shared.limit ? bw.buffer.takeGatherPlan() : null;
    if (plan === null) return false;
    await shared.acquire(copy);
    try {
      const file = await writeLevel0Gathered(table, where, plan, pool, leave);
      if (file !== null) to.data.push(file);
    } finally {
      shared.release(copy);
    }
    return true;
  } finally {
    leave();
  }
}

/**
 * A pooled flush's pacing: bytes of shared copies held at a time, up to a limit (`acquire` waits
 * until what it asks for fits, or nothing else is held), and one bucket at a time in the sort and
 * post stage (`enter` waits for the bucket before to leave it; the function it returns leaves).
 */
export class ByteBudget {
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
