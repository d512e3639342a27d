/**
 * Consumer expiration (`consumer.expiration-time`, Paimon's ConsumerManager.expire): a consumer
 * that has stopped moving is removed, with its per-bucket progress and by-reference split lists,
 * so that it no longer holds back snapshot expiry. Without the option consumers never expire —
 * Paimon's default, and the reason its issue #3700 saw storage grow without bound; the CLI
 * prints a hint when a table has consumers and no expiration.
 *
 * Idle means: it has had something to read for longer than the expiration time and has not
 * moved. Precisely, a consumer at `nextSnapshot = N` expires when `now − max(lastUpdated,
 * commit time of snapshot N) > expiration`. A consumer that is caught up (N is not committed
 * yet) holds no snapshot and never expires — its position only changes when there is something
 * to read, so a long quiet spell on the table must not cost a live stream its position. Paimon
 * looks at the consumer file's modification time alone.
 */
import { runLimited } from '../concurrency.js';
import * as v from 'valibot';
import { CorruptMetadataError, ObjectNotFoundError } from '../errors.js';
import { jsonInt, parseJsonFile } from '../json.js';
import { objectLocation, readJsonFile } from '../store/json-file.js';
import { deleteIfMatch, listAll, type ObjectInfo } from '../store/object-store.js';
import {
  checkConsumerId,
  ConsumerTombstoneSchema,
  deleteConsumer,
  listConsumers,
  readConsumer,
  tombstoneKey,
  writeTombstone,
  type Consumer,
  type ConsumerTombstone,
} from '../snapshot/consumer.js';
import type { Table } from '../table/table.js';

/** Options of consumer expiration; unset ones come from the table options. */
export interface ExpireConsumersOptions {
  /** Epoch ms the run takes as now. @default Date.now() */
  now?: number;
  /** Overrides `consumer.expiration-time` (ms). */
  expirationMs?: number;
  /** Overrides `consumer.tombstone-retention` (ms). */
  tombstoneRetentionMs?: number;
}

/** What consumer expiration did. */
export interface ExpireConsumersResult {
  /** Ids of the consumers removed. */
  expired: string[];
  /** The consumers left. */
  remaining: Consumer[];
  /** True when no expiration time is set: consumers live until deleted. */
  neverExpire: boolean;
  /** Ids whose tombstone passed `consumer.tombstone-retention` and was removed (the id is free again). */
  removedTombstones: string[];
}

/** Prefix of a consumer's own objects besides its file: `consumer-<id>@progress/…`, `consumer-<id>@splits/…`. */
function consumerObjectsPrefix(tablePath: string, consumerId: string): string {
  // '@' never occurs in a consumer id, so this matches no other consumer's objects.
  return `${tablePath}/consumer/consumer-${consumerId}@`;
}

/** Epoch ms from which the consumer counts as idle (see the file comment), or undefined when it waits for nothing. */
async function idleSince(table: Table, c: Consumer, latest: number | undefined): Promise<number | undefined> {
  if (latest === undefined || c.nextSnapshot > latest) return undefined;
  const next = await table.snapshots.tryRead(c.nextSnapshot);
  // Its next snapshot has expired under it (it was not live): only its own clock counts.
  return next === undefined ? c.lastUpdated : Math.max(c.lastUpdated, next.timeMillis);
}

/**
 * Leaves a tombstone with the consumer's last position, then deletes its progress and split
 * objects and the consumer file (a crash in between is finished by the next run). The tombstone
 * comes first: from then on resuming the id fails loudly instead of starting a new consumer.
 */
