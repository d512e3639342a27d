/**
 * Work a table runs around its APPEND commits. The table layer only calls the hooks; inline
 * compaction (lib/maintenance/compact-trigger.ts) sits above it and is passed in by the catalog
 * that opens the table, so the write path never imports a higher layer.
 */
import type { Snapshot } from '../snapshot/snapshot.js';
import type { Table } from './table.js';

/** A (partition, bucket) a commit writes to. */
export interface TouchedBucket {
  partition: string;
  bucket: number;
}

export interface AppendCommitHooks {
  /** Runs before an APPEND commit into `touched`; may compact first, or refuse the write (WriteStallError). */
  beforeAppendCommit(table: Table, touched: readonly TouchedBucket[]): Promise<void>;
  /** Runs after an APPEND commit landed; a failure here is reported, never makes the write look failed. */
  afterAppendCommit(table: Table, snapshot: Snapshot, touched: readonly TouchedBucket[]): Promise<void>;
}

/** Hooks that do nothing: a table opened without a catalog compacts only when asked to. */
export const NO_COMMIT_HOOKS: AppendCommitHooks = {
  beforeAppendCommit: async () => {},
  afterAppendCommit: async () => {},
};
