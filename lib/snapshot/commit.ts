/**
 * The commit protocol (DESIGN.md "The commit protocol"), iceberg-rust style: one loop that
 * reloads the latest snapshot, re-applies the request on it (sequence numbers, conflict checks,
 * manifests under new names), creates `snapshot-<N>` with put-if-absent, and retries only what
 * is retryable — a lost race for N, a 409, a store hiccup — with backoff, up to a bound.
 * Idempotent on (commitUser, commitIdentifier, kind): a commit that already landed is found, not
 * repeated.
 */
import { randomUUID } from 'node:crypto';
import { CommitConflictError, CommitRetriesExhaustedError, InvalidArgumentError, SnapshotNotFoundError, isRetryable } from '../errors.js';
import { MetadataFileNamer } from '../manifest/file-names.js';
import type { Snapshot } from './snapshot.js';
import { RetryBudget } from '../retry-budget.js';
import type { ObjectStore } from '../store/object-store.js';
import { COMMIT_UUID_PROPERTY, PARENT_COMMIT_PROPERTY, planCommit, type CommitContext } from './commit-plan.js';
import { BATCH_IDENTIFIERS_PROPERTY, IdentifierClaim, carriesIdentifier } from './commit-identifier.js';
import { isEmptyRequest, validateCommitRequest, type CommitOptions, type CommitRequest } from './commit-request.js';
import { snapshotBytes } from './snapshot-file.js';
import { SnapshotManager } from './snapshot-manager.js';
import { displayTableName } from './paths.js';

export type { CommitBatch, CommitOptions, CommitRequest, FileChange } from './commit-request.js';
export { COMMIT_UUID_PROPERTY, PARENT_COMMIT_PROPERTY } from './commit-plan.js';

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
}

/** Where a batch of a group commit had landed before (CommitResult.landedBefore). */
export interface LandedBatch {
  snapshotId: number;
  /** Undefined when that snapshot has expired. */
  snapshot?: Snapshot;
}

const DEDUP_READ_CHUNK = 16;
/** An attempt slower than this re-checks that its base snapshot still exists before committing. */
const SLOW_ATTEMPT_MS = 1000;

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
async function findCommitted(sm: SnapshotManager, latest: Snapshot | undefined, req: CommitRequest, lookback: number): Promise<Snapshot | undefined> {
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
  if (fresh === undefined) return (await sm.latestId() ?? 0) < s.id ? undefined : s;
  return fresh.properties?.[COMMIT_UUID_PROPERTY] === uuid ? fresh : undefined;
}

/** The retry budget of one commit call (commit.max-retries, commit.timeout, the backoff waits). */
function commitBudget(tablePath: string, opts: CommitOptions): RetryBudget {
  return new RetryBudget({
    what: `commit to ${displayTableName(tablePath)}`,
    maxRetries: opts.maxRetries,
    timeoutMs: opts.timeoutMs,
    minWaitMs: opts.minRetryWaitMs,
    maxWaitMs: opts.maxRetryWaitMs,
    onRetry: opts.onRetry,
    advice: 'the table is busy — retry later, raise commit.max-retries / commit.timeout, or batch commits (group commit)',
    exhausted: (message, retries, cause) => new CommitRetriesExhaustedError(message, retries, { cause }),
  });
}

type PublishOutcome = { committed: Snapshot } | { lostAt: number };

/**
 * Creates the snapshot file. Retries the same bytes on retryable errors; after any error the
 * outcome is unknown, so the store is asked what snapshot N now holds before anything else.
 */
