/**
 * The steps of the commit loop (commit-run.ts): the base it starts from, the duplicate checks,
 * creating the snapshot file (the commit point) and reading forward after a lost race. Each keeps
 * one protocol invariant, named where it is kept.
 */
import { CommitRetriesExhaustedError, SnapshotNotFoundError, isRetryable } from '../errors.js';
import { RetryBudget } from '../retry-budget.js';
import { COMMIT_UUID_PROPERTY, type CommitContext } from './commit-plan.js';
import { carriesIdentifier } from './commit-identifier.js';
import type { CommitOptions, CommitRequest } from './commit-request.js';
import type { Snapshot } from './snapshot.js';
import { snapshotBytes } from './snapshot-file.js';
import type { SnapshotManager } from './snapshot-manager.js';
import { displayTableName } from './paths.js';

/** What a commit call did. */
export interface CommitResult {
  /** The snapshot holding the commit (or, for a skipped empty commit, the latest snapshot). */
  snapshot: Snapshot;
  /** True when an earlier call with the same (commitUser, commitIdentifier, kind) had committed it. */
  alreadyCommitted: boolean;
  /** True when this call created the snapshot. */
  committed: boolean;
  /** Attempts at creating a snapshot file (1 when nothing raced). */
  attempts: number;
  /**
   * Set when the commit had landed earlier (alreadyCommitted) in a snapshot that has expired
   * since: that snapshot's id (`snapshot` is then the latest one, which does not hold it).
   */
  expiredSnapshotId?: number;
  /**
   * With batchIdentifiers: the batches (by index in the request) whose identifier had already
   * landed, each with the id of the snapshot holding it and that snapshot (undefined: it has
   * expired). They were left out of this commit.
   */
  landedBefore?: Map<number, LandedBatch>;
  /** The after-commit hook failed (inline compaction, the Iceberg export): the commit has landed all the same. */
  hookError?: Error;
}

/** Where a batch of a group commit had landed before (CommitResult.landedBefore). */
export interface LandedBatch {
  snapshotId: number;
  /** Undefined when that snapshot has expired. */
  snapshot?: Snapshot;
}

const DEDUP_READ_CHUNK = 16;

/*
 * Never re-create an expired id. put-if-absent of snapshot-N cannot tell a never-created id from
 * an expired one: had N been created and expired since the committer last looked, the put would
 * land the commit below the latest snapshot, where no reader of the latest sees it. Two facts
 * rule that out without a request in the common case:
 * - expiry deletes snapshot files oldest first, so N gone means N-1 went before it;
 * - expiry never deletes a snapshot whose successor's `timeMillis` is less than EXPIRY_FLOOR_MS
 *   old, whatever the retention options say (expiry-range.ts), and `timeMillis` never decreases
 *   with the id (commit-plan.ts).
 * So N-1 (the base) stays until its successor is EXPIRY_FLOOR_MS old, hence at least until
 * `base.timeMillis + EXPIRY_FLOOR_MS` on the expiry's clock. The bet (no check) holds when:
 * - the base is young: committed less than YOUNG_BASE_MS ago by this clock. With clocks at most
 *   MAX_CLOCK_SKEW_MS apart, the base is still there when the put lands (within
 *   PUT_LANDS_WITHIN_MS), so N was not expired before it; or
 * - N was shown not created at a time A (SnapshotManager.nextAbsentSince: this process created
 *   N-1 at A, or saw N missing at A and then N-1 present) less than SLOW_ATTEMPT_MS ago: N created
 *   after A has a successor stamped after A (less the skew), too young to let N go before the put.
 * Otherwise the put is preceded by a HEAD of N (present: the race is lost) and then one of N-1
 * (gone: reload), in that order, which makes A the first HEAD's send time. One HEAD of N-1 alone
 * is not enough: a stale base and N could both have been old and expire between it and the put.
 */
