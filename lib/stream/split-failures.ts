/**
 * A split's own failures, counted durably: `consumer/consumer-<id>@failures/[<partition>/]bucket-<n>`
 * holds, per bucket, how often the bucket's head split (one snapshot) failed on its own — its sink
 * threw, its read failed, its deadline ran out, its predecessor is missing. On SQS FIFO a split
 * behind a failed split of its bucket is reported failed with it and is received again each time,
 * so SQS's receive count is not the split's own: a reader budgets retries on this count instead
 * and moves a split to the dead-letter queue itself once the count reaches the budget
 * (functions/shared/stream-handler.ts). Written only on a failure, so a healthy stream never
 * touches it; a later snapshot's first failure starts its count again. One delivery of a bucket
 * runs at a time (split-fence.ts), so a plain PUT is enough.
 *
 * A split the reader moved to the dead-letter queue is marked `deadLettered`: the splits of the
 * bucket behind it, which can only fail on the gap it left, follow it to the dead-letter queue at
 * once instead of each using up its own budget; and once redriven, its first failure starts a
 * new count (a redrive gives it its budget again).
 *
 * An invocation that dies in a split (a crash, out of memory, Lambda's timeout) reports nothing.
 * So a split received again (receive count above 1) notes its attempt first (`attempt`, one PUT):
 * the next receive that still finds the note of the same split knows the attempt ended without an
 * outcome and counts it as an own failure. A counted failure clears the note; a delivered split
 * leaves it behind harmlessly (its snapshot is never attempted again).
 */
import * as v from 'valibot';
import { ObjectNotFoundError, VarveError } from '../errors.js';
import { jsonInt, jsonTime, type JsonSchema } from '../json.js';
import { parseJsonObject } from '../store/json-file.js';
import { utf8, type ObjectStore } from '../store/object-store.js';
import { bucketKey } from './progress.js';

/** Own failures a split may have; the one that reaches it moves the split to the dead-letter queue. */
export const SPLIT_FAILURE_BUDGET = 5;

/** A split reached its failure budget through invocations that died in it: the reader moves it to the dead-letter queue. */
export class SplitBudgetSpentError extends VarveError {
  constructor(
    message: string,
    readonly failures: number,
  ) {
    super(message, { kind: 'precondition', retryable: false });
  }
}

/** The JSON content of a bucket's failure record. */
export interface SplitFailures {
  run: string;
  snapshot: number;
  /** The split's own failures so far. */
  failures: number;
  lastError: string;
  updated: number;
  /** The reader moved the split to the dead-letter queue. */
  deadLettered?: boolean;
  /** An attempt of the split began (its receive count then) and has not ended with a counted outcome. */
  attempt?: number;
}

const SplitFailuresSchema: JsonSchema<SplitFailures> = v.looseObject({
  run: v.string(),
  snapshot: jsonInt,
  failures: jsonInt,
  lastError: v.string(),
  updated: jsonTime,
  deadLettered: v.optional(v.boolean()),
  attempt: v.optional(jsonInt),
});

/** The split a failure record is about. */
export interface FailedSplit {
  run: string;
  snapshotId: number;
  partition: string;
  bucket: number;
}

/** Key of a bucket's failure record ('@' never occurs in a consumer id). */
export function splitFailuresKey(tablePath: string, consumerId: string, partition: string, bucket: number): string {
  return `${tablePath}/consumer/consumer-${consumerId}@failures/${bucketKey(partition, bucket)}`;
}

/** The bucket's failure record, or undefined. */
export async function readSplitFailures(store: ObjectStore, key: string): Promise<SplitFailures | undefined> {
  try {
    return parseJsonObject(store, key, (await store.get(key)).body, SplitFailuresSchema);
  } catch (e) {
    if (e instanceof ObjectNotFoundError) return undefined;
    throw e;
  }
}

/** The record when it still counts `split`'s failures (same run and snapshot, not dead-lettered: a redrive starts a new count). */
function countOf(record: SplitFailures | undefined, split: FailedSplit): SplitFailures | undefined {
  return record !== undefined &&
    record.run === split.run &&
    record.snapshot === split.snapshotId &&
    record.deadLettered !== true
    ? record
    : undefined;
}

