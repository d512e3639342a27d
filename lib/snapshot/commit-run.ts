/**
 * One call of the commit loop (commit.ts runCommit): the state it carries from attempt to attempt
 * — the base snapshot and how it was found, the action's current plan, its identifier claims, the
 * one retry budget — and the step each outcome leads to.
 */
import { randomUUID } from 'node:crypto';
import {
  CommitConflictError,
  InvalidArgumentError,
  RetriesExhaustedError,
  SchemaChangedError,
  SnapshotNotFoundError,
  isRetryable,
} from '../errors.js';
import { MetadataFileNamer } from '../manifest/file-names.js';
import type { RetryBudget } from '../retry-budget.js';
import type { ObjectStore } from '../store/object-store.js';
import type { ActionPlan, CommitAction } from './commit-action.js';
import { BatchClaims } from './commit-claims.js';
import { IdentifierClaim } from './commit-identifier.js';
import { planCommit, type CommitContext } from './commit-plan.js';
import { isEmptyRequest, validateCommitRequest, type CommitOptions } from './commit-request.js';
import {
  commitBudget,
  findCommitted,
  lookUpBase,
  publish,
  readForward,
  reloadAfterLostRace,
  rememberCommit,
  warmBase,
  type CommitResult,
} from './commit-steps.js';
import { displayTableName } from './paths.js';
import type { Snapshot } from './snapshot.js';
import type { SnapshotManager } from './snapshot-manager.js';

/** See the file comment. */
export class CommitRun {
  private readonly ctx: CommitContext;
  private readonly budget: RetryBudget;
  /** The action's current plan (undefined until its first plan succeeded). */
  private plan?: ActionPlan;
  private claim?: IdentifierClaim;
  private batchClaims?: BatchClaims;
  private attempts = 0;
  /**
   * The snapshot the next attempt commits on, and since when (performance.now()) the id after it
   * is known not to have been created (commit-steps.ts betHolds; undefined: no such evidence).
   */
  private base: Snapshot | undefined;
  private absentSince: number | undefined;
  /** The base is a warm guess (warmBase) that may be older than what the action planned on. */
  private guessed = false;
  /** This call looked the latest snapshot up (after losing a race it then writes the LATEST hint). */
  private lookedUp = false;
  /** The next attempt loads the latest snapshot first (and, with `replan`, plans the action again). */
  private reload = false;
  private replan = false;
  /** What the before-commit hook threw, if it refused the commit. */
  private refusal: unknown;

  constructor(
    store: ObjectStore,
    tablePath: string,
    private readonly sm: SnapshotManager,
    private readonly action: CommitAction,
    private readonly opts: CommitOptions,
  ) {
    this.ctx = {
      store,
      tablePath,
      req: undefined as never,
      opts,
      namer: new MetadataFileNamer(),
      commitUuid: randomUUID(),
      cache: opts.manifestCache ?? new Map(),
      now: opts.now ?? Date.now,
    };
    this.budget = commitBudget(tablePath, opts);
  }

  /** One attempt at creating the next snapshot: the result, or undefined to try again. */
  async attempt(): Promise<CommitResult | undefined> {
    const first = this.plan === undefined;
    if (first || this.reload) {
      // The first attempt may start from a warm guess; a reload reads the latest snapshot.
      await this.load(first && !this.reload);
      this.reload = false;
      if (first || this.replan) {
        this.replan = false;
        this.adopt(await this.action.plan(this.base));
      }
      const done = await this.alreadyDone();
      if (done !== undefined) return done;
      if (first) await this.beforeHook();
    }
    const claimed = await this.claimIdentifiers();
    if (claimed !== undefined) return claimed;
    const nothingLeft = await this.checkRequirements();
    if (nothingLeft !== undefined) return nothingLeft;
    const snapshot = await planCommit(this.ctx, this.base);
    this.attempts++;
    const outcome = await publish(this.ctx, this.sm, snapshot, this.budget, this.base, this.absentSince);
    if ('committed' in outcome) return this.created(outcome.committed);
    return this.afterLostRace(outcome.lostAt);
  }

  /** The before-commit hook, once: its refusal (WriteStallError) is the caller's to retry, never the loop's. */
  private async beforeHook(): Promise<void> {
    try {
      await this.opts.hooks?.before?.(this.action.name, this.plan!.changes);
    } catch (e) {
      this.refusal = e;
      throw e;
    }
  }