/** Expiry keeps every snapshot whose successor's `timeMillis` is younger than this (expiry-range.ts). */
export const EXPIRY_FLOOR_MS = 60_000;
/** How far apart the clocks of committers and expiry runs may be, for the bet. */
const MAX_CLOCK_SKEW_MS = 10_000;
/** How long a put of a snapshot may take to land after it was decided on, for the bet. */
const PUT_LANDS_WITHIN_MS = 10_000;
/** A base committed less than this ago (by this clock) is still there when the put lands. */
const YOUNG_BASE_MS = EXPIRY_FLOOR_MS - 2 * MAX_CLOCK_SKEW_MS - PUT_LANDS_WITHIN_MS;
/** Evidence that N was not created (nextAbsentSince) younger than this lets the put go unchecked. */
const SLOW_ATTEMPT_MS = 1000;

/** Whether creating snapshot `base.id + 1` now cannot re-create an expired id (see above). */
function betHolds(base: Snapshot | undefined, absentSince: number | undefined): boolean {
  if (absentSince !== undefined && performance.now() - absentSince <= SLOW_ATTEMPT_MS) return true;
  return base !== undefined && Date.now() - base.timeMillis <= YOUNG_BASE_MS;
}

/**
 * The check before a put the bet does not cover: snapshot `id` missing, then its predecessor
 * present, in that order; the send time of the first HEAD (the new evidence), or `lost` when `id`
 * exists or the base is gone. For id 1 the base is "no snapshot": a table that had one always
 * keeps its latest, so an empty lookup shows no snapshot 1 was created before it.
 */
async function checkBase(sm: SnapshotManager, id: number): Promise<{ absentSince: number } | 'lost'> {
  const sent = performance.now();
  if (id === 1) return (await sm.latestId()) === undefined ? { absentSince: sent } : 'lost';
  if ((await sm.store.head(sm.snapshotKey(id))) !== undefined) return 'lost';
  return (await sm.exists(id - 1)) ? { absentSince: sent } : 'lost';
}

function sameCommit(s: Snapshot, req: CommitRequest): boolean {
  // An indexed identifier is unique in the table, whoever commits it (commit-identifier.ts), and
  // a group commit may carry it as one of its batches'. A retry that took the index over races
  // its holder for the same id; the loser must recognise the winner's snapshot here, since the
  // holder writes the index no more after its snapshot (expiry marks it).
  if (req.identifierIndex) return carriesIdentifier(s, req.commitIdentifier);
  return s.commitUser === req.commitUser && s.commitIdentifier === req.commitIdentifier && s.commitKind === req.kind;
}

/** True when `s` holds this request's commit or one of its live batches' identifiers (a duplicate, or a batch to drop). */
function carriesThisCommit(req: CommitRequest, s: Snapshot): boolean {
  return sameCommit(s, req) || (req.batchIdentifiers ?? []).some((id) => id !== undefined && carriesIdentifier(s, id));
}

/**
 * Searches the newest `lookback` snapshots (newest first, stopping at the earliest one still
 * present) for a commit with the request's identity.
 */
export async function findCommitted(
  sm: SnapshotManager,
  latest: Snapshot | undefined,
  req: CommitRequest,
  lookback: number,
): Promise<Snapshot | undefined> {
  if (latest === undefined || lookback <= 0) return undefined;
  if (sameCommit(latest, req)) return confirmed(sm, latest);
  const lowest = Math.max(1, latest.id - lookback + 1);
  for (let hi = latest.id - 1; hi >= lowest; hi -= DEDUP_READ_CHUNK) {
    const ids: number[] = [];
    for (let id = hi; id >= Math.max(lowest, hi - DEDUP_READ_CHUNK + 1); id--) ids.push(id);
    const snapshots = await Promise.all(ids.map((id) => sm.tryRead(id)));
    for (const s of snapshots) {
      if (s === undefined) return undefined; // expired from here down: nothing older to search
      if (sameCommit(s, req)) return confirmed(sm, s);
    }
  }
  return undefined;
}

/**
 * `s` when it is still in the table as read: a cached snapshot may have been removed by a
 * rollback (its id since reused), and then its commit is not in the table any more.
 */
