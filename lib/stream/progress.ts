/**
 * Consumer progress. Readers record, per bucket, the last snapshot whose split they delivered
 * (`consumer/consumer-<id>@progress/[<partition>/]bucket-<n>`; one writer per bucket, because one
 * message group per bucket means one reader at a time). Discovery folds those into the consumer's
 * `nextSnapshot` so that every snapshot below it is fully delivered: the minimum, over buckets
 * that still have undelivered planned splits, of where each bucket stands. A bucket with no new
 * data is never in that set, so it never holds the consumer back.
 */
import * as v from 'valibot';
import { ConsumerLeaseLostError, CorruptMetadataError, ObjectNotFoundError, SplitFenceLostError } from '../errors.js';
import { jsonInt, jsonTime, type JsonSchema } from '../json.js';
import { parseJsonObject } from '../store/json-file.js';
import { utf8, type ObjectStore } from '../store/object-store.js';
import type { Table } from '../table/table.js';
import { readConsumer, type ConsumerState } from '../snapshot/consumer.js';

/** What a reader records after delivering a split. */
export interface BucketProgress {
  /** The consumer run the delivery belongs to (progress of an older run is ignored). */
  run: string;
  /** The last snapshot whose split of this bucket was delivered. */
  snapshot: number;
  /** Epoch ms of the delivery. */
  updated: number;
  /** Fencing token of the reader's lease (lease.ts); a smaller token can no longer write. */
  token?: number;
  /**
   * The UUID of the table delivered from (table-identity.ts). Progress counts only under its
   * consumer's `run`, which a consumer made for another table never shares.
   */
  tableUuid?: string;
  /**
   * Token of the split fence the delivery held (split-fence.ts, Lambda readers): within a run, a
   * smaller token can no longer write (the holder was fenced off by a newer delivery of the bucket).
   */
  splitFence?: number;
}

const BucketProgressSchema: JsonSchema<BucketProgress> = v.looseObject({
  run: v.string(),
  snapshot: jsonInt,
  updated: jsonTime,
  token: v.optional(jsonInt),
  tableUuid: v.optional(v.string()),
  splitFence: v.optional(jsonInt),
});

/** The key of a bucket in the consumer's `buckets` map and in progress object names. */
export function bucketKey(partition: string, bucket: number): string {
  return `${partition ? `${partition}/` : ''}bucket-${bucket}`;
}

/** Partition and bucket of a `bucketKey`. */
export function parseBucketKey(key: string): { partition: string; bucket: number } {
  const slash = key.lastIndexOf('/');
  const bucket = Number(key.slice(slash + 1).replace(/^bucket-/, ''));
  if (!Number.isInteger(bucket))
    throw new CorruptMetadataError(`"${key}" is not a bucket key ([partition/]bucket-<n>)`);
  return { partition: slash < 0 ? '' : key.slice(0, slash), bucket };
}

/** Key of a bucket's progress object. '@' never occurs in a consumer id, so no consumer file collides with it. */
export function progressKey(tablePath: string, consumerId: string, partition: string, bucket: number): string {
  return `${tablePath}/consumer/consumer-${consumerId}@progress/${bucketKey(partition, bucket)}`;
}

/** A bucket's recorded progress, or undefined when nothing was delivered yet. */
export async function readBucketProgress(
  store: ObjectStore,
  tablePath: string,
  consumerId: string,
  partition: string,
  bucket: number,
): Promise<BucketProgress | undefined> {
  const key = progressKey(tablePath, consumerId, partition, bucket);
  try {
    return parseJsonObject(store, key, (await store.get(key)).body, BucketProgressSchema);
  } catch (e) {
    if (e instanceof ObjectNotFoundError) return undefined;
    throw e;
  }
}

/** A bucket's progress with its etag (for a conditional update), or undefined. */
export async function readBucketProgressEntry(
  store: ObjectStore,
  tablePath: string,
  consumerId: string,
  partition: string,
  bucket: number,
): Promise<{ progress: BucketProgress; etag: string } | undefined> {
  const key = progressKey(tablePath, consumerId, partition, bucket);
  try {
    const obj = await store.get(key);
    return { progress: parseJsonObject(store, key, obj.body, BucketProgressSchema), etag: obj.etag };
  } catch (e) {
    if (e instanceof ObjectNotFoundError) return undefined;
    throw e;
  }
}

/** Throws ConsumerLeaseLostError when progress was written under a newer lease than `token`. */
export function checkFence(consumerId: string, stored: BucketProgress | undefined, token: number | undefined): void {
  if (stored?.token !== undefined && token !== undefined && stored.token > token) {
    throw new ConsumerLeaseLostError(
      `consumer ${consumerId}: a reader with a newer lease (token ${stored.token} > ${token}) has recorded progress; this reader was fenced off and stops`,
    );
  }
}

/** Throws SplitFenceLostError when the bucket's progress of this run was written under a newer split fence than `next`'s. */
function checkSplitFence(consumerId: string, stored: BucketProgress | undefined, next: BucketProgress): void {
  if (
    stored?.splitFence === undefined ||
    next.splitFence === undefined ||
    stored.run !== next.run ||
    stored.splitFence <= next.splitFence
  )
    return;
  throw new SplitFenceLostError(
    `consumer ${consumerId}: a newer delivery of this bucket (split fence ${stored.splitFence} > ${next.splitFence}) has recorded progress; this delivery was fenced off and records nothing`,
  );
}

/**
 * Moves a bucket's progress to `next` with a compare-and-swap, never backwards and never under an
 * older lease: returns the new entry, or undefined when the bucket was already at or past
 * `next.snapshot` (another reader delivered it). `seen` is the entry the caller read before.
 */
