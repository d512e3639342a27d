/**
 * Consumer positions as table files: `consumer/consumer-<id>` holds `nextSnapshot`, the first
 * snapshot the consumer still needs — every snapshot below it has been fully delivered to its
 * sink. Expiry never removes a snapshot at or after the smallest live consumer's `nextSnapshot`.
 */
import * as v from 'valibot';
import { InvalidArgumentError, ObjectNotFoundError } from '../errors.js';
import { jsonInt, jsonIntMap, jsonTime, type JsonSchema } from '../json.js';
import { parseJsonObject } from '../store/json-file.js';
import { listAll, utf8, type ObjectStore } from '../store/object-store.js';

/** A bucket with planned splits not yet known to be delivered. */
export interface ConsumerBucketProgress {
  /** No split of this (partition, bucket) below this snapshot is undelivered. */
  nextSnapshot: number;
  /** The newest snapshot discovery planned a split of this bucket for. */
  lastPlanned: number;
}

/** The JSON content of a consumer file. */
export interface ConsumerState {
  nextSnapshot: number;
  /** Epoch ms of the last change of the position (also what consumer expiration looks at). */
  lastUpdated: number;
  /** Highest snapshot discovery has planned splits for (discovery's own progress). */
  plannedSnapshot?: number;
  /**
   * Buckets (`[partition/]bucket-<n>`) with undelivered planned splits, folded into nextSnapshot
   * from the progress readers record; a bucket leaves the map once everything planned is delivered.
   */
  buckets?: Record<string, ConsumerBucketProgress>;
  /** Identity of the consumer's current stream; a reset starts a new run and readers drop older messages. */
  run?: string;
  /** The snapshot whose full state is the stream's first delivery (scan.mode latest-full, from-snapshot-full). */
  fullSnapshot?: number;
  /** Snapshots with file lists sent by reference, deleted once the consumer has moved past them. */
  splitRefs?: number[];
  /**
   * The UUID of the table the consumer was made for (lib/stream/table-identity.ts): a consumer
   * file left by a dropped table is never inherited by a new table of the same name.
   */
  tableUuid?: string;
  /**
   * Snapshot ranges this consumer skipped because they had expired before it read them (accepted
   * with `scan.on-expired = skip-to-earliest`): their changes never reached its sink. Oldest first,
   * the last MAX_CONSUMER_GAPS kept; `varve sys <table> consumers` shows them.
   */
  gaps?: ConsumerGap[];
}

/** Snapshots `from`..`to − 1` a consumer skipped: they had expired, and their changes are lost to it. */
export interface ConsumerGap {
  from: number;
  /** The first snapshot after the gap (exclusive end). */
  to: number;
  /** When the consumer skipped them (epoch ms). */
  at: number;
  /** `consumer-expired`: the id itself had expired and was resumed; `snapshot-expired`: its next snapshot had expired. */
  reason: 'consumer-expired' | 'snapshot-expired';
}

/** How many gaps a consumer file keeps (the newest). */
const MAX_CONSUMER_GAPS = 20;

/** `gaps` with `gap` added (the newest MAX_CONSUMER_GAPS kept). */
export function withGap(gaps: ConsumerGap[] | undefined, gap: ConsumerGap): ConsumerGap[] {
  return [...(gaps ?? []), gap].slice(-MAX_CONSUMER_GAPS);
}

/** `3..7` for a gap (inclusive, as users count snapshots). */
export function describeGap(gap: Pick<ConsumerGap, 'from' | 'to'>): string {
  return gap.to - 1 > gap.from ? `${gap.from}..${gap.to - 1}` : `${gap.from}`;
}