async function confirmed(sm: SnapshotManager, s: Snapshot): Promise<Snapshot | undefined> {
  const uuid = s.properties?.[COMMIT_UUID_PROPERTY];
  const fresh = await sm.tryReadFresh(s.id);
  if (fresh === undefined) return ((await sm.latestId()) ?? 0) < s.id ? undefined : s;
  return fresh.properties?.[COMMIT_UUID_PROPERTY] === uuid ? fresh : undefined;
}

/** The retry budget of one commit call (commit.max-retries, commit.timeout, the backoff waits). */
export function commitBudget(tablePath: string, opts: CommitOptions): RetryBudget {
  return new RetryBudget({
    what: `commit to ${displayTableName(tablePath)}`,
    maxRetries: opts.maxRetries,
    timeoutMs: opts.timeoutMs,
    minWaitMs: opts.minRetryWaitMs,
    maxWaitMs: opts.maxRetryWaitMs,
    onRetry: opts.onRetry,
    advice:
      'the table is busy — retry later, raise commit.max-retries / commit.timeout, or batch commits (group commit)',
    exhausted: (message, retries, cause) => new CommitRetriesExhaustedError(message, retries, { cause }),
  });
}

export type PublishOutcome = { committed: Snapshot } | { lostAt: number };

/**
 * Creates the snapshot file. Retries the same bytes on retryable errors; after any error the
 * outcome is unknown, so the store is asked what snapshot N now holds before anything else.
 * `base` is the snapshot N is built on (undefined for the first one) and `absentSince` the
 * evidence that N had not been created (see betHolds).
 */
export async function publish(
  ctx: CommitContext,
  sm: SnapshotManager,
  snapshot: Snapshot,
  budget: RetryBudget,
  base: Snapshot | undefined,
  absentSince: number | undefined,
): Promise<PublishOutcome> {
  const key = sm.snapshotKey(snapshot.id);
  const bytes = snapshotBytes(snapshot);
  let evidence = absentSince;
  for (;;) {
    // Never re-create an expired id (see betHolds): the bet, or the ordered check.
    if (!betHolds(base, evidence)) {
      const checked = await checkBase(sm, snapshot.id);
      if (checked === 'lost') return { lostAt: snapshot.id };
      evidence = checked.absentSince;
    }
    let error: unknown;
    try {
      // THE COMMIT POINT. Everything this snapshot references was written before, under unique
      // names; creating snapshot-N if absent is the one atomic step that makes the commit
      // visible. Losing (undefined) means another commit took N: nothing of ours is referenced.
      const sent = performance.now();
      const created = await ctx.store.putIfAbsent(key, bytes);
      if (created) sm.created(snapshot, sent);
      return created ? { committed: snapshot } : { lostAt: snapshot.id };
    } catch (e) {
      error = e;
    }
    // Ambiguous: the write may or may not have landed. Our commit uuid tells.
    let there: Snapshot | undefined;
    try {
      there = await sm.tryRead(snapshot.id);
    } catch {
      throw error;
    }
    if (there !== undefined) {
      return there.properties?.[COMMIT_UUID_PROPERTY] === ctx.commitUuid
        ? { committed: there }
        : { lostAt: snapshot.id };
    }
    if (!isRetryable(error)) throw error;
    await budget.retry(`writing snapshot ${snapshot.id}: ${(error as Error).message}`, error);
  }
}

/**
 * After losing snapshot `lostAt`: the newest snapshot, read forward from `lostAt`. On the way,
 * a snapshot carrying our commit uuid is ours (an earlier ambiguous write that landed late), and
 * one with our identity but another uuid is a concurrent duplicate of this commit that won.
 */
export async function reloadAfterLostRace(
  ctx: CommitContext,
  sm: SnapshotManager,
  lostAt: number,
  passed?: (s: Snapshot) => void,
): Promise<{ latest: Snapshot; ours?: Snapshot; duplicate?: Snapshot }> {
  // Normally snapshot `lostAt` is the one that beat us; if it is gone (expired under a very slow
  // attempt), start from the latest instead.
  const current = (await sm.tryRead(lostAt)) ?? (await sm.latest());
  if (current === undefined)
    throw new SnapshotNotFoundError(
      `table ${displayTableName(ctx.tablePath)} lost all its snapshots during a commit; retry`,
    );
  return readForward(ctx, sm, current, passed);
}

