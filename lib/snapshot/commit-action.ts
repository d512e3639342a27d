/**
 * A table operation as the commit loop (commit.ts) sees it, iceberg-rust's transaction/action
 * shape: an action plans `{changes, requirements}` against a base snapshot; the one loop loads the
 * base, asks the action to plan (again after a schema change or a conflict it can re-plan from),
 * checks the requirements, creates the snapshot with the conditional put, runs the commit hooks
 * and backs off under one retry budget. A new operation is one file with one `plan`.
 *
 * A lost race does not call `plan` again: the loop re-applies the same changes on the new base
 * (sequence numbers, the partitions an overwrite replaces, the conflict checks: commit-plan.ts),
 * unless its plan requires the base it was made on (`baseSnapshotId`: a rollback, a group commit
 * that re-checks its batches against the snapshots that landed first); a plan on the new base that
 * holds nothing to commit ends the call without a snapshot.
 */
import type { CommitConflictError } from '../errors.js';
import type { CommitRequest } from './commit-request.js';
import type { Snapshot } from './snapshot.js';

/**
 * Every kind of action that commits a snapshot. The must-show test (test/table/commit-actions.test.ts)
 * runs one of each through a table and checks it ran the hooks, so a kind added here without a
 * test scenario fails to compile there.
 */
export const COMMIT_ACTION_NAMES = [
  /** One writer's batch, or many writers' batches folded into one snapshot (group commit). */
  'append',
  /** INSERT OVERWRITE: write --overwrite, truncate, drop-partition. */
  'overwrite',
  /** Live files rewritten: delete --where on an append table, rescale. */
  'rewrite',
  /** A compaction run's buckets. */
  'compact',
  /** The empty snapshot recording a schema change. */
  'alter',
  /** A request built elsewhere, committed as it is (the commit function, tests). */
  'request',
  /** varve rollback: a snapshot whose live files are a chosen earlier snapshot's (maintenance/rollback.ts). */
  'rollback',
] as const;

/** The kind of a commit action (COMMIT_ACTION_NAMES). */
export type CommitActionName = (typeof COMMIT_ACTION_NAMES)[number];

/** What an action relies on in the base snapshot it commits on, checked by the loop before each put. */
export interface CommitRequirements {
  /**
   * The schema the changes were written under: a base with a newer schema (an alter landed) makes
   * the loop ask the action to plan again; undefined: any schema (files read by field id).
   * The file-level requirements (removed files still live, no overlap above level 0, one bucket
   * count per partition) follow from the changes and are always checked (conflicts.ts).
   */
  schemaId?: number;
  /**
   * The changes hold on this base snapshot only (a rollback's delta is the difference between that
   * base and its target; a group commit's batches less those found landed up to it): on any other
   * base (a commit landed first) the loop asks the action to plan again before the put, and a plan
   * with nothing to commit ends the call without a snapshot. Undefined: any base (the loop
   * re-applies the changes); 0: the table without a snapshot.
   */
  baseSnapshotId?: number;
}

/** The changes of an action on one base, and what they rely on. */
export interface ActionPlan {
  changes: CommitRequest;
  requirements: CommitRequirements;
}

/** See the file comment. */
export interface CommitAction {
  readonly name: CommitActionName;
  /**
   * The plan on `base` (the latest snapshot; undefined for an empty table). Called first, then
   * again after the base's schema moved past the plan's requirement, and after a conflict that
   * `onConflict` answered with true. Throws SchemaChangedError when it cannot be planned under a
   * newer schema.
   */
  plan(base: Snapshot | undefined): Promise<ActionPlan>;
  /**
   * A real conflict (CommitConflictError) with what another commit did: true to be planned again
   * on the latest snapshot (a compaction dropping the conflicting buckets, a rewrite redone),
   * false to fail with it. Absent: fail.
   */
  onConflict?(e: CommitConflictError): Promise<boolean>;
  /** After the commit is known to hold: `alreadyCommitted` means an earlier call made it, so what this one wrote is unreferenced. */
  settle?(outcome: { alreadyCommitted: boolean }): Promise<void>;
}

/**
 * An action whose changes do not depend on the base (an append's batches, an overwrite's files, an
 * alter's empty snapshot: the loop re-applies them on each base), committed as `name`. Its schema
 * requirement is the request's schema unless `acceptOlderSchema`; planned again under a newer
 * schema it stays the same, so the loop fails with SchemaChangedError.
 */
export function requestAction(req: CommitRequest, name: CommitActionName = 'request'): CommitAction {
  const plan: ActionPlan = {
    changes: req,
    requirements: { schemaId: req.acceptOlderSchema ? undefined : req.schemaId },
  };
  return { name, plan: async () => plan };
}