async function publish(ctx: CommitContext, sm: SnapshotManager, snapshot: Snapshot, budget: RetryBudget, baseSeenAt: number): Promise<PublishOutcome> {
  const key = sm.snapshotKey(snapshot.id);
  const bytes = snapshotBytes(snapshot);
  let seenAt = baseSeenAt;
  for (;;) {
    // put-if-absent cannot tell a never-created id from an expired one: if the base (N-1) was
    // last seen long enough ago for snapshot N to have been created and expired since, the base
    // is gone too (expiry deletes in id order), so check it before creating N. Seen within
    // SLOW_ATTEMPT_MS, it is not checked again: the one HEAD of a warm commit is this one or
    // warmBase's, never both unless the attempt itself is slow.
    if (snapshot.id > 1 && performance.now() - seenAt > SLOW_ATTEMPT_MS) {
      const sent = performance.now();
      if (!(await sm.exists(snapshot.id - 1))) return { lostAt: snapshot.id };
      seenAt = sent;
    }
    let error: unknown;
    try {
      // THE COMMIT POINT. Everything this snapshot references was written before, under unique
      // names; creating snapshot-N if absent is the one atomic step that makes the commit
      // visible. Losing (undefined) means another commit took N: nothing of ours is referenced.
      const sent = performance.now();
      const created = await ctx.store.putIfAbsent(key, bytes);
      if (created) sm.remember(snapshot, sent);
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
      return there.properties?.[COMMIT_UUID_PROPERTY] === ctx.commitUuid ? { committed: there } : { lostAt: snapshot.id };
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
async function reloadAfterLostRace(
  ctx: CommitContext,
  sm: SnapshotManager,
  lostAt: number,
  passed?: (s: Snapshot) => void,
): Promise<{ latest: Snapshot; ours?: Snapshot; duplicate?: Snapshot }> {
  // Normally snapshot `lostAt` is the one that beat us; if it is gone (expired under a very slow
  // attempt), start from the latest instead.
  const current = (await sm.tryRead(lostAt)) ?? (await sm.latest());
  if (current === undefined) throw new SnapshotNotFoundError(`table ${displayTableName(ctx.tablePath)} lost all its snapshots during a commit; retry`);
  return readForward(ctx, sm, current, passed);
}

/**
 * From `current`, reads the next snapshots until the newest, stopping early at ours or a duplicate
 * of this commit; `passed` sees every other snapshot on the way.
 */
async function readForward(ctx: CommitContext, sm: SnapshotManager, current: Snapshot, passed?: (s: Snapshot) => void): Promise<{ latest: Snapshot; ours?: Snapshot; duplicate?: Snapshot }> {
  for (;;) {
    if (current.properties?.[COMMIT_UUID_PROPERTY] === ctx.commitUuid) return { latest: current, ours: current };
    if (carriesThisCommit(ctx.req, current) && (await confirmed(sm, current)) === undefined) {
      // A cached copy of a snapshot a rollback removed, its id since reused: what it carried is
      // not in the table. Forget it (and everything cached above it) and read what the id holds.
      sm.forgetFrom(current.id - 1);
      const now = (await sm.tryRead(current.id)) ?? (await sm.latest());
      if (now === undefined) throw new SnapshotNotFoundError(`table ${displayTableName(ctx.tablePath)} lost all its snapshots during a commit; retry`);
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
 * The base a commit starts from, and when it was last seen to exist (`seenAt`, performance.now()).
 * A warm committer (a caching SnapshotManager that read or made the newest snapshot it knows)
 * bets that snapshot is still the latest: if others committed since, creating the next id loses
 * the race and the loop reloads. What it must not bet on is that the snapshot still exists: if it
 * expired, the next id may have expired too, and creating it again would resurrect an expired id.
 * So a base not seen within SLOW_ATTEMPT_MS is checked (one HEAD) and, gone, replaced by the full
 * lookup; one seen more recently (this process created it moments ago) is left to the check
 * before the put (publish), which runs whenever the base was seen longer ago than that. A cold
 * committer looks the latest up (hint, HEADs, a listing at worst).
 */
async function warmBase(sm: SnapshotManager): Promise<{ base: Snapshot | undefined; optimistic: boolean; seenAt: number }> {
  const known = sm.newestKnown();
  const seenAt = sm.newestSeenAt();
  if (known !== undefined && seenAt !== undefined && performance.now() - seenAt <= SLOW_ATTEMPT_MS) return { base: known, optimistic: true, seenAt };
  const sent = performance.now();
  if (known !== undefined && (await sm.exists(known.id))) return { base: known, optimistic: true, seenAt: sent };
  return { base: await sm.latest(), optimistic: false, seenAt: sent };
}

/**
 * After creating snapshot `s`: true when snapshot `s.id − 1` is still the one `s` was planned on.
 * A rollback (maintenance/rollback.ts) removes snapshots newest first, and their ids are created
 * again afterwards; a commit planned on a removed snapshot (read just before the rollback, or a
 * stale cached one) would otherwise bring the removed state back under a fresh id, silently.
 */
async function onCurrentChain(sm: SnapshotManager, s: Snapshot): Promise<boolean> {
  const parentUuid = s.properties?.[PARENT_COMMIT_PROPERTY];
  if (s.id <= 1 || parentUuid === undefined) return true;
  const parent = await sm.tryReadFresh(s.id - 1);
  if (parent !== undefined) return parent.properties?.[COMMIT_UUID_PROPERTY] === parentUuid;
  // Gone: expiry deletes oldest first, so an expired parent has nothing left below it, while a
  // rollback that removed it leaves at least its target below.
  return !(await sm.listIds()).some((id) => id < s.id - 1);
}

/** Takes back snapshot `s` of this commit (planned on a removed snapshot), if it is still ours. */
async function withdraw(ctx: CommitContext, sm: SnapshotManager, s: Snapshot): Promise<void> {
  const there = await sm.tryReadFresh(s.id);
  if (there?.properties?.[COMMIT_UUID_PROPERTY] === ctx.commitUuid) await ctx.store.delete(sm.snapshotKey(s.id));
  sm.forgetFrom(s.id - 1);
}

/**
 * Remembers the new snapshot for this committer's next commit. A committer that had to look the
 * latest snapshot up (`lookedUp`: cold, or its warm base was lost) writes the LATEST hint; a warm
 * one does not: the hint saves readers a gallop, not correctness (snapshot-manager.ts), and a warm
 * commit stays at three metadata PUTs.
 */
async function afterCommit(sm: SnapshotManager, s: Snapshot, lookedUp: boolean): Promise<void> {
  sm.remember(s);
  if (lookedUp) await sm.writeLatestHint(s.id);
}

/**
 * The claims of a group commit's batch identifiers (CommitRequest.batchIdentifiers): before
 * snapshot N is created every batch still in the commit holds its index naming N, exactly as a
 * single indexed commit does; a batch whose identifier has landed already leaves the commit.
 */
class BatchClaims {
  private live: number[];
  readonly landedBefore = new Map<number, LandedBatch>();
  private readonly claims: Array<IdentifierClaim | undefined>;

  constructor(
    private readonly ctx: CommitContext,
    sm: SnapshotManager,
    private readonly original: CommitRequest,
  ) {
    const ids = original.batchIdentifiers ?? [];
    this.claims = ids.map((id) => (id === undefined ? undefined : new IdentifierClaim(ctx.store, sm, id, ctx.commitUuid, ctx.now)));
    this.live = ids.map((_, i) => i);
    this.rebuild();
  }

  /** True when every batch had landed before: nothing is left to commit. */
  get empty(): boolean {
    return this.live.length === 0;
  }

  /** Newest snapshot holding a dropped batch (what an all-landed commit returns). */
  get newestLanded(): Snapshot | undefined {
    let newest: Snapshot | undefined;
    for (const { snapshot: s } of this.landedBefore.values()) if (s !== undefined && (newest === undefined || s.id > newest.id)) newest = s;
    return newest;
  }

  /** The request without the dropped batches, recording the identifiers it carries. */
  private rebuild(): void {
    const o = this.original;
    const ids = this.live.map((i) => o.batchIdentifiers![i]);
    this.ctx.req = {
      ...o,
      batches: this.live.map((i) => o.batches![i]),
      batchIdentifiers: ids,
      properties: { ...o.properties, [BATCH_IDENTIFIERS_PROPERTY]: JSON.stringify(ids.filter((id) => id !== undefined)) },
    };
  }

  /**
   * After a lost race: leaves out the live batches whose identifier snapshot `s` (another
   * commit's) carries — a retry elsewhere that took a batch's index over and won the id.
   */
  readonly passed = (s: Snapshot): void => {
    const landed = this.live.filter((i) => {
      const id = this.original.batchIdentifiers![i];
      return id !== undefined && carriesIdentifier(s, id);
    });
    if (landed.length === 0) return;
    for (const i of landed) this.landedBefore.set(i, { snapshotId: s.id, snapshot: s });
    this.live = this.live.filter((i) => !this.landedBefore.has(i));
    this.rebuild();
  };

  /**
   * Makes every live claim name `(base?.id ?? 0) + 1`; returns the base they agree on (a takeover
   * may move it forward, and then every other claim is moved with it).
   */
  async claimAll(base: Snapshot | undefined): Promise<Snapshot | undefined> {
    for (;;) {
      const pending = this.live.filter((i) => this.claims[i] !== undefined);
      if (pending.length === 0) return base;
      const outcomes = await Promise.all(pending.map((i) => this.claims[i]!.claim(base)));
      let target = base;
      let agree = true;
      outcomes.forEach((o, k) => {
        if (!o.held) {
          this.landedBefore.set(pending[k], { snapshotId: o.snapshotId, snapshot: o.snapshot });
          return;
        }
        if ((o.base?.id ?? 0) !== (base?.id ?? 0)) agree = false;
        if ((o.base?.id ?? 0) > (target?.id ?? 0)) target = o.base;
      });
      if (this.landedBefore.size > 0 && this.live.some((i) => this.landedBefore.has(i))) {
        this.live = this.live.filter((i) => !this.landedBefore.has(i));
        this.rebuild();
      }
      if (this.live.length === 0 || agree) return base;
      // A takeover planned on a newer snapshot: every claim must name the same id, so all move.
      base = target;
    }
  }
}

/**
 * Commits `req` to the table at `tablePath`: returns the new snapshot, or the one an earlier
 * call with the same identity created. Throws CommitConflictError on a real conflict (never
 * retried), CommitRetriesExhaustedError when the retry budget runs out, and non-retryable store
 * errors as they come (the commit may then have landed or not: call again with the same identity).
 */
export async function commit(store: ObjectStore, tablePath: string, req: CommitRequest, opts: CommitOptions): Promise<CommitResult> {
  validateCommitRequest(req);
  const sm = opts.snapshotManager ?? new SnapshotManager(store, tablePath);
  if (sm.store !== store || sm.tablePath !== tablePath) {
    throw new InvalidArgumentError(`opts.snapshotManager belongs to table ${sm.tablePath}, not ${tablePath}; pass one made for this table`);
  }
  const ctx: CommitContext = {
    store,
    tablePath,
    req,
    opts,
    namer: new MetadataFileNamer(),
    commitUuid: randomUUID(),
    cache: opts.manifestCache ?? new Map(),
    now: opts.now ?? Date.now,
  };
  const budget = commitBudget(tablePath, opts);
  const claim = req.identifierIndex ? new IdentifierClaim(store, sm, req.commitIdentifier, ctx.commitUuid, ctx.now) : undefined;
  const batchClaims = req.batchIdentifiers ? new BatchClaims(ctx, sm, req) : undefined;
  const landed = (r: CommitResult): CommitResult => (batchClaims && batchClaims.landedBefore.size > 0 ? { ...r, landedBefore: batchClaims.landedBefore } : r);
  let attempts = 0;
  let latest: Snapshot | undefined;
  let loaded = false;
  let baseReadAt = 0;
  // True while the base is a warm guess that may be older than what the caller planned on.
  let optimistic = false;
  let mayGuess = true;
  // True once this call looked the latest snapshot up instead of trusting its warm base.
  let lookedUp = false;

  for (;;) {
    try {
      if (!loaded) {
        if (mayGuess) ({ base: latest, optimistic, seenAt: baseReadAt } = await warmBase(sm));
        else {
          baseReadAt = performance.now();
          latest = await sm.latest();
          optimistic = false;
        }
        if (!optimistic) lookedUp = true;
        if (isEmptyRequest(req) && !req.allowEmpty) {
          if (latest === undefined) {
            throw new InvalidArgumentError(
              `nothing to commit to ${tablePath}: the request has no files and the table has no snapshot yet; ` +
                'pass allowEmpty: true to create an empty snapshot',
            );
          }
          return { snapshot: latest, alreadyCommitted: false, committed: false, attempts: 0 };
        }
        // An indexed identifier is looked up in its index (below), never in a window of snapshots.
        const earlier = claim ? undefined : await findCommitted(sm, latest, req, opts.dedupLookback ?? 100);
        if (earlier !== undefined) return { snapshot: earlier, alreadyCommitted: true, committed: false, attempts: 0 };
        loaded = true;
      }
      if (claim) {
        // Before creating snapshot N the index must name N (commit-identifier.ts): the rule that
        // lets a retry in another process tell whether this commit landed, with O(1) reads.
        const held = await claim.claim(latest);
        if (!held.held) {
          const snapshot = held.snapshot ?? (await sm.latest());
          if (snapshot === undefined) throw new SnapshotNotFoundError(`table ${displayTableName(tablePath)} has no snapshot left; commit identifier ${req.commitIdentifier} landed in expired snapshot ${held.snapshotId}`);
          // Landed in a snapshot expired since: say which, never pass the latest off as its holder.
          const expired = held.snapshot === undefined ? { expiredSnapshotId: held.snapshotId } : {};
          return { snapshot, alreadyCommitted: true, committed: false, attempts, ...expired };
        }
        if (held.base?.id !== latest?.id) {
          latest = held.base;
          baseReadAt = performance.now();
        }
      }
      if (batchClaims) {
        const base = await batchClaims.claimAll(latest);
        if (batchClaims.empty) {
          const snapshot = batchClaims.newestLanded ?? (await sm.latest());
          if (snapshot === undefined) throw new SnapshotNotFoundError(`table ${displayTableName(tablePath)} has no snapshot left; every batch of this commit had landed in snapshots since expired`);
          return landed({ snapshot, alreadyCommitted: true, committed: false, attempts });
        }
        if (base?.id !== latest?.id) {
          latest = base;
          baseReadAt = performance.now();
        }
      }
      const snapshot = await planCommit(ctx, latest);
      attempts++;
      const outcome = await publish(ctx, sm, snapshot, budget, baseReadAt);
      if ('committed' in outcome && !(await onCurrentChain(sm, outcome.committed))) {
        // Planned on a snapshot a rollback removed: withdraw it and plan again on the latest.
        await withdraw(ctx, sm, outcome.committed);
        latest = await sm.latest();
        optimistic = false;
        lookedUp = true;
        baseReadAt = performance.now();
        await budget.retry(`snapshot ${outcome.committed.id} was planned on a snapshot a rollback removed; retrying on snapshot ${latest?.id ?? 0}`);
        continue;
      }
      if ('committed' in outcome) {
        await afterCommit(sm, outcome.committed, lookedUp);
        return landed({ snapshot: outcome.committed, alreadyCommitted: false, committed: true, attempts });
      }
      let reloaded = await reloadAfterLostRace(ctx, sm, outcome.lostAt, batchClaims?.passed);
      if (!reloaded.ours && !reloaded.duplicate) {
        await budget.retry(`lost the race for snapshot ${outcome.lostAt}; retrying after snapshot ${reloaded.latest.id}`);
        // Others kept committing during the wait: read forward to the newest snapshot after it, so
        // the next attempt starts on the current head. (Planning on the head read before the wait
        // lost again to whatever landed meanwhile, and every loss doubled the wait: a process that
        // lost once was parked while the others took every id — the cross-process starvation.)
        reloaded = await readForward(ctx, sm, reloaded.latest, batchClaims?.passed);
      }
      if (reloaded.ours) {
        await afterCommit(sm, reloaded.ours, lookedUp);
        return landed({ snapshot: reloaded.ours, alreadyCommitted: false, committed: true, attempts });
      }
      if (reloaded.duplicate) {
        return { snapshot: reloaded.duplicate, alreadyCommitted: true, committed: false, attempts };
      }
      if (batchClaims?.empty) return landed({ snapshot: batchClaims.newestLanded!, alreadyCommitted: true, committed: false, attempts });
      latest = reloaded.latest;
      optimistic = false;
      baseReadAt = performance.now();
    } catch (e) {
      if (e instanceof CommitConflictError && optimistic) {
        // Checked against a guessed base that may be older than the caller's plan (a compaction
        // planned on a newer snapshot): not a real conflict until the latest says so.
        mayGuess = false;
        loaded = false;
        continue;
      }
      if (!isRetryable(e) || e instanceof CommitRetriesExhaustedError) throw e;
      // A store hiccup before the commit point: the same step again (the base is reloaded only
      // if it was never read; a stale base just loses the race and reloads then).
      await budget.retry((e as Error).message, e);
    }
  }
}
