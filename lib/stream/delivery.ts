/**
 * Delivering one split message to a sink, the step every reader shares (the in-process reader
 * and the Lambda handler): drop what is stale or already delivered, refuse a split whose
 * predecessor in its bucket was lost, read the split, hand it to the sink, record the bucket's
 * progress. At-least-once towards the sink; a sink with idempotent writes (a varve table with
 * commit identifiers) makes it exactly-once.
 */
import type * as arrow from 'apache-arrow';
import { InvalidArgumentError, VarveError } from '../errors.js';
import type { ConsumerLeaseHandle } from './lease.js';
import type { HeldFence, SplitFences } from './split-fence.js';
import type { Table } from '../table/table.js';
import { readConsumer, readTombstone, type Consumer } from '../snapshot/consumer.js';
import {
  advanceBucketProgress,
  bucketKey,
  checkFence,
  progressKey,
  readBucketProgressEntry,
  type BucketProgress,
} from './progress.js';
import { describeSplit, readSplit, type SplitKind } from './split.js';
import { checkOpenedTable } from './table-identity.js';
import { loadSplitMessage, parseSplitMessage, type SplitEnvelope } from './split-message.js';
import { schemaChangeEvent, type SchemaChangeEvent } from './schema-change.js';

/** The rows one split delivers: one (partition, bucket) of one snapshot, in change order. */
export interface ChangeBatch {
  table: Table;
  consumerId: string;
  snapshotId: number;
  partition: string;
  bucket: number;
  kind: SplitKind;
  /** Table columns, `_SEQUENCE_NUMBER` (absolute) and `_VALUE_KIND`, in the order the changes happened. */
  data: arrow.Table;
  /** `<consumer>/<snapshot>/<partition>/<bucket>`: stable across redeliveries, for idempotent sinks. */
  splitId: string;
  /**
   * Set on the first batch this reader delivers under a newer schema (after `varve alter`): the
   * rows of this batch and every later one have the columns of `schemaChange.schema`.
   */
  schemaChange?: SchemaChangeEvent;
}

/** Where a consumer's changes go. `write` may be called again with the same split after a failure. */
export interface StreamSink {
  write(batch: ChangeBatch): Promise<void>;
}

/**
 * A split whose predecessor in its bucket was never delivered (it went to the dead-letter queue):
 * delivering it would skip changes, so the bucket stops until the lost split is redriven.
 */
export class SplitGapError extends VarveError {
  constructor(
    message: string,
    /** The bucket's last delivered snapshot of the split's run (undefined: none). */
    readonly delivered?: number,
  ) {
    super(message, { kind: 'precondition', retryable: true });
  }
}

/** A sink call that outlived its lease / visibility: its split is not acknowledged and is delivered again in order. */
export class SinkTimeoutError extends VarveError {
  constructor(
    message: string,
    /**
     * True when the split used the time itself (its own sink call, or its own reads when no
     * other sink call of the batch ran before it); false when it found no time left after other
     * splits' sink calls, or the bucket's sink still busy with an earlier call that already failed.
     * Only an own timeout counts toward the split's failure budget (split-policy.ts).
     */
    readonly own = true,
  ) {
    super(message, { kind: 'unavailable', retryable: true });
  }
}

/** How a reader fences its deliveries: the lease it holds, and the time a sink call may take. */
export interface DeliveryFence {
  lease?: ConsumerLeaseHandle;
  /** A sink call taking longer fails (SinkTimeoutError), as Lambda's timeout would end it. */
  sinkTimeoutMs?: number;
  /**
   * Epoch ms by which every sink call must have ended (a Lambda reader: its remaining time and its
   * messages' visibility, less a margin); a call still running then fails with SinkTimeoutError.
   */
  sinkDeadline?: number;
  /**
   * Split fences across processes (split-fence.ts): each bucket is held by `holder` until `until`
   * (no call of this reader runs past it) before its split is read, and its progress carries the token.
   */
  splits?: { fences: SplitFences; holder: string; until: number };
}

type ProgressEntry = { progress: BucketProgress; etag: string } | undefined;

