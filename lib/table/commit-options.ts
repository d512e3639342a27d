/** Commit-loop settings of a table, from its options (`commit.*`, `manifest.*`). */
import type { CommitOptions } from '../snapshot/commit.js';
import type { Table } from './table.js';

/** The CommitOptions a table's commits run with. */
export function commitOptionsFor(table: Table, overrides: Partial<CommitOptions> = {}): CommitOptions {
  const o = table.options;
  return {
    maxRetries: o.get('commit.max-retries') as number,
    minRetryWaitMs: o.get('commit.min-retry-wait') as number,
    maxRetryWaitMs: o.get('commit.max-retry-wait') as number,
    timeoutMs: (o.get('commit.timeout') as number | undefined) ?? undefined,
    manifestTargetFileSize: o.get('manifest.target-file-size') as number,
    manifestMergeMinCount: o.get('manifest.merge-min-count') as number,
    manifestFullCompactionThresholdSize: o.get('manifest.full-compaction-threshold-size') as number,
    compareKeys: table.compareKeys,
    snapshotManager: table.commitSnapshots,
    manifestCache: table.manifestCache,
    ...overrides,
  };
}