  /** After a failed attempt: what to do next, under the one budget; throws what no retry helps. */
  async recover(e: unknown): Promise<void> {
    if (e === this.refusal) throw e;
    if (
      e instanceof CommitConflictError &&
      !(e instanceof SchemaChangedError) &&
      this.guessed &&
      this.plan !== undefined
    ) {
      // Checked against a guessed base that may be older than the action's plan (a compaction
      // planned on a newer snapshot): not a real conflict until the latest says so.
      this.reload = true;
      return;
    }
    if (
      e instanceof CommitConflictError &&
      !(e instanceof SchemaChangedError) &&
      this.action.onConflict &&
      (await this.action.onConflict(e))
    ) {
      await this.budget.retry(`re-planning the ${this.action.name} after a conflict: ${e.message}`, e);
      this.reload = true;
      this.replan = true;
      return;
    }
    if (!isRetryable(e) || e instanceof RetriesExhaustedError) throw e;
    // A store hiccup before the commit point: the same step again (the base is reloaded only if
    // it was never read; a stale base just loses the race and reloads then).
    await this.budget.retry((e as Error).message, e);
  }

  /** The result as returned: the batches that had landed before, the action settled, the after-commit hook run. */
  async finish(r: CommitResult): Promise<CommitResult> {
    const landedBefore = this.batchClaims?.landedBefore;
    const result = landedBefore !== undefined && landedBefore.size > 0 ? { ...r, landedBefore } : r;
    await this.action.settle?.({ alreadyCommitted: result.alreadyCommitted });
    if (!result.committed || !this.opts.hooks?.after) return result;
    try {
      await this.opts.hooks.after(this.action.name, result.snapshot, this.plan!.changes);
      return result;
    } catch (e) {
      // The commit has landed: work after it never makes it look failed.
      return { ...result, hookError: e as Error };
    }
  }

  private async load(mayGuess: boolean): Promise<void> {
    if (mayGuess)
      ({ base: this.base, optimistic: this.guessed, absentSince: this.absentSince } = await warmBase(this.sm));
    else {
      ({ base: this.base, absentSince: this.absentSince } = await lookUpBase(this.sm));
      this.guessed = false;
    }
    if (!this.guessed) this.lookedUp = true;
  }

  private moveBase(s: Snapshot | undefined): void {
    this.base = s;
    // Whatever evidence the reads that found it left; without, the put is checked (publish).
    this.absentSince = s === undefined ? undefined : this.sm.nextAbsentSince(s.id);
  }

  /** Takes a plan: validated, with the identifier claims its changes need. */
  private adopt(plan: ActionPlan): void {
    const req = plan.changes;
    validateCommitRequest(req);
    this.plan = plan;
    this.ctx.req = req;
    if (!req.identifierIndex) this.claim = undefined;
    else if (this.claim?.identifier !== req.commitIdentifier)
      this.claim = new IdentifierClaim(
        this.ctx.store,
        this.sm,
        req.commitIdentifier,
        this.ctx.commitUuid,
        this.ctx.now,
      );
    this.batchClaims = req.batchIdentifiers ? new BatchClaims(this.ctx, this.sm, req) : undefined;
  }

  /** Nothing to commit (an empty request), or committed before (found in the dedup window). */
  private async alreadyDone(): Promise<CommitResult | undefined> {
    const req = this.plan!.changes;
    if (isEmptyRequest(req) && !req.allowEmpty) {
      if (this.base === undefined) {
        throw new InvalidArgumentError(
          `nothing to commit to ${this.ctx.tablePath}: the request has no files and the table has no snapshot yet; pass allowEmpty: true to create an empty snapshot`,
        );
      }
      return { snapshot: this.base, alreadyCommitted: false, committed: false, attempts: 0 };
    }
    // An indexed identifier is looked up in its index (claimIdentifiers), never in a window of snapshots.
    const earlier = this.claim
      ? undefined
      : await findCommitted(this.sm, this.base, req, this.opts.dedupLookback ?? 100);
    return earlier === undefined
      ? undefined
      : { snapshot: earlier, alreadyCommitted: true, committed: false, attempts: 0 };
  }