/** What happened to one message. */
export type DeliveryOutcome = 'delivered' | 'duplicate' | 'stale';

/** The stable id of a split for a consumer. */
function splitIdOf(consumerId: string, snapshotId: number, partition: string, bucket: number): string {
  return `${consumerId}/${snapshotId}/${partition}/${bucket}`;
}

/**
 * Delivers the split messages of one receive (one batch): the consumer file is read once, each
 * bucket's progress once, so a batch costs one read per bucket plus the split's files.
 */
export class BatchDelivery {
  private consumer?: Promise<Consumer | undefined>;
  private readonly progress = new Map<string, { version: number; entry: Promise<ProgressEntry> }>();
  private leaseVerified?: Promise<void>;
  /** Split fences this batch holds, per bucket key. */
  private readonly held = new Map<string, { partition: string; bucket: number; fence: Promise<HeldFence> }>();
  /** Sink calls started in this batch (a split finding no time left after one did not use the time itself). */
  private sinkCalls = 0;
  /** Sink calls of this batch still running after their time limit, per bucket key. */
  private readonly abandoned = new Map<string, { settled: Promise<void>; done: boolean }>();

  constructor(
    /** Moves to a newer schema when a split's files were written with one (after an alter). */
    public table: Table,
    readonly consumerId: string,
    readonly sink: StreamSink,
    private readonly now: () => number = Date.now,
    private readonly fence: DeliveryFence = {},
  ) {}

  /**
   * Delivers one message body; throws when it must be retried (the caller fails it and the rest of its group).
   * `beforeAttempt` runs once the split's bucket is held and the split is due (not delivered yet, its
   * predecessor delivered), before its files are read: a Lambda reader notes the attempt there, so
   * that an invocation dying in it (crash, out of memory) is counted as the split's failure.
   */
  async deliver(body: string, beforeAttempt?: (m: SplitEnvelope) => Promise<void>): Promise<DeliveryOutcome> {
    const m = parseSplitMessage(body);
    if (m.tablePath !== this.table.path || m.consumerId !== this.consumerId) {
      throw new InvalidArgumentError(
        `a split for ${m.table} consumer ${m.consumerId} reached the reader of ${this.table.name} consumer ${this.consumerId}; ` +
          'each consumer needs its own split queue',
      );
    }
    const consumer = await (this.consumer ??= readConsumer(this.table.store, this.table.path, this.consumerId));
    // A deleted consumer or a reset one (new run): the message belongs to a stream that is gone.
    if (consumer === undefined || consumer.run !== m.run) return 'stale';
    const key = bucketKey(m.partition, m.bucket);
    // One delivery of a bucket at a time in this process: a message whose visibility ran out while
    // a reader was still on it (reading its files, or in the sink) can be received again by another
    // reader of this process; that copy waits here and then finds the split delivered.
    const lockKey = `${this.table.store.uri}\u0000${this.table.path}\u0000${this.consumerId}\u0000${key}`;
    return withBucketLock(lockKey, () => this.deliverLocked(m, key, lockKey, beforeAttempt));
  }

