/**
 * Discovery: one run reads a consumer's position, folds in what readers delivered, plans the
 * splits of every new snapshot (up to a bound), sends them to the split queue and records how far
 * it planned with a compare-and-swap on the consumer file.
 *
 * Sends come before the conditional write. A run that crashes or loses the write has sent splits
 * the next run plans again under the same deduplication ids (consumer/snapshot/partition/bucket):
 * the queue drops them within its deduplication window, and readers drop any later copy because
 * their bucket's progress is already past it. Recording first and sending after could instead
 * lose splits for good.
 */
import { randomUUID } from 'node:crypto';
import { listAll } from '../store/object-store.js';
import type { Table } from '../table/table.js';
import { ConsumerExpiredError } from '../errors.js';
import { checkOpenedTable, openedTableUuid } from './table-identity.js';
import {
  deleteTombstone,
  readConsumer,
  readTombstone,
  withGap,
  writeConsumer,
  type Consumer,
  type ConsumerGap,
  type ConsumerState,
  type ConsumerTombstone,
} from '../snapshot/consumer.js';
import { keepLeaseToken } from './lease.js';
import { bucketKey, foldProgress, nextSnapshotOf, parseBucketKey, writeBucketProgress } from './progress.js';
import { encodeSplitMessage, type SplitMessage } from './split-message.js';
import { splitRefPrefix } from '../snapshot/consumer.js';
import type { SendRequest, SplitQueue } from './split-queue.js';
import { planFollowUp, planFull, readForPlan, resolveStart } from './stream-scan.js';
import { streamsOverwrite } from '../table/follow-up.js';
import { resolveStreamOptions, type ResolvedStreamOptions, type StreamOptions } from './stream-options.js';

/** Options of a discovery run. */
export interface DiscoveryOptions extends StreamOptions {
  /** Snapshots planned at most per run; the next run continues. @default 64 */
  maxSnapshotsPerRun?: number;
  /** File lists above this many bytes of JSON go by reference. */
  maxInlineBytes?: number;
  now?: () => number;
}

/** What one discovery run did. */
export interface DiscoveryResult {
  /** Snapshots planned by this run (inclusive), if any. */
  planned?: { from: number; to: number };
  /** Split messages sent (duplicates included). */
  sent: number;
  /** Sends the queue recognised as duplicates of earlier ones. */
  duplicates: number;
  /** The consumer's position after the run. */
  nextSnapshot: number;
  plannedSnapshot: number;
  /** True when everything committed when the run started is planned. */
  caughtUp: boolean;
  /** True when another discovery moved the consumer first: this run recorded nothing. */
  lostRace: boolean;
  /** OVERWRITE snapshots planned past without their changes (`streaming-read-overwrite` false): a reader should warn. */
  overwritesSkipped: number[];
  /**
   * Expired snapshots this run skipped under `scan.on-expired = skip-to-earliest` (also recorded in
   * the consumer's `gaps`): their changes are lost to the consumer, and a reader must say so.
   */
  gaps: ConsumerGap[];
}

const SEND_BATCH = 10; // SQS SendMessageBatch maximum

/**
 * The consumer, created at the stream's start position when it does not exist yet. Created
 * before anything is sent, so that expiry holds the start snapshot from the first moment.
 */
export async function ensureConsumer(
  table: Table,
  consumerId: string,
  opts: StreamOptions = {},
  now = Date.now,
  /** Told when resuming an expired id skips snapshots that expired meanwhile (the skip is recorded in the consumer's `gaps` too). */
  onGap?: (gap: ConsumerGap) => void,
): Promise<Consumer> {
  for (;;) {
    const found = await readConsumer(table.store, table.path, consumerId);
    const uuid = openedTableUuid(table);
    // A consumer made for another table of this name: if this reader's table is the one that is
    // gone, it stops (TableNotFoundError); otherwise the file is a leftover of a dropped table,
    // and this table's consumer starts afresh instead of inheriting its position.
    const leftover = found?.tableUuid !== undefined && uuid !== undefined && found.tableUuid !== uuid;
    if (leftover) await checkOpenedTable(table);
    const existing = leftover ? undefined : found;
    if (existing?.run !== undefined) return existing;
    // A consumer file written by other means (no run yet) gets its run before anything is sent
    // under it; a new one starts at the scan mode's position — unless the id expired.
    // Never create consumer state in the folder of a dropped table.
    if (!existing) await checkOpenedTable(table);
    const tombstone = existing || leftover ? undefined : await readTombstone(table.store, table.path, consumerId);
    const state = existing
      ? { ...existing, run: randomUUID(), ...(uuid === undefined ? {} : { tableUuid: uuid }) }
      : tombstone
        ? await resumeExpired(table, tombstone, opts, now())
        : await startState(table, resolveStreamOptions(table, opts), now());
    const { id: _id, etag: _etag, ...stored } = state as Consumer;
    const created = await writeConsumer(table.store, table.path, consumerId, stored, found ? found.etag : null);
    if (created && tombstone) await forgetTombstone(table, tombstone);
    if (created) for (const gap of state.gaps ?? []) onGap?.(gap);
    // Won or lost, the file now has a run: read whichever one landed.
  }
}

