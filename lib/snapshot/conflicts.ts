/**
 * Conflict checks of a commit against the snapshot it is about to follow, run on every attempt
 * (a lost race means a new base, so they run again). A conflict is real — another commit changed
 * what this one relied on — and is never retried blindly (CommitConflictError):
 * - every file the commit removes must still be live (two compactions of the same input);
 * - no file the commit adds may be live already (a replay from outside the dedup window);
 * - per (partition, bucket, level ≥ 1), files must not overlap in key range after the commit;
 * - every live file of a partition has the same totalBuckets.
 */
import { CommitConflictError, StaleBucketCountError } from '../errors.js';
import { describeEntry, fileIdentity } from '../manifest/file-entries.js';
import type { ManifestCache } from '../manifest/manifest-file.js';
import { findPartitionTotalBuckets, foldLiveFiles, touchedFilter } from '../manifest/scan.js';
import type { ManifestEntry, ManifestFileMeta } from '../manifest/types.js';
import type { JsonValue } from '../schema/value-codec.js';
import type { ObjectStore } from '../store/object-store.js';
import { type BucketSummary, summaryTotalBuckets } from './bucket-summary.js';

/** The inputs of a conflict check. */
export interface ConflictCheckInput {
  store: ObjectStore;
  tablePath: string;
  /** The snapshot the commit would follow (undefined for the first commit) and its manifests. */
  baseSnapshotId: number | undefined;
  manifests: readonly ManifestFileMeta[];
  adds: readonly ManifestEntry[];
  deletes: readonly ManifestEntry[];
  /** Check level-0 ADDs against live files too (see CommitOptions.checkAppendFiles). */
  checkAppendFiles: boolean;
  /**
   * The base's live files per bucket less `deletes`, when the base carries them and holds every
   * file removed (bucket-summary.ts bucketSummaryWithout): the partitions' bucket counts are then
   * read there instead of in the manifests.
   */
  summaryLeft?: BucketSummary;
  /**
   * No snapshot up to the base holds any file the commit adds (CommitOptions.addsUnseenThrough
   * named this base): none is live, so level-0 ADDs are not looked for among the live files.
   */
  addsUnseen?: boolean;
  compareKeys: (a: JsonValue[], b: JsonValue[]) => number;
  cache?: ManifestCache;
}

const MAX_NAMED = 10;

function names(entries: readonly ManifestEntry[]): string {
  const shown = entries.slice(0, MAX_NAMED).map(describeEntry).join(', ');
  return entries.length > MAX_NAMED ? `${shown} and ${entries.length - MAX_NAMED} more` : shown;
}

function where(id: number | undefined): string {
  return id === undefined ? 'the empty table' : `snapshot ${id}`;
}

async function checkTotalBuckets(input: ConflictCheckInput): Promise<void> {
  const own = new Map<string, ManifestEntry>();
  for (const e of input.adds) {
    const first = own.get(e.partition);
    if (first === undefined) own.set(e.partition, e);
    else if (first.totalBuckets !== e.totalBuckets) {
      throw new CommitConflictError(
        `the commit adds files to partition '${e.partition}' for ${first.totalBuckets} and for ${e.totalBuckets} buckets; ` +
          'all files of a partition must be written for the same bucket count',
        { files: [first.file.fileName, e.file.fileName] },
      );
    }
  }
  if (own.size === 0) return;
  const removed = new Set(input.deletes.map(fileIdentity));
  // The base's summary less the removed files answers as the manifests would (bucket-summary.ts).
  const live = input.summaryLeft
    ? summaryTotalBuckets(input.summaryLeft, own.keys())
    : await findPartitionTotalBuckets(
        input.store,
        input.tablePath,
        input.manifests,
        new Set(own.keys()),
        removed,
        input.cache,
      );
  for (const [partition, e] of own) {
    const n = live.get(partition);
    if (n !== undefined && n !== e.totalBuckets) {
      throw new StaleBucketCountError(
        `partition '${partition}' has ${n} buckets in ${where(input.baseSnapshotId)} but the commit adds ${e.file.fileName} ` +
          `written for ${e.totalBuckets} buckets; the bucket count of a partition changes only by overwriting all of it — ` +
          "write with the table's current bucket count",
        partition,
        n,
        e.totalBuckets,
        { snapshotId: input.baseSnapshotId, files: [e.file.fileName] },
      );
    }
  }
}

