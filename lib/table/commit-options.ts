/** Commit-loop settings of a table, from its options (`commit.*`, `manifest.*`). */
import type { CommitOptions } from '../snapshot/commit.js';
import { deletionVectorPlanner } from './deletion-maintenance.js';
import type { Table } from './table.js';
import type { CompactionDue } from '../snapshot/queued-jobs.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import { BATCHES_PROPERTY, SOURCES_PROPERTY } from './recent-batches.js';
import { carriedWindowCheckpoint, WINDOW_PROPERTY } from './window-checkpoint.js';

/** Per table object: how its committer judges a bucket due, when it sends compaction jobs (sendsCompactionJobs). */
const jobSenders = new WeakMap<Table, CompactionDue>();

/**
 * Marks `table`'s committer as one that sends compaction jobs after its commits (the functions):
 * its snapshots then record the buckets with a job queued (lib/snapshot/queued-jobs.ts).
 */
export function sendsCompactionJobs(table: Table, due: CompactionDue): void {
  jobSenders.set(table, due);
}

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
    compactionDue: jobSenders.get(table),
    carriedProperties: carriedWindow,
    ...overrides,
  };
}

/**
 * What a commit holding no batch or source ids carries from its base: the deduplication window's
 * checkpoint (window-checkpoint.ts carriedWindowCheckpoint). A commit holding ids is a group
 * commit (which writes its own) or an older kind of writer (which writes none).
 */
function carriedWindow(base: Snapshot, properties: Readonly<Record<string, string>>): Record<string, string> {
  if (BATCHES_PROPERTY in properties || SOURCES_PROPERTY in properties || WINDOW_PROPERTY in properties) return {};
  const window = carriedWindowCheckpoint(base, [BATCHES_PROPERTY, SOURCES_PROPERTY]);
  return window === undefined ? {} : { [WINDOW_PROPERTY]: window };
}