/**
 * The start of an expired consumer id resumed with the user's consent: `skip-to-earliest` goes on
 * from its last position, or from the earliest snapshot when that has expired too (the gap the
 * user accepted); an explicit fresh start (`ignoreProgress`) starts at the scan mode. Without
 * either: ConsumerExpiredError naming the last position and what may be lost.
 */
async function resumeExpired(
  table: Table,
  t: ConsumerTombstone,
  opts: StreamOptions,
  now: number,
): Promise<ConsumerState> {
  const resolved = resolveStreamOptions(table, opts);
  if (resolved.ignoreProgress) return startState(table, resolved, now);
  const earliest = await table.snapshots.earliestId();
  const lost = earliest !== undefined && earliest > t.nextSnapshot ? { from: t.nextSnapshot, to: earliest } : undefined;
  if (resolved.onExpired === 'skip-to-earliest') {
    // The gap is what has expired now, not what had when the id was found expired: snapshots can
    // expire between the two (nothing holds them), and what is skipped is recorded and reported.
    const gaps = lost ? { gaps: [{ ...lost, at: now, reason: 'consumer-expired' as const }] } : {};
    const next = Math.max(t.nextSnapshot, earliest ?? t.nextSnapshot);
    const run = randomUUID();
    // Buckets that had delivered beyond the position go on from where they were, under the new
    // run: written before the consumer file, so no split of the new run is read without them.
    await Promise.all(
      Object.entries(t.delivered ?? {}).map(([key, snapshot]) => {
        const { partition, bucket } = parseBucketKey(key);
        return writeBucketProgress(table.store, table.path, t.id, partition, bucket, {
          run,
          snapshot,
          updated: now,
          ...uuidOf(table),
        });
      }),
    );
    // A stream that had not delivered its first full state yet still starts with it.
    const full = t.fullSnapshot !== undefined && t.fullSnapshot === next ? { fullSnapshot: next } : {};
    return {
      nextSnapshot: next,
      plannedSnapshot: next - 1,
      lastUpdated: now,
      run,
      buckets: {},
      ...full,
      ...gaps,
      ...uuidOf(table),
    };
  }
  const when = new Date(t.expiredAt).toISOString();
  throw new ConsumerExpiredError(
    `consumer ${t.id} of ${table.name} expired at ${when} (${t.reason}); its last position was snapshot ${t.nextSnapshot}. ` +
      (lost
        ? `Snapshots ${lost.from}..${lost.to - 1} have expired since: their changes are lost to this consumer. `
        : `Snapshots from ${t.nextSnapshot} on may still exist, but nothing holds them any more: those that expire before the id is resumed are skipped, and reported as a gap. `) +
      'Resume it with --on-expired skip-to-earliest (scan.on-expired) to accept the gap, or start it fresh with --ignore-progress',
    t.id,
    t.nextSnapshot,
    lost,
  );
}

/**
 * Starts the consumer's stream again from the scan mode, ignoring its position (Paimon's
 * `consumer.ignore-progress`): a new run, so readers drop messages and progress of the old one.
 */
export async function resetConsumer(
  table: Table,
  consumerId: string,
  opts: StreamOptions = {},
  now = Date.now,
  /** Told when the start had expired and was skipped (skip-to-earliest; recorded in the consumer's `gaps` too). */
  onGap?: (gap: ConsumerGap) => void,
): Promise<Consumer> {
  const state = await startState(table, resolveStreamOptions(table, opts), now());
  await writeConsumer(table.store, table.path, consumerId, state);
  for (const gap of state.gaps ?? []) onGap?.(gap);
  const tombstone = await readTombstone(table.store, table.path, consumerId);
  if (tombstone) await forgetTombstone(table, tombstone);
  return (await readConsumer(table.store, table.path, consumerId))!;
}

/**
 * Makes the next discovery plan again from the consumer's `nextSnapshot`: for a queue that did
 * not survive a restart (the in-process one), whose undelivered splits are gone with it. Splits
 * delivered before are planned again too and dropped by readers (their bucket's progress is past
 * them), so nothing is delivered twice and nothing is skipped.
 */