  private async deliverLocked(
    m: SplitEnvelope,
    key: string,
    lockKey: string,
    beforeAttempt?: (m: SplitEnvelope) => Promise<void>,
  ): Promise<DeliveryOutcome> {
    // The progress read once per batch, again when another delivery of this process moved it since.
    const version = progressWrites.get(lockKey) ?? 0;
    const { held, entry } = await this.holdAndReadProgress(m, key, version);
    const p = entry?.progress;
    const delivered = p?.run === m.run ? p.snapshot : undefined;
    // No progress of this run: the bucket's first split, or its progress was deleted because the
    // consumer expired while this batch ran (it read the consumer before). Delivered again, the
    // split would land behind newer ones of the bucket: per-key order broken.
    if (delivered === undefined && (await this.runEnded(m))) return 'stale';
    // Already delivered (a copy from a discovery that lost its race, or an ack that was lost).
    if (delivered !== undefined && m.snapshotId <= delivered) return 'duplicate';
    if (m.prev !== undefined && (delivered === undefined || delivered < m.prev)) throw gapError(m, delivered);
    // Once per batch: the lease object still names this reader (a takeover fences it off here).
    if (this.fence.lease) await (this.leaseVerified ??= this.fence.lease.verify());
    await beforeAttempt?.(m);
    const { data, schemaChange } = await this.readSplitOf(m);
    await this.callSink({
      table: this.table,
      consumerId: this.consumerId,
      snapshotId: m.snapshotId,
      partition: m.partition,
      bucket: m.bucket,
      kind: m.kind,
      data,
      splitId: splitIdOf(this.consumerId, m.snapshotId, m.partition, m.bucket),
      ...(schemaChange ? { schemaChange } : {}),
    });
    // A sink call longer than the lease: taken back here when nobody else took it meanwhile.
    await this.fence.lease?.ensure();
    if (held) this.fence.splits!.fences.check(m.partition, m.bucket, held);
    const written = await this.recordProgress(m, held, entry);
    if (written === undefined) {
      this.progress.delete(key);
      return 'duplicate';
    }
    progressWrites.set(lockKey, version + 1);
    this.progress.set(key, { version: version + 1, entry: Promise.resolve(written) });
    return 'delivered';
  }

  /**
   * Holds the bucket's split fence, then reads its progress (what an earlier holder recorded is
   * then seen) and checks this reader may still deliver: its lease, and the tokens progress carries.
   */
  private async holdAndReadProgress(
    m: SplitEnvelope,
    key: string,
    version: number,
  ): Promise<{ held?: HeldFence; entry: ProgressEntry }> {
    let held = await this.holdSplit(m, key);
    let cached = this.progress.get(key);
    if (!cached || cached.version !== version) {
      cached = {
        version,
        entry: readBucketProgressEntry(this.table.store, this.table.path, this.consumerId, m.partition, m.bucket),
      };
      this.progress.set(key, cached);
    }
    const entry = await cached.entry;
    const p = entry?.progress;
    // A reader that lost its lease neither delivers nor records anything.
    await this.fence.lease?.ensure();
    checkFence(this.consumerId, p, this.fence.lease?.token);
    if (held && p?.run === m.run && p.splitFence !== undefined && p.splitFence >= held.token) {
      // The fence object was removed while progress stayed: hold again above the recorded token.
      held = await this.holdSplit(m, key, p.splitFence);
    }
    return { held, entry };
  }

  /**
   * Reads the split's rows in the newest schema this reader has met (never an older one: files of
   * older schemas read through a newer one by field id), from the snapshot that introduced it on.
   */
  private async readSplitOf(m: SplitEnvelope): Promise<{ data: arrow.Table; schemaChange?: SchemaChangeEvent }> {
    const split = await loadSplitMessage(this.table.store, m);
    const previous = this.table;
    if (split.schemaId !== undefined && split.schemaId > this.table.schema.id) {
      const schema = await this.table.schemaById(split.schemaId);
      // A schema of another table at the same path (dropped and created again) is not adopted:
      // the reader keeps its table's identity, and the identity checks stop it.
      if (schema.tableUuid === this.table.schema.tableUuid) this.table = this.table.withSchema(schema);
    }
    if (split.files.some((f) => f.schemaId > this.table.schema.id)) this.table = await this.table.latest();
    const schemaChange =
      this.table !== previous && this.table.schema.id > previous.schema.id
        ? schemaChangeEvent(m.snapshotId, previous.schema, this.table.schema)
        : undefined;
    return { data: await readSplit(this.table, split), ...(schemaChange ? { schemaChange } : {}) };
  }