/** A consumer file as saved; `lastUpdated` is absent in files of early versions (the object's time stands in). */
const ConsumerStateSchema: JsonSchema<Omit<ConsumerState, 'lastUpdated'> & { lastUpdated?: number }> = v.looseObject({
  nextSnapshot: jsonInt,
  lastUpdated: v.optional(jsonTime),
  plannedSnapshot: v.optional(jsonInt),
  buckets: v.optional(v.record(v.string(), v.looseObject({ nextSnapshot: jsonInt, lastPlanned: jsonInt }))),
  run: v.optional(v.string()),
  fullSnapshot: v.optional(jsonInt),
  splitRefs: v.optional(v.array(jsonInt)),
  tableUuid: v.optional(v.string()),
  gaps: v.optional(
    v.array(
      v.looseObject({
        from: jsonInt,
        to: jsonInt,
        at: jsonTime,
        reason: v.picklist(['consumer-expired', 'snapshot-expired']),
      }),
    ),
  ),
});

export interface Consumer extends ConsumerState {
  id: string;
  etag: string;
}

const CONSUMER_ID = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;

/** Throws InvalidArgumentError unless `id` is a safe consumer id. */
export function checkConsumerId(id: string): void {
  if (!CONSUMER_ID.test(id) || id.includes('..')) {
    throw new InvalidArgumentError(
      `consumer id "${id}" is not valid; use letters, digits, '_', '-' and '.' (at most 128 characters)`,
    );
  }
}

function consumerKeyOf(tablePath: string, id: string): string {
  return `${tablePath}/consumer/consumer-${id}`;
}

/**
 * Folder of a snapshot's by-reference file lists. Named `consumer-<id>@splits/`: it shares the
 * consumer file's name prefix (one IAM grant covers both) and '@' never occurs in a consumer id.
 */
export function splitRefPrefix(tablePath: string, consumerId: string, snapshotId?: number): string {
  return `${tablePath}/consumer/consumer-${consumerId}@splits/${snapshotId === undefined ? '' : `${snapshotId}/`}`;
}

/**
 * A by-reference split file list (`<splitRefPrefix>/<snapshot>/[<partition>/]bucket-<n>.json`,
 * written by lib/stream/split-message.ts): the split's files (DataFileMeta; `file` checks what the
 * reader uses of each), or an overwrite split's `{ files, beforeFiles }`.
 */
export function splitFileListSchema<T>(file: JsonSchema<T>): JsonSchema<T[] | { files: T[]; beforeFiles?: T[] }> {
  return v.union([v.array(file), v.looseObject({ files: v.array(file), beforeFiles: v.optional(v.array(file)) })]);
}

/** Reads a consumer, or undefined when it does not exist. */
export async function readConsumer(store: ObjectStore, tablePath: string, id: string): Promise<Consumer | undefined> {
  checkConsumerId(id);
  const key = consumerKeyOf(tablePath, id);
  try {
    const obj = await store.get(key);
    const state = parseJsonObject(store, key, obj.body, ConsumerStateSchema);
    return { ...state, lastUpdated: state.lastUpdated ?? obj.lastModified, id, etag: obj.etag };
  } catch (e) {
    if (e instanceof ObjectNotFoundError) return undefined;
    throw e;
  }
}

/**
 * Writes a consumer state. With `expectEtag` the write is a compare-and-swap (returns false when
 * someone else moved the consumer first); with `null` it must not exist yet.
 */
export async function writeConsumer(
  store: ObjectStore,
  tablePath: string,
  id: string,
  state: ConsumerState,
  expectEtag?: string | null,
): Promise<boolean> {
  checkConsumerId(id);
  const key = consumerKeyOf(tablePath, id);
  const body = utf8(JSON.stringify(state));
  if (expectEtag === undefined) {
    await store.put(key, body);
    return true;
  }
  if (expectEtag === null) return (await store.putIfAbsent(key, body)) !== undefined;
  try {
    return (await store.putIfMatch(key, body, expectEtag)) !== undefined;
  } catch (e) {
    if (e instanceof ObjectNotFoundError) return false;
    throw e;
  }
}

/** Every consumer of a table. */
export async function listConsumers(store: ObjectStore, tablePath: string): Promise<Consumer[]> {
  const prefix = `${tablePath}/consumer/consumer-`;
  const out: Consumer[] = [];
  for (const o of await listAll(store, prefix)) {
    const id = o.key.slice(prefix.length);
    if (!CONSUMER_ID.test(id)) continue;
    const c = await readConsumer(store, tablePath, id);
    if (c) out.push(c);
  }
  return out.sort((a, b) => a.id.localeCompare(b.id));
}