export async function rewindPlanning(
  table: Table,
  consumerId: string,
  opts: StreamOptions = {},
  now = Date.now,
  onGap?: (gap: ConsumerGap) => void,
): Promise<Consumer> {
  for (;;) {
    const c = await ensureConsumer(table, consumerId, opts, now, onGap);
    const folded = await foldProgress(table.store, table.path, consumerId, stateOf(c));
    const rewound: ConsumerState = {
      ...folded,
      plannedSnapshot: folded.nextSnapshot - 1,
      buckets: {},
      lastUpdated: now(),
    };
    if (await writeConsumer(table.store, table.path, consumerId, stateOf(rewound), c.etag)) {
      return (await readConsumer(table.store, table.path, consumerId))!;
    }
  }
}

/** Deletes the tombstone of a resumed id, keeping its lease's fencing token (lease.ts keepLeaseToken). */
async function forgetTombstone(table: Table, t: ConsumerTombstone): Promise<void> {
  if (t.leaseToken !== undefined)
    await keepLeaseToken(table.store, table.path, t.id, t.leaseToken, openedTableUuid(table));
  await deleteTombstone(table.store, table.path, t.id);
}

async function startState(table: Table, opts: ResolvedStreamOptions, now: number): Promise<ConsumerState> {
  const start = await resolveStart(table, opts);
  // A start that had expired, skipped with the user's consent: recorded and reported, never silent.
  const gaps: ConsumerGap[] | undefined = start.skipped
    ? [{ ...start.skipped, at: now, reason: 'snapshot-expired' }]
    : undefined;
  return {
    ...(gaps ? { gaps } : {}),
    nextSnapshot: start.snapshotId,
    plannedSnapshot: start.snapshotId - 1,
    lastUpdated: now,
    run: randomUUID(),
    buckets: {},
    ...(start.full ? { fullSnapshot: start.snapshotId } : {}),
    ...uuidOf(table),
  };
}

/** The `tableUuid` field a new consumer records (none for a table from before UUIDs). */
function uuidOf(table: Table): { tableUuid?: string } {
  const uuid = openedTableUuid(table);
  return uuid === undefined ? {} : { tableUuid: uuid };
}

/** One discovery run for `consumerId` of `table` (see the file comment). */
export async function discover(
  table: Table,
  queue: SplitQueue,
  consumerId: string,
  opts: DiscoveryOptions = {},
): Promise<DiscoveryResult> {
  const now = opts.now ?? Date.now;
  const streamOpts = resolveStreamOptions(table, opts);
  const gaps: ConsumerGap[] = [];
  const consumer = await ensureConsumer(table, consumerId, opts, now, (g) => gaps.push(g));
  const folded = await foldProgress(table.store, table.path, consumerId, stateOf(consumer));
  const latest = (await table.snapshots.latestId()) ?? 0;
  const firstPlanned = (folded.plannedSnapshot ?? folded.nextSnapshot - 1) + 1;
  const plan = await planSnapshots(table, consumerId, consumer.run!, folded, latest, { ...opts, streamOpts }, now);
  const { planned, buckets, skipped } = plan;

  const { sent, duplicates, refSnapshots } = await sendAll(table, queue, plan.messages, opts.maxInlineBytes);
  // Every snapshot below it is delivered: all its splits were planned and no bucket waits on it.
  const nextSnapshot = nextSnapshotOf(plan.state.nextSnapshot, planned, buckets);
  const splitRefs = [...new Set([...(plan.state.splitRefs ?? []), ...refSnapshots])];
  // File lists by reference below nextSnapshot belong to delivered splits: safe to delete now,
  // whatever happens to the write below (a later run deletes again, which is harmless).
  const done = splitRefs.filter((s) => s < nextSnapshot);
  await Promise.all(done.map((s) => deletePrefix(table, splitRefPrefix(table.path, consumerId, s))));
  const state: ConsumerState = {
    ...plan.state,
    nextSnapshot,
    plannedSnapshot: planned,
    buckets,
    splitRefs: splitRefs.filter((s) => s >= nextSnapshot),
    lastUpdated:
      nextSnapshot !== consumer.nextSnapshot || planned !== consumer.plannedSnapshot ? now() : consumer.lastUpdated,
  };
  const changed =
    JSON.stringify(stateOf(consumer)) !== JSON.stringify(stateOf({ ...state, lastUpdated: consumer.lastUpdated }));
  const won = !changed || (await writeConsumer(table.store, table.path, consumerId, stateOf(state), consumer.etag));
  return {
    planned: planned >= firstPlanned ? { from: firstPlanned, to: planned } : undefined,
    sent,
    duplicates,
    nextSnapshot: won ? state.nextSnapshot : consumer.nextSnapshot,
    plannedSnapshot: won ? planned : (consumer.plannedSnapshot ?? consumer.nextSnapshot - 1),
    caughtUp: planned >= latest,
    lostRace: !won,
    overwritesSkipped: won ? plan.overwritesSkipped : [],
    // Skips of a run that lost its race were not recorded: the run that won made (and reports) its own.
    gaps: [...gaps, ...(won ? skipped : [])],
  };
}

