/**
 * Compaction on the write path (Paimon's writer-side compaction manager, run inline): before an
 * APPEND commit, a bucket with more sorted runs than `num-sorted-run.stop-trigger` is compacted
 * first — or, for a `write-only` table, the write stalls with WriteStallError; after the commit,
 * the buckets it touched are compacted when universal compaction picks something (with
 * `changelog-producer = lookup`, every level-0 file is taken up at once, so changelog follows the
 * data), and `full-compaction.delta-commits` runs a full compaction every N APPEND commits.
 */
import { CommitConflictError, CommitRetriesExhaustedError, WriteStallError } from '../errors.js';
import type { LruManifestCache } from '../manifest/manifest-file.js';
import { readLiveFiles, touchedFilter } from '../manifest/scan.js';
import type { ManifestEntry } from '../manifest/types.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import type { CommitHooks, TouchedBucket } from '../table/commit-hooks.js';
import type { Table } from '../table/table.js';
import { FULL_COMPACTION_PROPERTY, compactBuckets, compactTable, groupByBucket } from './compact.js';
import { sortedRunCount } from './compact-plan.js';
import { compactionSettingsOf, type CompactionSettings } from './compaction-settings.js';
import { summaryRuns, usableSummary } from './summary-runs.js';

// Manifests are immutable, so the table object's cache serves every commit of a long-lived
// writer process: each check reads only the manifests written since the last one.
function cacheOf(table: Table): LruManifestCache {
  return table.manifestCache;
}

/** The live files of the touched buckets in `snapshot`, per bucket (buckets with no file are left out). */
export async function touchedBucketFiles(
  table: Table,
  snapshot: Snapshot,
  touched: readonly TouchedBucket[],
  cache: LruManifestCache = cacheOf(table),
): Promise<Array<{ partition: string; bucket: number; entries: ManifestEntry[] }>> {
  const wanted = new Set(touched.map((t) => JSON.stringify([t.partition, t.bucket])));
  const partitions = new Set(touched.map((t) => t.partition));
  const buckets = new Set(touched.map((t) => t.bucket));
  const entries = await readLiveFiles(table.store, table.path, snapshot, touchedFilter(partitions, buckets), cache);
  return groupByBucket(entries.filter((e) => wanted.has(JSON.stringify([e.partition, e.bucket]))));
}

/**
 * Runs before an APPEND commit of rows into `touched`: a bucket over the stop trigger is compacted
 * now (the write waits for it, as Paimon's writer does), or, on a write-only table, the write is
 * refused with WriteStallError.
 */
export async function beforeAppendCommit(table: Table, touched: readonly TouchedBucket[]): Promise<void> {
  if (touched.length === 0) return;
  const settings = compactionSettingsOf(table);
  // A warm writer checks against the newest snapshot it knows (no request): the stop trigger is
  // back-pressure, and runs other writers added since only delay it by a commit or so.
  // A cold one looks it up through the committer's caching manager: the commit then starts from it.
  const latest = table.commitSnapshots.newestKnown() ?? (await table.commitSnapshots.latest());
  if (!latest) return;
  const counts = await sortedRunsOf(table, latest, touched, settings);
  const over = touched.filter((_, i) => counts[i] > settings.stopTrigger);
  if (over.length === 0) return;
  const groups = await touchedBucketFiles(table, latest, over);
  const stalled: typeof groups = [];
  for (const g of groups) {
    const runs = sortedRunCount(g.entries, settings, table.compareKeys);
    if (runs <= settings.stopTrigger) continue;
    if (settings.writeOnly) {
      const where = g.partition === '' ? `bucket ${g.bucket}` : `bucket ${g.bucket} of partition ${g.partition}`;
      throw new WriteStallError(
        `${table.name}: ${where} has ${runs} sorted runs, more than num-sorted-run.stop-trigger (${settings.stopTrigger}), ` +
          `and the table is write-only; run \`varve compact ${table.name}\` (or let the compaction function catch up), then retry the write`,
      );
    }
    stalled.push(g);
  }
  // One compaction run, one COMPACT snapshot, however many buckets are over the trigger.
  if (stalled.length > 0) await swallowContention(compactBuckets(table, stalled, { manifestCache: cacheOf(table) }));
}

/** Per table object: the sorted runs of each bucket checked in one snapshot (see sortedRunsOf). */
const checkedRuns = new WeakMap<Table, { snapshotId: number; runs: Map<string, Promise<number>> }>();

/**
 * The sorted runs of each of `touched` in `snapshot`, in order. A snapshot never changes, so the
 * count of a bucket in it is kept (per table object, for its newest snapshot only) and shared by
 * every writer that checks that bucket before the next snapshot: sixteen writers of one process
 * handing their batches to one committer (lib/table/shared-committer.ts) check the same snapshot
 * about five times per round, and each check folds the table's live files (its cost grows with
 * the table). A failed count is forgotten, so the next check reads again.
 */