/** Removes a consumer (it no longer holds back expiry). */
export async function deleteConsumer(store: ObjectStore, tablePath: string, id: string): Promise<void> {
  checkConsumerId(id);
  await store.delete(consumerKeyOf(tablePath, id));
}

/**
 * What an expired consumer leaves behind (`consumer/consumer-<id>@expired`): its last position,
 * when and why it expired. Resuming the id fails with ConsumerExpiredError naming them, unless the
 * caller opts in to the gap; so an expiry is never mistaken for a new consumer.
 */
export interface ConsumerTombstone {
  id: string;
  /** The consumer's `nextSnapshot` when it expired: the first snapshot it had not read. */
  nextSnapshot: number;
  /** When the consumer last moved (epoch ms). */
  lastUpdated: number;
  /** When it expired (epoch ms). */
  expiredAt: number;
  reason: string;
  /**
   * Per bucket (`[partition/]bucket-<n>`), the last snapshot whose split the consumer's readers had
   * delivered when it expired: a resumed id goes on from there, so buckets that were ahead of
   * `nextSnapshot` are not handed their delivered splits again (per-key order).
   */
  delivered?: Record<string, number>;
  /** The snapshot whose full state the consumer had still to deliver first (ConsumerState.fullSnapshot, when not yet passed). */
  fullSnapshot?: number;
  /** The fencing token of its lease when the lease was deleted: the next lease of the id starts above it. */
  leaseToken?: number;
  /** The stream run that expired: a reader still delivering a split of it finds it here and drops the split. */
  run?: string;
}

export const ConsumerTombstoneSchema: JsonSchema<ConsumerTombstone> = v.looseObject({
  id: v.string(),
  nextSnapshot: jsonInt,
  lastUpdated: jsonTime,
  expiredAt: jsonTime,
  reason: v.string(),
  delivered: v.optional(jsonIntMap),
  fullSnapshot: v.optional(jsonInt),
  leaseToken: v.optional(jsonInt),
  run: v.optional(v.string()),
});

/** Key of a consumer's tombstone ('@' never occurs in a consumer id). */
export function tombstoneKey(tablePath: string, id: string): string {
  return `${tablePath}/consumer/consumer-${id}@expired`;
}

/** The tombstone of an expired consumer id, or undefined. */
export async function readTombstone(
  store: ObjectStore,
  tablePath: string,
  id: string,
): Promise<ConsumerTombstone | undefined> {
  checkConsumerId(id);
  const key = tombstoneKey(tablePath, id);
  try {
    return parseJsonObject(store, key, (await store.get(key)).body, ConsumerTombstoneSchema);
  } catch (e) {
    if (e instanceof ObjectNotFoundError) return undefined;
    throw e;
  }
}

/** Records that a consumer expired (before its file is removed). */
export async function writeTombstone(store: ObjectStore, tablePath: string, t: ConsumerTombstone): Promise<void> {
  checkConsumerId(t.id);
  await store.put(tombstoneKey(tablePath, t.id), utf8(JSON.stringify(t)));
}

/** Forgets a tombstone (the id was started again, with the user's consent). */
export async function deleteTombstone(store: ObjectStore, tablePath: string, id: string): Promise<void> {
  checkConsumerId(id);
  await store.delete(tombstoneKey(tablePath, id));
}

/** Every tombstone of a table, by id. */
export async function listTombstones(store: ObjectStore, tablePath: string): Promise<ConsumerTombstone[]> {
  const prefix = `${tablePath}/consumer/consumer-`;
  const out: ConsumerTombstone[] = [];
  for (const o of await listAll(store, prefix)) {
    if (!o.key.endsWith('@expired')) continue;
    const id = o.key.slice(prefix.length, -'@expired'.length);
    if (!CONSUMER_ID.test(id)) continue;
    const t = await readTombstone(store, tablePath, id);
    if (t) out.push(t);
  }
  return out.sort((a, b) => a.id.localeCompare(b.id));
}