function bucketOf(e: ManifestEntry): string {
  return JSON.stringify([e.partition, e.bucket]);
}

function checkOverlaps(
  after: readonly ManifestEntry[],
  adds: readonly ManifestEntry[],
  input: ConflictCheckInput,
): void {
  const groupOf = (e: ManifestEntry): string => JSON.stringify([e.partition, e.bucket, e.file.level]);
  const touched = new Set(adds.filter((e) => e.file.level >= 1).map(groupOf));
  if (touched.size === 0) return;
  const groups = new Map<string, ManifestEntry[]>();
  for (const e of after) {
    const g = groupOf(e);
    if (!touched.has(g)) continue;
    const list = groups.get(g);
    if (list) list.push(e);
    else groups.set(g, [e]);
  }
  for (const files of groups.values()) {
    files.sort((a, b) => input.compareKeys(a.file.minKey, b.file.minKey));
    for (let i = 1; i < files.length; i++) {
      const a = files[i - 1];
      const b = files[i];
      // A sorted run above level 0 holds each key once: ranges must be strictly apart.
      if (input.compareKeys(a.file.maxKey, b.file.minKey) >= 0) {
        throw new CommitConflictError(
          `files ${describeEntry(a)} and ${describeEntry(b)} would overlap in key range on level ${a.file.level} after this commit ` +
            `(on ${where(input.baseSnapshotId)}); another compaction changed this bucket — re-plan the compaction from the latest snapshot`,
          { snapshotId: input.baseSnapshotId, files: [a.file.fileName, b.file.fileName] },
        );
      }
    }
  }
}

/** Throws CommitConflictError when the commit cannot follow the given base; see the file comment. */
export async function checkCommitConflicts(input: ConflictCheckInput): Promise<void> {
  await checkTotalBuckets(input);
  const relevantAdds =
    input.checkAppendFiles && !input.addsUnseen ? input.adds : input.adds.filter((e) => e.file.level >= 1);
  const changed = [...input.deletes, ...relevantAdds];
  const touched = new Set(changed.map(bucketOf));
  if (touched.size === 0) return;
  const partitions = new Set(changed.map((e) => e.partition));
  const buckets = new Set(changed.map((e) => e.bucket));
  const live = (
    await foldLiveFiles(input.store, input.tablePath, input.manifests, touchedFilter(partitions, buckets), input.cache)
  ).filter((e) => touched.has(bucketOf(e)));
  const liveIds = new Map(live.map((e) => [fileIdentity(e), e]));

  const gone = input.deletes.filter((e) => !liveIds.has(fileIdentity(e)));
  if (gone.length > 0) {
    throw new CommitConflictError(
      `the commit removes files that are no longer live in ${where(input.baseSnapshotId)} (another commit removed them): ` +
        `${names(gone)}; re-plan from the latest snapshot`,
      { snapshotId: input.baseSnapshotId, files: gone.map((e) => e.file.fileName) },
    );
  }
  const already = relevantAdds.filter((e) => liveIds.has(fileIdentity(e)));
  if (already.length > 0) {
    throw new CommitConflictError(
      `the commit adds files that are already live in ${where(input.baseSnapshotId)}: ${names(already)}; ` +
        'they were committed before (under another identifier, or longer ago than the dedup lookback) — do not commit them again',
      { snapshotId: input.baseSnapshotId, files: already.map((e) => e.file.fileName) },
    );
  }
  const removed = new Set(input.deletes.map(fileIdentity));
  const after = [
    ...live.filter((e) => !removed.has(fileIdentity(e))),
    ...input.adds.filter((e) => touched.has(bucketOf(e))),
  ];
  checkOverlaps(after, input.adds, input);
}