async function removeConsumer(table: Table, c: Consumer, now: number, expirationMs: number): Promise<void> {
  const prefix = consumerObjectsPrefix(table.path, c.id);
  const own = await listAll(table.store, prefix);
  const token = await leaseTokenOf(table, c.id);
  const progressPrefix = `${prefix}progress/`;
  const delivered: Record<string, number> = {};
  const tombstone = (): ConsumerTombstone => ({
    id: c.id,
    nextSnapshot: c.nextSnapshot,
    lastUpdated: c.lastUpdated,
    expiredAt: now,
    reason: `idle for longer than consumer.expiration-time (${expirationMs} ms) while snapshot ${c.nextSnapshot} waited to be read`,
    delivered: { ...delivered },
    ...(c.fullSnapshot !== undefined && c.fullSnapshot >= c.nextSnapshot ? { fullSnapshot: c.fullSnapshot } : {}),
    // The lease is deleted below, but its fencing token must never start again at 1: the next
    // lease of this id starts above it (lib/stream/lease.ts). One spare for an acquire racing this.
    ...(token === undefined ? {} : { leaseToken: token + 1 }),
    ...(c.run === undefined ? {} : { run: c.run }),
  });
  const progress = own.filter((o) => o.key.startsWith(progressPrefix));
  const seen = await readProgress(table, c, progressPrefix, progress, delivered);
  await writeTombstone(table.store, table.path, tombstone());
  // Readers may still be delivering (an expired consumer's reader is not told): each progress
  // object goes only if it is still the version read (conditional delete), else it is read again,
  // so the tombstone never holds a bucket behind what its sink received; progress created since
  // the listing is found by listing again. After its delete a reader's CAS fails, and it stops.
  let moved = false;
  for (let round = 0; round < 3; round++) {
    for (const [key, etag] of seen)
      if (await dropProgress(table, c, progressPrefix, key, etag, delivered)) moved = true;
    const later = (await listAll(table.store, progressPrefix)).filter((o) => !seen.has(o.key));
    if (later.length === 0) break;
    seen.clear();
    for (const [key, etag] of await readProgress(table, c, progressPrefix, later, delivered)) seen.set(key, etag);
    moved = true;
  }
  if (moved) await writeTombstone(table.store, table.path, tombstone());
  // The tombstone stays; the split and lease objects go too.
  const keep = new Set([tombstoneKey(table.path, c.id)]);
  const doomed = own.filter((o) => !keep.has(o.key) && !o.key.startsWith(progressPrefix));
  await runLimited(
    doomed.map((o) => () => table.store.delete(o.key)),
    16,
  );
  await deleteConsumer(table.store, table.path, c.id);
}

/**
 * Reads progress objects of the consumer's current run into `delivered` (bucket key → last
 * delivered snapshot); returns each object's etag (objects gone or unreadable are left out).
 */
async function readProgress(
  table: Table,
  c: Consumer,
  progressPrefix: string,
  objects: ObjectInfo[],
  delivered: Record<string, number>,
): Promise<Map<string, string>> {
  const etags = new Map<string, string>();
  await runLimited(
    objects.map((o) => async () => {
      try {
        const obj = await table.store.get(o.key);
        etags.set(o.key, obj.etag);
        note(c, o.key.slice(progressPrefix.length), obj.body, delivered);
      } catch (e) {
        // Gone meanwhile: nothing to keep. Unreadable: deleted without a position (that bucket resumes
        // from the consumer's position, at-least-once).
        if (e instanceof CorruptMetadataError) return;
        if (!(e instanceof ObjectNotFoundError)) throw e;
      }
    }),
    16,
  );
  return etags;
}

/** Records a progress body's snapshot for `bucket` when it belongs to the consumer's run (never lowering it). */
function note(c: Consumer, bucket: string, body: Uint8Array, delivered: Record<string, number>): void {
  const p = parseJsonFile(body, ProgressPositionSchema, `progress of bucket ${bucket} of consumer ${c.id}`);
  if (p.run === c.run) delivered[bucket] = Math.max(delivered[bucket] ?? 0, p.snapshot);
}

/**
 * Deletes one progress object if it is still at `etag`; when a reader moved it meanwhile, takes
 * the new position into `delivered` and tries again. Returns true when the position moved.
 */
async function dropProgress(
  table: Table,
  c: Consumer,
  progressPrefix: string,
  key: string,
  etag: string,
  delivered: Record<string, number>,
): Promise<boolean> {
  let moved = false;
  for (let current = etag, i = 0; ; i++) {
    if (i >= 50) {
      // A reader that keeps moving it is not idle; its position is taken as last read.
      await table.store.delete(key);
      return moved;
    }
    if (await deleteIfMatch(table.store, key, current)) return moved;
    let obj;
    try {
      obj = await table.store.get(key);
    } catch (e) {
      if (e instanceof ObjectNotFoundError) return moved;
      throw e;
    }
    note(c, key.slice(progressPrefix.length), obj.body, delivered);
    current = obj.etag;
    moved = true;
  }
}