/** What one discovery run planned: the split messages, the consumer's state and buckets after them, the gaps it skipped. */
interface SnapshotPlan {
  state: ConsumerState;
  /** The last snapshot planned. */
  planned: number;
  buckets: NonNullable<ConsumerState['buckets']>;
  messages: SplitMessage[];
  skipped: ConsumerGap[];
  overwritesSkipped: number[];
}

/** Plans the splits of the snapshots after the consumer's last planned one, up to `maxSnapshotsPerRun` and the latest visible. */
async function planSnapshots(
  table: Table,
  consumerId: string,
  run: string,
  folded: ConsumerState,
  latest: number,
  opts: { maxSnapshotsPerRun?: number; streamOpts: ResolvedStreamOptions },
  now: () => number,
): Promise<SnapshotPlan> {
  const { streamOpts } = opts;
  let state = folded;
  let planned = state.plannedSnapshot ?? state.nextSnapshot - 1;
  const buckets = { ...(state.buckets ?? {}) };
  const bound = Math.min(latest, planned + (opts.maxSnapshotsPerRun ?? 64));
  const messages: SplitMessage[] = [];
  const skipped: ConsumerGap[] = [];
  const overwritesSkipped: number[] = [];
  for (let id = planned + 1; id <= bound; id++) {
    const full = state.fullSnapshot === id;
    // An expired snapshot is planned from its long-lived changelog when one is kept (changes only).
    const found = await readForPlan(table, id, streamOpts, full);
    if (found === undefined) break; // not visible yet: the next run gets it
    if ('skipTo' in found) {
      // Below the earliest: the consumer fell behind expiry (a live consumer holds expiry back,
      // an expired one does not). No silent loss: readForPlan failed unless the user accepted the gap.
      const earliest = found.skipTo;
      for (const [k, b] of Object.entries(buckets)) if (b.lastPlanned < earliest) delete buckets[k];
      const gap: ConsumerGap = { from: id, to: earliest, at: now(), reason: 'snapshot-expired' };
      skipped.push(gap);
      state = { ...state, nextSnapshot: Math.max(state.nextSnapshot, earliest), gaps: withGap(state.gaps, gap) };
      planned = earliest - 1;
      id = planned;
      continue;
    }
    const snapshot = found;
    if (!full && snapshot.commitKind === 'OVERWRITE' && !streamsOverwrite(table, snapshot)) overwritesSkipped.push(id);
    const splits = full ? await planFull(table, snapshot) : await planFollowUp(table, snapshot);
    for (const split of splits) {
      const key = bucketKey(split.partition, split.bucket);
      const pending = buckets[key];
      messages.push({
        ...split,
        table: table.name,
        tablePath: table.path,
        consumerId,
        run,
        prev: pending?.lastPlanned,
      });
      buckets[key] = { nextSnapshot: pending?.nextSnapshot ?? id, lastPlanned: id };
    }
    planned = id;
  }
  return { state, planned, buckets, messages, skipped, overwritesSkipped };
}

/** The stored fields of a consumer, in a fixed order (so that unchanged state is not rewritten). */
function stateOf(c: ConsumerState): ConsumerState {
  const s: ConsumerState = {
    nextSnapshot: c.nextSnapshot,
    lastUpdated: c.lastUpdated,
    plannedSnapshot: c.plannedSnapshot ?? c.nextSnapshot - 1,
    buckets: c.buckets ?? {},
    run: c.run,
  };
  if (c.fullSnapshot !== undefined) s.fullSnapshot = c.fullSnapshot;
  if (c.tableUuid !== undefined) s.tableUuid = c.tableUuid;
  if (c.splitRefs !== undefined && c.splitRefs.length > 0) s.splitRefs = c.splitRefs;
  if (c.gaps !== undefined && c.gaps.length > 0) s.gaps = c.gaps;
  return s;
}

async function sendAll(
  table: Table,
  queue: SplitQueue,
  messages: SplitMessage[],
  maxInlineBytes?: number,
): Promise<{ sent: number; duplicates: number; refSnapshots: number[] }> {
  const requests: SendRequest[] = [];
  const refSnapshots = new Set<number>();
  for (const m of messages) {
    const { request, byReference } = await encodeSplitMessage(table.store, m, maxInlineBytes);
    if (byReference) refSnapshots.add(m.snapshotId);
    requests.push(request);
  }
  let duplicates = 0;
  // In snapshot order, batch after batch: per-group order is send order.
  for (let i = 0; i < requests.length; i += SEND_BATCH) {
    for (const r of await queue.send(requests.slice(i, i + SEND_BATCH))) if (r.duplicate) duplicates++;
  }
  return { sent: requests.length, duplicates, refSnapshots: [...refSnapshots] };
}

async function deletePrefix(table: Table, prefix: string): Promise<void> {
  for (const o of await listAll(table.store, prefix)) await table.store.delete(o.key);
}
