/**
 * A bucket's sorted runs and whether compaction is due in it, from what its snapshot carries per
 * bucket (lib/snapshot/bucket-summary.ts) instead of from its live files: the back-pressure check
 * before a commit and the compaction-job check after one, without reading a manifest. The answers
 * are those of sortedRunCount and planBucketCompaction on the live files (compact-plan.ts): the
 * LSM levels are built from stand-ins with the same levels, sequence numbers, creation times,
 * file counts and run sizes — all that the level-0 order and universal compaction's pick read.
 * An append table (small-file compaction weighs each file) reads its files instead.
 */
import { Levels } from '../mergetree/levels.js';
import { type BucketSummary, bucketSummaryOf, standInFiles, summaryBucketFiles } from '../snapshot/bucket-summary.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import type { TouchedBucket } from '../table/commit-hooks.js';
import { pickUnit } from './compact-plan.js';
import type { CompactionSettings } from './compaction-settings.js';

/** A bucket's sorted runs and due compaction. */
export interface SummaryRuns {
  sortedRuns: number;
  due: boolean;
}

/**
 * The summary of `snapshot` when it carries one that answers for `settings`' table, else
 * undefined (read the live files).
 */
export function usableSummary(snapshot: Snapshot, settings: CompactionSettings): BucketSummary | undefined {
  return settings.append ? undefined : bucketSummaryOf(snapshot);
}

/** The sorted runs and due compaction of `t` in `summary` (see the file comment); undefined when it holds no file. */
export function summaryRuns(
  summary: BucketSummary,
  t: TouchedBucket,
  settings: CompactionSettings,
): SummaryRuns | undefined {
  const files = summaryBucketFiles(summary, t.partition, t.bucket);
  if (!files) return undefined;
  // No key comparator: stand-ins have no keys, and their levels were checked when committed.
  const levels = new Levels(standInFiles(files), settings.numLevels);
  return { sortedRuns: levels.numberOfSortedRuns(), due: pickUnit(levels, settings, false) !== undefined };
}