/** What expiry reads of a progress object (lib/stream/progress.ts BucketProgress). */
const ProgressPositionSchema = v.looseObject({ run: v.string(), snapshot: jsonInt });

/** What expiry reads of a lease object (lib/stream/lease.ts ConsumerLease). */
const LeaseTokenSchema = v.looseObject({ token: jsonInt });

/** The fencing token of a consumer's lease object (`consumer-<id>@lease`), if it has one. */
async function leaseTokenOf(table: Table, id: string): Promise<number | undefined> {
  try {
    return (await readJsonFile(table.store, `${table.path}/consumer/consumer-${id}@lease`, LeaseTokenSchema)).value
      .token;
  } catch (e) {
    if (e instanceof ObjectNotFoundError) return undefined;
    throw e;
  }
}

/** Removes the consumers of `table` idle for longer than `consumer.expiration-time`. */
export async function expireConsumers(table: Table, opts: ExpireConsumersOptions = {}): Promise<ExpireConsumersResult> {
  const now = opts.now ?? Date.now();
  const retention = opts.tombstoneRetentionMs ?? table.options.consumerTombstoneRetention;
  const removedTombstones = retention === undefined ? [] : await removeOldTombstones(table, now, retention);
  const consumers = await listConsumers(table.store, table.path);
  const expiration = opts.expirationMs ?? table.options.consumerExpirationTime;
  if (expiration === undefined || consumers.length === 0) {
    return { expired: [], remaining: consumers, neverExpire: expiration === undefined, removedTombstones };
  }
  const latest = await table.snapshots.latestId();
  const expired: string[] = [];
  const remaining: Consumer[] = [];
  for (const c of consumers) {
    const since = await idleSince(table, c, latest);
    if (since === undefined || now - since <= expiration) {
      remaining.push(c);
      continue;
    }
    // It moved since the listing: alive after all.
    const again = await readConsumer(table.store, table.path, c.id);
    if (again === undefined || again.etag !== c.etag) {
      if (again) remaining.push(again);
      continue;
    }
    await removeConsumer(table, c, now, expiration);
    expired.push(c.id);
  }
  return { expired, remaining, neverExpire: false, removedTombstones };
}

/**
 * Removes the tombstones older than `retentionMs` (by `expiredAt`) of ids with no live consumer:
 * first whatever else the id left (`consumer-<id>@…`: progress a late reader wrote, a lease), then
 * the tombstone itself, only if unchanged since it was read (conditional delete). The tombstone
 * goes last, so an id is never free while objects of its expired run remain.
 */
async function removeOldTombstones(table: Table, now: number, retentionMs: number): Promise<string[]> {
  const removed: string[] = [];
  const suffix = '@expired';
  const prefix = `${table.path}/consumer/consumer-`;
  for (const o of await listAll(table.store, prefix)) {
    if (!o.key.endsWith(suffix)) continue;
    const id = o.key.slice(prefix.length, -suffix.length);
    try {
      checkConsumerId(id);
    } catch {
      continue; // not a tombstone of ours
    }
    let obj;
    try {
      obj = await table.store.get(o.key);
    } catch (e) {
      if (e instanceof ObjectNotFoundError) continue;
      throw e;
    }
    let t: ConsumerTombstone;
    try {
      t = parseJsonFile(obj.body, ConsumerTombstoneSchema, objectLocation(table.store, o.key));
    } catch {
      continue; // unreadable: never remove what cannot be judged
    }
    if (!Number.isFinite(t.expiredAt) || now - t.expiredAt <= retentionMs) continue;
    // A live consumer of the id (resumed, its tombstone not yet deleted): its resume removes it.
    if (await readConsumer(table.store, table.path, id)) continue;
    const leftovers = (await listAll(table.store, consumerObjectsPrefix(table.path, id))).filter(
      (x) => x.key !== o.key,
    );
    await runLimited(
      leftovers.map((x) => () => table.store.delete(x.key)),
      16,
    );
    if (await deleteIfMatch(table.store, o.key, obj.etag)) removed.push(id);
  }
  return removed;
}
