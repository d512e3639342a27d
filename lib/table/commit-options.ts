/** Commit-loop settings of a table, from its options (`commit.*`, `manifest.*`). */
import type { CommitOptions } from '../snapshot/commit.js';
import { deletionVectorPlanner } from './deletion-maintenance.js';
import type { Table } from './table.js';

/** The CommitOptions a table's commits run with. */
export function commitOptionsFor(table: Table, overrides: Partial<CommitOptions> = {}): CommitOptions {
  const o = table.options;
  return {
    maxRetries: o.commitMaxRetries,
    minRetryWaitMs: o.commitMinRetryWait,
    maxRetryWaitMs: o.commitMaxRetryWait,
    timeoutMs: o.commitTimeout,
    manifestTargetFileSize: o.manifestTargetFileSize,
    manifestMergeMinCount: o.manifestMergeMinCount,
    manifestFullCompactionThresholdSize: o.manifestFullCompactionThresholdSize,
    compareKeys: table.compareKeys,
    snapshotManager: table.commitSnapshots,
    manifestCache: table.manifestCache,
    deletionVectors: deletionVectorPlanner(table),
    ...overrides,
  };
}