  /** Moves the bucket's progress to the split (compare-and-swap); undefined when another delivery moved it first. */
  private async recordProgress(
    m: SplitEnvelope,
    held: HeldFence | undefined,
    entry: ProgressEntry,
  ): Promise<ProgressEntry> {
    const token = this.fence.lease?.token;
    const uuid = this.table.schema.tableUuid;
    const next: BucketProgress = {
      run: m.run,
      snapshot: m.snapshotId,
      updated: this.now(),
      ...(token !== undefined ? { token } : {}),
      ...(held ? { splitFence: held.token } : {}),
      ...(uuid !== undefined ? { tableUuid: uuid } : {}),
    };
    // Compare-and-swap: a bucket's progress never moves backwards, and never under an older lease.
    // A progress object is created only in a table that still exists: a drop during the sink call
    // deletes the consumer's objects, and this write must not bring one back into the dropped folder.
    // The table must still be the one this reader opened (its UUID): a table dropped and created
    // again at once exists, but its folder is not this consumer's any more.
    const written = await advanceBucketProgress(
      this.table.store,
      this.table.path,
      this.consumerId,
      m.partition,
      m.bucket,
      next,
      entry,
      () => checkOpenedTable(this.table),
    );
    if (written !== undefined && entry === undefined) {
      // A drop may have run between that check and the create: check again, and take back what
      // was created in a folder that is not this table's any more.
      try {
        await checkOpenedTable(this.table);
      } catch (e) {
        await this.table.store
          .delete(progressKey(this.table.path, this.consumerId, m.partition, m.bucket))
          .catch(() => undefined);
        throw e;
      }
    }
    return written;
  }

  /**
   * True when the message's run has ended since this batch read the consumer: its tombstone names
   * the run (expiry writes it before it deletes any progress), or the consumer file is gone or has
   * another run (resumed or reset). Read afresh, not from the batch's cache.
   */
  private async runEnded(m: SplitEnvelope): Promise<boolean> {
    const { store, path } = this.table;
    const tombstone = await readTombstone(store, path, this.consumerId);
    if (tombstone?.run === m.run) return true;
    const consumer = await readConsumer(store, path, this.consumerId);
    return consumer === undefined || consumer.run !== m.run;
  }

  /** Holds the split fence of the message's bucket for this batch (once per bucket; again above `floor`). */
  private async holdSplit(m: SplitEnvelope, key: string, floor?: number): Promise<HeldFence | undefined> {
    const splits = this.fence.splits;
    if (!splits) return undefined;
    let h = this.held.get(key);
    if (!h || floor !== undefined) {
      // A bucket another delivery holds is waited for a moment (it is usually about to finish).
      const waitUntil = Math.min(this.fence.sinkDeadline ?? 0, this.now() + FENCE_WAIT_MS);
      const fence = splits.fences.hold(m.partition, m.bucket, splits.holder, splits.until, floor, waitUntil);
      // A failed hold is not kept: the next split of the bucket in this batch tries again.
      fence.catch(() => {
        if (this.held.get(key)?.fence === fence) this.held.delete(key);
      });
      this.held.set(key, (h = { partition: m.partition, bucket: m.bucket, fence }));
    }
    return h.fence;
  }