async function sortedRunsOf(
  table: Table,
  snapshot: Snapshot,
  touched: readonly TouchedBucket[],
  settings: CompactionSettings,
): Promise<number[]> {
  // Carried by the snapshot: no manifest to read (summary-runs.ts).
  const summary = usableSummary(snapshot, settings);
  if (summary) return touched.map((t) => summaryRuns(summary, t, settings)?.sortedRuns ?? 0);
  let memo = checkedRuns.get(table);
  if (memo?.snapshotId !== snapshot.id) checkedRuns.set(table, (memo = { snapshotId: snapshot.id, runs: new Map() }));
  const { runs } = memo;
  const keyOf = (t: TouchedBucket): string => JSON.stringify([t.partition, t.bucket]);
  const missing = touched.filter((t) => !runs.has(keyOf(t)));
  if (missing.length > 0) {
    const groups = touchedBucketFiles(table, snapshot, missing);
    for (const t of missing) {
      const key = keyOf(t);
      const count = groups.then((gs) => {
        const g = gs.find((x) => x.partition === t.partition && x.bucket === t.bucket);
        return g === undefined ? 0 : sortedRunCount(g.entries, settings, table.compareKeys);
      });
      runs.set(key, count);
      count.catch(() => {
        if (runs.get(key) === count) runs.delete(key);
      });
    }
  }
  return Promise.all(touched.map((t) => runs.get(keyOf(t))!));
}

/**
 * Runs after the APPEND commit `snapshot` of rows into `touched` (not for write-only tables):
 * compacts what is due in those buckets, and runs the full compaction `full-compaction.delta-commits`
 * schedules.
 */
async function afterAppendCommit(table: Table, snapshot: Snapshot, touched: readonly TouchedBucket[]): Promise<void> {
  const settings = compactionSettingsOf(table);
  if (settings.writeOnly || touched.length === 0) return;
  if (
    settings.fullCompactionDeltaCommits !== undefined &&
    (await fullCompactionDue(table, snapshot, settings.fullCompactionDeltaCommits))
  ) {
    await compactTable(table, { full: true });
    return;
  }
  const groups = await touchedBucketFiles(table, snapshot, touched);
  // Every touched bucket in one compaction run: a lookup-producer write into 18 buckets makes one
  // APPEND and one COMPACT snapshot, not 19 (compact-commit.ts).
  await swallowContention(compactBuckets(table, groups, { manifestCache: cacheOf(table) }));
}

/** Per table object: APPEND snapshots counted since the last full compaction, up to a snapshot id. */
const fullCompactionCounts = new WeakMap<Table, { upTo: number; appends: number }>();

/**
 * True when at least `deltaCommits` APPEND snapshots followed the last full compaction, counting
 * back from `snapshot` (a history expired before a full compaction was found counts as due).
 * Snapshots are immutable, so each table object reads every snapshot at most once for this.
 */
async function fullCompactionDue(table: Table, snapshot: Snapshot, deltaCommits: number): Promise<boolean> {
  const known = fullCompactionCounts.get(table);
  const floor = known && known.upTo <= snapshot.id ? known.upTo : 0;
  let appends = 0;
  let sawFull = false;
  let expired = false;
  for (let id = snapshot.id; id > floor; id--) {
    const s = id === snapshot.id ? snapshot : await table.snapshots.tryRead(id);
    if (s === undefined) {
      expired = true;
      break;
    }
    if (s.properties?.[FULL_COMPACTION_PROPERTY] === 'true') {
      sawFull = true;
      break;
    }
    if (s.commitKind === 'APPEND') appends++;
  }
  if (!sawFull && !expired && floor > 0) appends += known!.appends;
  fullCompactionCounts.set(table, { upTo: snapshot.id, appends });
  return appends >= deltaCommits || (expired && appends > 0);
}

/**
 * Inline compaction must not fail a write that already committed (or is about to) because another
 * compactor was busy with the same bucket: the next commit tries again.
 */
async function swallowContention(job: Promise<unknown>): Promise<void> {
  try {
    await job;
  } catch (e) {
    if (!(e instanceof CommitConflictError) && !(e instanceof CommitRetriesExhaustedError)) throw e;
  }
}

/**
 * Inline compaction as the table's commit hooks: what the catalogs pass to every table they open.
 * It follows APPEND actions only (a writer's back-pressure and its compaction, as Paimon's writer):
 * an overwrite, a rewrite or an alter leaves compaction to the next append or to `varve compact`,
 * and a compaction's own commit must not start another.
 */
export const INLINE_COMPACTION: CommitHooks = {
  beforeCommit: async (table, commit) => {
    if (commit.action === 'append') await beforeAppendCommit(table, commit.touched);
  },
  afterCommit: async (table, snapshot, commit) => {
    if (commit.action === 'append') await afterAppendCommit(table, snapshot, commit.touched);
  },
};
