/**
 * Which snapshots one expiry run may expire: Paimon's range rules (ExpireSnapshotsImpl.expire)
 * with the retention resolved from the table options, the run's overrides and the consumers.
 */
import { InvalidArgumentError } from '../errors.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import { EXPIRY_FLOOR_MS } from '../snapshot/commit-steps.js';
import type { Consumer } from '../snapshot/consumer.js';
import type { Table } from '../table/table.js';

/** What a run keeps: counts, age and the per-run cap. */
export interface Retention {
  /** Snapshots always kept (the newest ones). */
  retainMin: number;
  /** Snapshots kept at most; older ones expire whatever their age. */
  retainMax: number;
  /** A snapshot is kept while its successor is younger than this (ms). */
  timeRetainedMs: number;
  /** Snapshots expired at most per run. */
  limit: number;
}

/** Per-run overrides of the table's retention options. */
export interface RetentionOverrides {
  retainMin?: number;
  retainMax?: number;
  olderThanMs?: number;
  limit?: number;
}

/** Why a run stopped where it did. */
export type ExpiryHold = 'retain-min' | 'consumer' | 'time' | 'limit' | 'floor';

/** The end of the range a run expires: snapshots [earliest, end) go; `end` is the new earliest. */
export interface ExpiryBound {
  end: number;
  heldBy: ExpiryHold;
  /** The consumer whose position is the bound, when `heldBy` is 'consumer'. */
  consumer?: { id: string; nextSnapshot: number };
}

function checkCount(name: string, v: number): number {
  if (!Number.isInteger(v) || v < 1) throw new InvalidArgumentError(`${name} must be a positive integer, got ${v}`);
  return v;
}

/** The retention of one run: the overrides, else the table's `snapshot.*` options. */
export function resolveRetention(table: Table, o: RetentionOverrides = {}): Retention {
  const opts = table.options;
  const retainMin = checkCount('retain-min', o.retainMin ?? opts.snapshotNumRetainedMin);
  const retainMax = checkCount('retain-max', o.retainMax ?? opts.snapshotNumRetainedMax);
  const timeRetainedMs = o.olderThanMs ?? opts.snapshotTimeRetained;
  const limit = checkCount('expire limit', o.limit ?? opts.snapshotExpireLimit);
  if (!Number.isFinite(timeRetainedMs) || timeRetainedMs < 0) {
    throw new InvalidArgumentError(
      `the time to retain snapshots must be a duration of 0 or more, got ${timeRetainedMs}`,
    );
  }
  if (retainMin > retainMax) {
    throw new InvalidArgumentError(
      `retain-min (${retainMin}) is larger than retain-max (${retainMax}); give a retain-max of at least ${retainMin} or a smaller retain-min`,
    );
  }
  return { retainMin, retainMax, timeRetainedMs, limit };
}

/** The retention of long-lived changelogs, and whether they outlive snapshots at all. */
export interface ChangelogRetention extends Retention {
  /** True when a `changelog.*` value exceeds the snapshot one: expiring a snapshot keeps its changelog (Paimon's decoupled changelog). */
  decoupled: boolean;
}

/**
 * The changelog retention of a run (Paimon's `changelog.num-retained.min/max`,
 * `changelog.time-retained`): an option set on the table, else the snapshot value in effect for
 * this run (so an unset changelog option follows the run's overrides). Changelogs are counted
 * like snapshots, from the latest snapshot back, snapshots and changelogs together.
 */
export function resolveChangelogRetention(table: Table, snapshots: Retention): ChangelogRetention {
  const opts = table.options;
  const pick = (key: string, snapshotValue: number, value: number) => (opts.has(key) ? value : snapshotValue);
  const retainMin = pick('changelog.num-retained.min', snapshots.retainMin, opts.changelogNumRetainedMin);
  const retainMax = Math.max(
    pick('changelog.num-retained.max', snapshots.retainMax, opts.changelogNumRetainedMax),
    retainMin,
  );
  const timeRetainedMs = pick('changelog.time-retained', snapshots.timeRetainedMs, opts.changelogTimeRetained);
  const decoupled =
    retainMin > snapshots.retainMin || retainMax > snapshots.retainMax || timeRetainedMs > snapshots.timeRetainedMs;
  return { retainMin, retainMax, timeRetainedMs, limit: snapshots.limit, decoupled };
}

/** The live consumer holding back expiry the most (smallest `nextSnapshot`), if any. */
function slowestConsumer(consumers: readonly Consumer[]): Consumer | undefined {
  let slowest: Consumer | undefined;
  for (const c of consumers) if (!slowest || c.nextSnapshot < slowest.nextSnapshot) slowest = c;
  return slowest;
}

/**
 * The end of the range to expire now (Paimon's rules, with one precise difference on time and a
 * floor):
 * - `min = max(latest − retainMax + 1, earliest)`: snapshots below it expire whatever their age;
 * - `end ≤ latest − retainMin + 1`, `≤` the smallest live consumer `nextSnapshot` (a consumer
 *   still needs that snapshot and every later one), `≤ earliest + limit`;
 * - from `min` on, snapshot `id` expires only when its successor `id + 1` was committed before
 *   `now − timeRetained`, i.e. `id` stopped being the table's state longer ago than the
 *   retention. Paimon tests the snapshot's own time instead, which expires the snapshot that was
 *   current at `now − timeRetained`; testing the successor keeps every instant of the retention
 *   window readable by time travel, at the cost of at most one more snapshot.
 * - beyond Paimon: whatever the counts and the time option say, a snapshot whose successor is
 *   younger than EXPIRY_FLOOR_MS (one minute) by `now` stays ('floor'). A committer bets that the
 *   snapshot it builds on, if young, is still there, so that the id it creates was never created
 *   and expired (lib/snapshot/commit-steps.ts): `snapshot.num-retained.max` or a zero
 *   `snapshot.time-retained` would otherwise let a burst of commits and an expiry run remove that
 *   id under the committer, whose commit would then land below the latest snapshot, unseen.
 *   Ids below `min` are read too (the plan reads them anyway, through the same `read`).
 * `read` returns a snapshot by id (undefined when absent).
 */
export async function expiryBound(args: {
  earliest: number;
  latest: number;
  retention: Retention;
  consumers: readonly Consumer[];
  now: number;
  read: (id: number) => Promise<Snapshot | undefined>;
}): Promise<ExpiryBound> {
  const { earliest, latest, retention, now } = args;
  const min = Math.max(latest - retention.retainMax + 1, earliest);
  let bound: ExpiryBound = { end: latest - retention.retainMin + 1, heldBy: 'retain-min' };
  const slowest = slowestConsumer(args.consumers);
  if (slowest && slowest.nextSnapshot < bound.end) {
    bound = {
      end: slowest.nextSnapshot,
      heldBy: 'consumer',
      consumer: { id: slowest.id, nextSnapshot: slowest.nextSnapshot },
    };
  }
  if (earliest + retention.limit < bound.end) bound = { end: earliest + retention.limit, heldBy: 'limit' };
  const threshold = now - retention.timeRetainedMs;
  const floor = now - EXPIRY_FLOOR_MS;
  for (let id = earliest; id < bound.end; id++) {
    const successor = await args.read(id + 1);
    // A missing successor (a concurrent expiry got there first) is no evidence of age: stop.
    if (successor === undefined || (id >= min && successor.timeMillis >= threshold)) {
      bound = { end: id, heldBy: 'time' };
      break;
    }
    if (successor.timeMillis >= floor) {
      bound = { end: id, heldBy: 'floor' };
      break;
    }
  }
  return { ...bound, end: Math.max(bound.end, earliest) };
}