  /**
   * Ends the batch: waits (until `until` at most, or for as long as they run) for the sink calls that outlived their time
   * limit, then releases the split fences of the buckets whose calls have all settled. A bucket
   * with a call still running keeps its fence until the fence runs out (a Lambda reader's
   * container ends at its timeout, and the call with it).
   */
  async finish(until?: number): Promise<void> {
    const running = [...this.abandoned.values()];
    if (running.some((c) => !c.done)) {
      let timer: NodeJS.Timeout | undefined;
      const limit =
        until === undefined
          ? new Promise<void>(() => {})
          : new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, until - this.now()))));
      await Promise.race([Promise.all(running.map((c) => c.settled)), limit]);
      clearTimeout(timer);
    }
    for (const [k, h] of this.held) {
      if (this.abandoned.get(k)?.done === false) continue;
      const fence = await h.fence.catch(() => undefined);
      if (fence) await this.fence.splits!.fences.release(h.partition, h.bucket, fence);
    }
    this.held.clear();
  }

  /**
   * The sink call, limited to `sinkTimeoutMs` when set. A call that timed out cannot be cancelled
   * (Lambda ends its process; here the sink's promise runs on), so until it settles no other call
   * of this process hands the same bucket of this consumer to the same sink: its split comes
   * again only after it, never overtaken by a later split of the bucket (per-key order).
   */
  private async callSink(batch: ChangeBatch): Promise<void> {
    const deadline = this.fence.sinkDeadline;
    const limit =
      deadline === undefined
        ? this.fence.sinkTimeoutMs
        : Math.min(this.fence.sinkTimeoutMs ?? Infinity, deadline - this.now());
    if (limit === undefined) return this.sink.write(batch);
    if (limit <= 0) {
      throw new SinkTimeoutError(
        `consumer ${this.consumerId}: no time is left for split ${batch.splitId} before this reader's deadline` +
          `${this.sinkCalls > 0 ? ` (${this.sinkCalls} earlier sink call(s) of this batch used it)` : ''}; it is delivered again`,
        this.sinkCalls === 0,
      );
    }
    const running = runningAfterTimeout(this.sink);
    const key = `${this.table.path}\u0000${this.consumerId}\u0000${bucketKey(batch.partition, batch.bucket)}`;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), limit);
    });
    try {
      const before = running.get(key);
      if (before && (await Promise.race([before, timeout])) === 'timeout') {
        throw new SinkTimeoutError(
          `the sink of consumer ${this.consumerId} is still busy with an earlier call for ${bucketKey(batch.partition, batch.bucket)} that outlived its ${limit} ms; split ${batch.splitId} is delivered again after it`,
          false,
        );
      }
      this.sinkCalls++;
      const call = this.sink.write(batch);
      if ((await Promise.race([call, timeout])) !== 'timeout') return;
      // The next delivery of this bucket waits for this call, so that it cannot land after a newer split.
      const settled: Promise<void> = call.then(
        () => undefined,
        () => undefined,
      );
      running.set(key, settled);
      const left = { settled, done: false };
      void settled.then(() => (left.done = true));
      this.abandoned.set(bucketKey(batch.partition, batch.bucket), left);
      void settled.then(() => {
        if (running.get(key) === settled) running.delete(key);
      });
      throw new SinkTimeoutError(
        `the sink of consumer ${this.consumerId} took longer than ${limit} ms on split ${batch.splitId}; it is delivered again`,
      );
    } finally {
      clearTimeout(timer);
    }
  }
}

/**
 * How long a delivery waits for a bucket another process holds before it fails (SplitFenceHeldError);
 * the Lambda reader then hides its message until the hold ends.
 */
const FENCE_WAIT_MS = 1000;

/** Per (store, table, consumer, bucket): the tail of the chain of deliveries of this process. */
const bucketLocks = new Map<string, Promise<unknown>>();
/** Per (store, table, consumer, bucket): how often this process moved the bucket's progress (invalidates batch caches). */
const progressWrites = new Map<string, number>();

/** Runs `fn` after every earlier call for `key` of this process has settled. */
async function withBucketLock<T>(key: string, fn: () => Promise<T>): Promise<T> {
  const before = bucketLocks.get(key);
  const run = (before ?? Promise.resolve()).then(fn, fn);
  const tail = run.then(
    () => undefined,
    () => undefined,
  );
  bucketLocks.set(key, tail);
  try {
    return await run;
  } finally {
    if (bucketLocks.get(key) === tail) bucketLocks.delete(key);
  }
}

/** Sink calls still running after their time limit, per sink and (table, consumer, bucket). */
const afterTimeout = new WeakMap<StreamSink, Map<string, Promise<void>>>();

function runningAfterTimeout(sink: StreamSink): Map<string, Promise<void>> {
  let m = afterTimeout.get(sink);
  if (!m) afterTimeout.set(sink, (m = new Map()));
  return m;
}

function gapError(m: SplitEnvelope, delivered: number | undefined): SplitGapError {
  return new SplitGapError(
    `${describeSplit(m)} of ${m.table} follows the split of snapshot ${m.prev}, which consumer ${m.consumerId} never ` +
      `received (last delivered: ${delivered ?? 'none'}); it is probably in the dead-letter queue. Redrive the dead-letter ` +
      'queue so the bucket can continue in order',
    delivered,
  );
}