export async function advanceBucketProgress(
  store: ObjectStore,
  tablePath: string,
  consumerId: string,
  partition: string,
  bucket: number,
  next: BucketProgress,
  seen: { progress: BucketProgress; etag: string } | undefined,
  /** Called before the bucket's progress object is created (not replaced): the caller's last chance to refuse, e.g. for a dropped table. */
  beforeCreate?: () => Promise<unknown>,
): Promise<{ progress: BucketProgress; etag: string } | undefined> {
  const key = progressKey(tablePath, consumerId, partition, bucket);
  const body = utf8(JSON.stringify(next));
  let current = seen;
  for (let i = 0; i < 20; i++) {
    checkFence(consumerId, current?.progress, next.token);
    checkSplitFence(consumerId, current?.progress, next);
    if (current && current.progress.run === next.run && current.progress.snapshot >= next.snapshot) return undefined;
    let won: { etag: string } | undefined;
    try {
      if (!current) await beforeCreate?.();
      won = current ? await store.putIfMatch(key, body, current.etag) : await store.putIfAbsent(key, body);
    } catch (e) {
      if (!(e instanceof ObjectNotFoundError)) throw e;
    }
    if (won) return { progress: next, etag: won.etag };
    const before = current;
    current = await readBucketProgressEntry(store, tablePath, consumerId, partition, bucket);
    if (before !== undefined && current === undefined) {
      // Recorded progress vanished under this reader: its table was dropped (or the consumer
      // removed). Writing it again would re-create consumer state inside a dropped table.
      throw new ConsumerLeaseLostError(
        `consumer ${consumerId}: the progress of ${bucketKey(partition, bucket)} was removed while this reader delivered (table dropped or consumer removed); stopping without recording`,
      );
    }
  }
  throw new ConsumerLeaseLostError(
    `consumer ${consumerId}: the progress of ${bucketKey(partition, bucket)} kept changing under this reader; another reader is delivering it`,
  );
}

/** Records that a bucket's split of `progress.snapshot` was delivered (its only writer is the bucket's reader). */
export async function writeBucketProgress(
  store: ObjectStore,
  tablePath: string,
  consumerId: string,
  partition: string,
  bucket: number,
  progress: BucketProgress,
): Promise<void> {
  await store.put(progressKey(tablePath, consumerId, partition, bucket), utf8(JSON.stringify(progress)));
}

/**
 * The consumer state with readers' progress folded in: buckets whose planned splits are all
 * delivered leave the map, the others move their `nextSnapshot` past what they delivered, and
 * `nextSnapshot` becomes the smallest undelivered position (never smaller than before).
 */
export async function foldProgress(
  store: ObjectStore,
  tablePath: string,
  consumerId: string,
  state: ConsumerState,
): Promise<ConsumerState> {
  const buckets = { ...(state.buckets ?? {}) };
  const keys = Object.keys(buckets);
  const delivered = await Promise.all(
    keys.map((k) => {
      const { partition, bucket } = parseBucketKey(k);
      return readBucketProgress(store, tablePath, consumerId, partition, bucket);
    }),
  );
  keys.forEach((k, i) => {
    const p = delivered[i];
    if (p === undefined || p.run !== state.run) return;
    const b = buckets[k];
    if (p.snapshot >= b.lastPlanned) delete buckets[k];
    // The bucket's next planned split is after what it delivered; exactly where is not recorded.
    else if (p.snapshot >= b.nextSnapshot) buckets[k] = { ...b, nextSnapshot: p.snapshot + 1 };
  });
  return { ...state, buckets, nextSnapshot: nextSnapshotOf(state.nextSnapshot, state.plannedSnapshot, buckets) };
}

/** min(planned + 1, every pending bucket's nextSnapshot), and never below `current`. */
export function nextSnapshotOf(
  current: number,
  planned: number | undefined,
  buckets: Record<string, { nextSnapshot: number }>,
): number {
  let next = planned === undefined ? current : planned + 1;
  for (const b of Object.values(buckets)) next = Math.min(next, b.nextSnapshot);
  return Math.max(current, next);
}

/** How far a consumer is behind its table. */
export interface ConsumerLag {
  consumerId: string;
  nextSnapshot: number;
  plannedSnapshot?: number;
  latestSnapshot?: number;
  /** Committed snapshots not yet fully delivered (0 when caught up). */
  snapshots: number;
  /** Age of the oldest undelivered snapshot in ms (0 when caught up). */
  millis: number;
  /** Buckets holding the consumer back (their next undelivered split is at `nextSnapshot`). */
  blockingBuckets: string[];
}

/** The consumer's lag (after folding the latest reader progress, without writing it). */
export async function consumerLag(
  table: Table,
  consumerId: string,
  now = Date.now(),
): Promise<ConsumerLag | undefined> {
  const c = await readConsumer(table.store, table.path, consumerId);
  if (!c) return undefined;
  const folded = await foldProgress(table.store, table.path, consumerId, c);
  const latest = await table.snapshots.latestId();
  const behind = latest === undefined ? 0 : Math.max(0, latest - folded.nextSnapshot + 1);
  const oldest = behind > 0 ? await table.snapshots.tryRead(folded.nextSnapshot) : undefined;
  return {
    consumerId,
    nextSnapshot: folded.nextSnapshot,
    plannedSnapshot: folded.plannedSnapshot,
    latestSnapshot: latest,
    snapshots: behind,
    millis: oldest ? Math.max(0, now - oldest.timeMillis) : 0,
    blockingBuckets: Object.entries(folded.buckets ?? {})
      .filter(([, b]) => b.nextSnapshot === folded.nextSnapshot)
      .map(([k]) => k),
  };
}
