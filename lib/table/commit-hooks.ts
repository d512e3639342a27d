/**
 * Work a table runs around every commit, whatever the action (append, overwrite, rewrite, compact,
 * alter): the one commit loop calls them (lib/table/table-commit.ts). The table layer only calls
 * the hooks; inline compaction (lib/maintenance/compact-trigger.ts) and the Iceberg export
 * (lib/iceberg/export-trigger.ts) sit above it and are passed in by the catalog that opens the
 * table, so the write path never imports a higher layer. Each hook decides which actions concern it.
 */
import type { CommitActionName } from '../snapshot/commit-action.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import type { Table } from './table.js';

/** A (partition, bucket) a commit writes to. */
export interface TouchedBucket {
  partition: string;
  bucket: number;
}

/** What a commit does, as its hooks see it. */
export interface CommitInfo {
  /** The action committing (commit-action.ts COMMIT_ACTION_NAMES). */
  action: CommitActionName;
  kind: 'APPEND' | 'COMPACT' | 'OVERWRITE';
  /** The buckets it adds files to. */
  touched: readonly TouchedBucket[];
}

export interface CommitHooks {
  /** Runs before a commit's first attempt; may compact first, or refuse the commit (WriteStallError). */
  beforeCommit(table: Table, commit: CommitInfo): Promise<void>;
  /** Runs after a commit created its snapshot; a failure here is reported, never makes the commit look failed. */
  afterCommit(table: Table, snapshot: Snapshot, commit: CommitInfo): Promise<void>;
}

/** Hooks that do nothing: a table opened without a catalog compacts only when asked to. */
export const NO_COMMIT_HOOKS: CommitHooks = {
  beforeCommit: async () => {},
  afterCommit: async () => {},
};
