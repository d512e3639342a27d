/**
 * The commit protocol (DESIGN.md "The commit protocol"), iceberg-rust style: every table operation
 * is an action (commit-action.ts) that plans `{changes, requirements}` on a base snapshot, and ONE
 * loop (runCommit) loads the base, asks the action to plan (again after a schema change or a
 * conflict it can re-plan from), re-applies the changes on the base of each attempt (sequence
 * numbers, conflict checks, manifests under new names: commit-plan.ts), creates `snapshot-<N>`
 * with put-if-absent, runs the commit hooks, and retries only what is retryable — a lost race for
 * N, a 409, a store hiccup — with backoff, under one budget (lib/retry-budget.ts). Idempotent on
 * (commitUser, commitIdentifier, kind): a commit that already landed is found, not repeated.
 */
import { InvalidArgumentError } from '../errors.js';
import type { ObjectStore } from '../store/object-store.js';
import { requestAction, type CommitAction } from './commit-action.js';
import type { CommitOptions, CommitRequest } from './commit-request.js';
import { CommitRun } from './commit-run.js';
import type { CommitResult } from './commit-steps.js';
import { SnapshotManager } from './snapshot-manager.js';

export type { CommitBatch, CommitLoopHooks, CommitOptions, CommitRequest, FileChange } from './commit-request.js';
export type { ActionPlan, CommitAction, CommitActionName } from './commit-action.js';
export { COMMIT_ACTION_NAMES, requestAction } from './commit-action.js';
export type { CommitResult } from './commit-steps.js';

/**
 * Commits `req` to the table at `tablePath` as it is (requestAction): see runCommit.
 */
export async function commit(
  store: ObjectStore,
  tablePath: string,
  req: CommitRequest,
  opts: CommitOptions,
): Promise<CommitResult> {
  return runCommit(store, tablePath, requestAction(req), opts);
}

/**
 * THE commit loop: commits `action` to the table at `tablePath` and returns the new snapshot, or
 * the one an earlier call with the same identity created. Throws CommitConflictError on a real
 * conflict the action does not re-plan from (never retried blindly), SchemaChangedError when it
 * cannot be planned under a newer schema, CommitRetriesExhaustedError when the one retry budget
 * (commit.max-retries, commit.timeout) runs out, and non-retryable store errors at once (the commit
 * may then have landed or not: call again with the same identity).
 */
export async function runCommit(
  store: ObjectStore,
  tablePath: string,
  action: CommitAction,
  opts: CommitOptions,
): Promise<CommitResult> {
  const sm = opts.snapshotManager ?? new SnapshotManager(store, tablePath);
  if (sm.store !== store || sm.tablePath !== tablePath) {
    throw new InvalidArgumentError(
      `opts.snapshotManager belongs to table ${sm.tablePath}, not ${tablePath}; pass one made for this table`,
    );
  }
  const run = new CommitRun(store, tablePath, sm, action, opts);
  for (;;) {
    try {
      const done = await run.attempt();
      if (done !== undefined) return await run.finish(done);
    } catch (e) {
      await run.recover(e);
    }
  }
}