  /**
   * Before creating snapshot N every identifier the commit carries has its index naming N
   * (commit-identifier.ts): the rule that lets a retry in another process tell whether this commit
   * landed, with O(1) reads. The result when they had all landed before.
   */
  private async claimIdentifiers(): Promise<CommitResult | undefined> {
    const { tablePath, req } = this.ctx;
    if (this.claim) {
      const held = await this.claim.claim(this.base);
      if (!held.held) {
        const snapshot = held.snapshot ?? (await this.sm.latest());
        if (snapshot === undefined)
          throw new SnapshotNotFoundError(
            `table ${displayTableName(tablePath)} has no snapshot left; commit identifier ${req.commitIdentifier} landed in expired snapshot ${held.snapshotId}`,
          );
        // Landed in a snapshot expired since: say which, never pass the latest off as its holder.
        const expired = held.snapshot === undefined ? { expiredSnapshotId: held.snapshotId } : {};
        return { snapshot, alreadyCommitted: true, committed: false, attempts: this.attempts, ...expired };
      }
      if (held.base?.id !== this.base?.id) this.moveBase(held.base);
    }
    if (this.batchClaims) {
      const base = await this.batchClaims.claimAll(this.base);
      if (this.batchClaims.empty) {
        const snapshot = this.batchClaims.newestLanded ?? (await this.sm.latest());
        if (snapshot === undefined)
          throw new SnapshotNotFoundError(
            `table ${displayTableName(tablePath)} has no snapshot left; every batch of this commit had landed in snapshots since expired`,
          );
        return { snapshot, alreadyCommitted: true, committed: false, attempts: this.attempts };
      }
      if (base?.id !== this.base?.id) this.moveBase(base);
    }
    return undefined;
  }

  /**
   * The plan's requirements on the base (the file-level ones are checked with the writes:
   * commit-plan.ts). A newer schema or another base than the plan requires: the action plans
   * again on this base, or says it cannot. Returns the result when the plan on this base holds
   * nothing to commit (a group commit whose batches all landed meanwhile in other commits).
   */
  private async checkRequirements(): Promise<CommitResult | undefined> {
    if (this.meetsSchema() && this.meetsBase()) return undefined;
    this.adopt(await this.action.plan(this.base));
    if (!this.meetsBase()) {
      throw new InvalidArgumentError(
        `the ${this.action.name} action planned on snapshot ${this.plan!.requirements.baseSnapshotId} when asked to plan on snapshot ${this.base?.id ?? 'none'}; it must plan on the base it is given`,
      );
    }
    if (this.meetsSchema()) {
      const req = this.plan!.changes;
      if (this.base === undefined || !isEmptyRequest(req) || req.allowEmpty) return undefined;
      return { snapshot: this.base, alreadyCommitted: false, committed: false, attempts: this.attempts };
    }
    const { tablePath, req } = this.ctx;
    const latest = this.base!;
    // An alter committed after this action planned: its rows follow the old columns, so it must
    // plan again with the new schema rather than land under it unseen.
    throw new SchemaChangedError(
      `the schema of ${tablePath} changed from ${req.schemaId} to ${latest.schemaId} (snapshot ${latest.id}) after this ${req.kind.toLowerCase()} was planned; ` +
        'nothing was committed: reopen the table and write again with the new schema',
      req.schemaId,
      latest.schemaId,
    );
  }

  private meetsSchema(): boolean {
    const required = this.plan!.requirements.schemaId;
    return required === undefined || this.base === undefined || this.base.schemaId <= required;
  }

  private meetsBase(): boolean {
    const required = this.plan!.requirements.baseSnapshotId;
    return required === undefined || required === (this.base?.id ?? 0);
  }

  /** Snapshot `s` was created by this call. */
  private async created(s: Snapshot): Promise<CommitResult> {
    await rememberCommit(this.sm, s);
    return { snapshot: s, alreadyCommitted: false, committed: true, attempts: this.attempts };
  }

  /** After losing snapshot `lostAt`: ours after all, a duplicate that won, or a new base to retry on. */
  private async afterLostRace(lostAt: number): Promise<CommitResult | undefined> {
    const passed = this.batchClaims?.passed;
    let reloaded = await reloadAfterLostRace(this.ctx, this.sm, lostAt, passed);
    if (!reloaded.ours && !reloaded.duplicate) {
      await this.budget.retry(`lost the race for snapshot ${lostAt}; retrying after snapshot ${reloaded.latest.id}`);
      // Others kept committing during the wait: read forward to the newest snapshot after it, so
      // the next attempt starts on the current head. (Planning on the head read before the wait
      // lost again to whatever landed meanwhile, and every loss doubled the wait: a process that
      // lost once was parked while the others took every id — the cross-process starvation.)
      reloaded = await readForward(this.ctx, this.sm, reloaded.latest, passed);
    }
    if (reloaded.ours) {
      await rememberCommit(this.sm, reloaded.ours, this.lookedUp);
      return { snapshot: reloaded.ours, alreadyCommitted: false, committed: true, attempts: this.attempts };
    }
    if (reloaded.duplicate)
      return { snapshot: reloaded.duplicate, alreadyCommitted: true, committed: false, attempts: this.attempts };
    if (this.batchClaims?.empty)
      return {
        snapshot: this.batchClaims.newestLanded!,
        alreadyCommitted: true,
        committed: false,
        attempts: this.attempts,
      };
    this.moveBase(reloaded.latest);
    this.guessed = false;
    return undefined;
  }
}