/** Counts one own failure of the split (`run`, `snapshot`) of a bucket; returns its own failures so far. */
export async function recordSplitFailure(
  store: ObjectStore,
  tablePath: string,
  consumerId: string,
  split: FailedSplit,
  error: string,
  now = Date.now(),
): Promise<number> {
  const key = splitFailuresKey(tablePath, consumerId, split.partition, split.bucket);
  // A record that cannot be read is replaced: the count starts again rather than the split stalling.
  const before = countOf(await readSplitFailures(store, key).catch(() => undefined), split);
  const next: SplitFailures = {
    run: split.run,
    snapshot: split.snapshotId,
    failures: (before?.failures ?? 0) + 1,
    lastError: error.slice(0, 1000),
    updated: now,
  };
  await store.put(key, utf8(JSON.stringify(next)));
  return next.failures;
}

/** Marks the split's failure record: the reader moved the split to the dead-letter queue after `failures` own failures. */
export async function markSplitDeadLettered(
  store: ObjectStore,
  tablePath: string,
  consumerId: string,
  split: FailedSplit,
  failures: number,
  error: string,
  now = Date.now(),
): Promise<void> {
  const record: SplitFailures = {
    run: split.run,
    snapshot: split.snapshotId,
    failures,
    lastError: error.slice(0, 1000),
    updated: now,
    deadLettered: true,
  };
  await store.put(splitFailuresKey(tablePath, consumerId, split.partition, split.bucket), utf8(JSON.stringify(record)));
}

/**
 * The dead-lettered split a split waits on: a split of the same run and bucket that the reader
 * moved to the dead-letter queue, newer than the bucket's last delivered snapshot (`delivered`)
 * and older than `split`. Undefined when its gap has another cause.
 */
export async function deadLetteredAhead(
  store: ObjectStore,
  tablePath: string,
  consumerId: string,
  split: FailedSplit,
  delivered: number | undefined,
): Promise<SplitFailures | undefined> {
  const r = await readSplitFailures(store, splitFailuresKey(tablePath, consumerId, split.partition, split.bucket));
  if (r?.deadLettered !== true || r.run !== split.run) return undefined;
  if (r.snapshot >= split.snapshotId || (delivered !== undefined && r.snapshot <= delivered)) return undefined;
  return r;
}

/**
 * Notes that an attempt of a split received `receiveCount` times begins. When the note of an
 * earlier attempt of the same split is still there, that attempt's invocation died without an
 * outcome: it is counted as an own failure. Returns the split's own failures so far and the
 * error of the died attempt, if any.
 */
export async function beginSplitAttempt(
  store: ObjectStore,
  tablePath: string,
  consumerId: string,
  split: FailedSplit,
  receiveCount: number,
  now = Date.now(),
): Promise<{ failures: number; died?: string }> {
  const key = splitFailuresKey(tablePath, consumerId, split.partition, split.bucket);
  const before = countOf(await readSplitFailures(store, key).catch(() => undefined), split);
  const died =
    before?.attempt !== undefined
      ? `the invocation that received it (receive ${before.attempt}) ended without an outcome: it crashed, ran out of memory or reached Lambda's timeout`
      : undefined;
  const failures = (before?.failures ?? 0) + (died ? 1 : 0);
  const next: SplitFailures = {
    run: split.run,
    snapshot: split.snapshotId,
    failures,
    lastError: died ?? before?.lastError ?? '',
    updated: now,
    attempt: receiveCount,
  };
  await store.put(key, utf8(JSON.stringify(next)));
  return { failures, ...(died ? { died } : {}) };
}

/** Ends the split's noted attempt without counting it (a retry that was not the split's own failure). */
export async function endSplitAttempt(
  store: ObjectStore,
  tablePath: string,
  consumerId: string,
  split: FailedSplit,
  now = Date.now(),
): Promise<void> {
  const key = splitFailuresKey(tablePath, consumerId, split.partition, split.bucket);
  const before = countOf(await readSplitFailures(store, key), split);
  if (before?.attempt === undefined) return;
  const { attempt: _ended, ...rest } = before;
  await store.put(key, utf8(JSON.stringify({ ...rest, updated: now })));
}