/**
 * From `current`, reads the next snapshots until the newest, stopping early at ours or a duplicate
 * of this commit; `passed` sees every other snapshot on the way.
 */
export async function readForward(
  ctx: CommitContext,
  sm: SnapshotManager,
  current: Snapshot,
  passed?: (s: Snapshot) => void,
): Promise<{ latest: Snapshot; ours?: Snapshot; duplicate?: Snapshot }> {
  for (;;) {
    if (current.properties?.[COMMIT_UUID_PROPERTY] === ctx.commitUuid) return { latest: current, ours: current };
    if (carriesThisCommit(ctx.req, current) && (await confirmed(sm, current)) === undefined) {
      // A cached copy of a snapshot a rollback removed, its id since reused: what it carried is
      // not in the table. Forget it (and everything cached above it) and read what the id holds.
      sm.forgetFrom(current.id - 1);
      const now = (await sm.tryRead(current.id)) ?? (await sm.latest());
      if (now === undefined)
        throw new SnapshotNotFoundError(
          `table ${displayTableName(ctx.tablePath)} lost all its snapshots during a commit; retry`,
        );
      current = now;
      continue;
    }
    if (sameCommit(current, ctx.req)) return { latest: current, duplicate: current };
    passed?.(current);
    const next = await sm.tryRead(current.id + 1);
    if (next === undefined) return { latest: current };
    current = next;
  }
}

/**
 * The base a commit starts from, and the evidence that its successor had not been created
 * (`absentSince`, performance.now(); see betHolds). A warm committer (a caching SnapshotManager
 * that read or made the newest snapshot it knows) bets that snapshot is still the latest: if
 * others committed since, creating the next id loses the race and the loop reloads. It must not
 * bet that the id after it was never created and expired: when neither the base's age nor fresh
 * evidence rules that out, the ordered check (checkBase) runs here, and a base that is gone or
 * behind is replaced by the full lookup, which galloping from it keeps short. A cold committer
 * looks the latest up (hint, HEADs, a listing at worst); an empty table is evidence itself.
 */
export async function warmBase(
  sm: SnapshotManager,
): Promise<{ base: Snapshot | undefined; optimistic: boolean; absentSince: number | undefined }> {
  const known = sm.newestKnown();
  if (known !== undefined) {
    const absentSince = sm.nextAbsentSince(known.id);
    if (betHolds(known, absentSince)) return { base: known, optimistic: true, absentSince };
    const checked = await checkBase(sm, known.id + 1);
    if (checked !== 'lost') return { base: known, optimistic: true, absentSince: checked.absentSince };
  }
  return { ...(await lookUpBase(sm)), optimistic: false };
}

/** The latest snapshot, looked up, with the evidence the lookup left (see warmBase). */
export async function lookUpBase(
  sm: SnapshotManager,
): Promise<{ base: Snapshot | undefined; absentSince: number | undefined }> {
  const sent = performance.now();
  const base = await sm.latest();
  return { base, absentSince: base === undefined ? sent : sm.nextAbsentSince(base.id) };
}

/**
 * Remembers the new snapshot for this committer's next commit, and writes the LATEST hint when the
 * lookup of its base found the hint behind (or missing, or did not read it: a lost warm base), or
 * when `behind` says so (a cold committer that lost a race: others committed after the hint it
 * read). A committer whose base came from a current hint (a cold one: a new process, or a writer
 * whose plan looked the latest up) or from its own last commit (a warm one) does not: the hint
 * saves readers a gallop, not correctness (snapshot-manager.ts), and the commit stays at three
 * metadata PUTs.
 */
export async function rememberCommit(sm: SnapshotManager, s: Snapshot, behind = false): Promise<void> {
  sm.remember(s);
  if (sm.takeHintBehind() || behind) await sm.writeLatestHint(s.id);
}
