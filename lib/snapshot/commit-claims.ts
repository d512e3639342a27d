/**
 * The identifier claims of a group commit's batches (CommitRequest.batchIdentifiers): each batch
 * claims its own index object (commit-identifier.ts), so every batch lands exactly once table-wide.
 */
import { CommitRetriesExhaustedError } from '../errors.js';
import { RetryBudget, TryAgain } from '../retry-budget.js';
import { displayTableName } from './paths.js';
import { BATCH_IDENTIFIERS_PROPERTY, CLAIM_RETRIES, IdentifierClaim, carriesIdentifier } from './commit-identifier.js';
import type { CommitContext } from './commit-plan.js';
import type { CommitRequest } from './commit-request.js';
import type { LandedBatch } from './commit-steps.js';
import type { Snapshot } from './snapshot.js';
import type { SnapshotManager } from './snapshot-manager.js';

/**
 * The claims of a group commit's batch identifiers (CommitRequest.batchIdentifiers): before
 * snapshot N is created every batch still in the commit holds its index naming N, exactly as a
 * single indexed commit does; a batch whose identifier has landed already leaves the commit.
 */
export class BatchClaims {
  private live: number[];
  readonly landedBefore = new Map<number, LandedBatch>();
  private readonly claims: Array<IdentifierClaim | undefined>;

  constructor(
    private readonly ctx: CommitContext,
    sm: SnapshotManager,
    private readonly original: CommitRequest,
  ) {
    const ids = original.batchIdentifiers ?? [];
    this.claims = ids.map((id) =>
      id === undefined ? undefined : new IdentifierClaim(ctx.store, sm, id, ctx.commitUuid, ctx.now),
    );
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
    for (const { snapshot: s } of this.landedBefore.values())
      if (s !== undefined && (newest === undefined || s.id > newest.id)) newest = s;
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
      properties: {
        ...o.properties,
        [BATCH_IDENTIFIERS_PROPERTY]: JSON.stringify(ids.filter((id) => id !== undefined)),
      },
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
   * may move it forward, and then every other claim is moved with it, at once: the newer base is
   * known). At most CLAIM_RETRIES such moves, then CommitRetriesExhaustedError.
   */
  async claimAll(base: Snapshot | undefined): Promise<Snapshot | undefined> {
    const budget = new RetryBudget({
      what: `claiming the batch identifiers of a group commit to ${displayTableName(this.ctx.tablePath)}`,
      maxRetries: CLAIM_RETRIES,
      minWaitMs: 0,
      maxWaitMs: 0,
      advice: 'other commits kept taking the claims over; retry the commit',
      exhausted: (message, retries, cause) => new CommitRetriesExhaustedError(message, retries, { cause }),
    });
    return budget.run(async (): Promise<Snapshot | undefined | TryAgain> => {
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
      return new TryAgain(`a claim was taken over on snapshot ${target?.id ?? 'none'}: every claim moves there`);
    });
  }
}
