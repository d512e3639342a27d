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
import { ObjectNotFoundError } from '../errors.js';
import { fromUtf8, listAll, type ObjectInfo } from '../store/object-store.js';
import { deleteConsumer, listConsumers, readConsumer, tombstoneKey, writeTombstone, type Consumer } from '../snapshot/consumer.js';
import type { Table } from '../table/table.js';

/** Options of consumer expiration; unset ones come from the table options. */
export interface ExpireConsumersOptions {
  /** Epoch ms the run takes as now. @default Date.now() */
  now?: number;
  /** Overrides `consumer.expiration-time` (ms). */
  expirationMs?: number;
}

/** What consumer expiration did. */
export interface ExpireConsumersResult {
  /** Ids of the consumers removed. */
  expired: string[];
  /** The consumers left. */
  remaining: Consumer[];
  /** True when no expiration time is set: consumers live until deleted. */
  neverExpire: boolean;
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
  await writeTombstone(table.store, table.path, {
    id: c.id,
    nextSnapshot: c.nextSnapshot,
    lastUpdated: c.lastUpdated,
    expiredAt: now,
    reason: `idle for longer than consumer.expiration-time (${expirationMs} ms) while snapshot ${c.nextSnapshot} waited to be read`,
    delivered: await deliveredByBucket(table, c, prefix, own),
    ...(c.fullSnapshot !== undefined && c.fullSnapshot >= c.nextSnapshot ? { fullSnapshot: c.fullSnapshot } : {}),
    // The lease is deleted below, but its fencing token must never start again at 1: the next
    // lease of this id starts above it (lib/stream/lease.ts). One spare for an acquire racing this.
    ...(token === undefined ? {} : { leaseToken: token + 1 }),
  });
  // The tombstone stays; the progress, split and lease objects go.
  const keep = new Set([tombstoneKey(table.path, c.id)]);
  const doomed = own.filter((o) => !keep.has(o.key));
  await runLimited(doomed.map((o) => () => table.store.delete(o.key)), 16);
  await deleteConsumer(table.store, table.path, c.id);
}

/** The consumer's per-bucket delivered snapshots of its current run, from its readers' progress objects (`@progress/<bucket key>`). */
async function deliveredByBucket(table: Table, c: Consumer, prefix: string, own: ObjectInfo[]): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  const progress = own.filter((o) => o.key.startsWith(`${prefix}progress/`));
  await runLimited(
    progress.map((o) => async () => {
      try {
        const p = JSON.parse(fromUtf8((await table.store.get(o.key)).body)) as { run?: string; snapshot?: number };
        if (p.run === c.run && Number.isInteger(p.snapshot)) out[o.key.slice(`${prefix}progress/`.length)] = p.snapshot!;
      } catch (e) {
        // Gone meanwhile, or unreadable: that bucket resumes from the consumer's position (at-least-once).
        if (!(e instanceof ObjectNotFoundError) && !(e instanceof SyntaxError)) throw e;
      }
    }),
    16,
  );
  return out;
}

/** The fencing token of a consumer's lease object (`consumer-<id>@lease`), if it has one. */
async function leaseTokenOf(table: Table, id: string): Promise<number | undefined> {
  try {
    const lease = JSON.parse(fromUtf8((await table.store.get(`${table.path}/consumer/consumer-${id}@lease`)).body)) as { token?: unknown };
    return Number.isInteger(lease.token) ? (lease.token as number) : undefined;
  } catch (e) {
    if (e instanceof ObjectNotFoundError) return undefined;
    throw e;
  }
}

/** Removes the consumers of `table` idle for longer than `consumer.expiration-time`. */
export async function expireConsumers(table: Table, opts: ExpireConsumersOptions = {}): Promise<ExpireConsumersResult> {
  const consumers = await listConsumers(table.store, table.path);
  const expiration = opts.expirationMs ?? table.options.consumerExpirationTime;
  if (expiration === undefined || consumers.length === 0) {
    return { expired: [], remaining: consumers, neverExpire: expiration === undefined };
  }
  const now = opts.now ?? Date.now();
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
  return { expired, remaining, neverExpire: false };
}
