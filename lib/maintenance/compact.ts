/**
 * Compaction as a maintenance action: plan a bucket's compaction from the latest snapshot, run
 * it, write its outputs (and changelog), and commit one COMPACT snapshot. A COMPACT commit that
 * conflicts (its inputs were compacted by someone else meanwhile) is never retried as is: the
 * job deletes what it wrote and plans again from the new latest snapshot, a bounded number of
 * times. Input files are never deleted here (expiry does that once no snapshot needs them), so a
 * reader never finds a file missing, whatever happens to the job.
 */
import { createHash } from 'node:crypto';
import type * as arrow from 'apache-arrow';
import { CommitConflictError, InvalidArgumentError } from '../errors';
import { LruManifestCache, type ManifestCache } from '../manifest/manifest-file';
import { readLiveFiles } from '../manifest/scan';
import type { ManifestEntry, Snapshot } from '../manifest/types';
import { lookupCandidates, lookupChangelog } from '../mergetree/changelog/lookup';
import { FullCompactionChangelog } from '../mergetree/changelog/full-compaction';
import { runCompactTask } from '../mergetree/compact-task';
import { mergeEngineFor } from '../mergetree/merge-function';
import { mergeConfigFromOptions } from '../mergetree/merge-config';
import { parsePartitionPath } from '../schema/partition';
import { commit, type FileChange } from '../snapshot/commit';
import { commitOptionsFor } from '../table/commit-options';
import type { Table } from '../table/table';
import { BucketFileIO } from './compact-io';
import { planBucketCompaction, sortedRunCount, type BucketPlan } from './compact-plan';
import { compactionSettingsOf, type CompactionSettings } from './compaction-settings';

/** The commit user of every compaction; a retried job is recognised by its identifier. */
export const COMPACT_COMMIT_USER = 'compactor';
/** Snapshot property set on the COMPACT snapshots of full compactions (full-compaction.delta-commits counts from them). */
export const FULL_COMPACTION_PROPERTY = 'varve.full-compaction';

export interface CompactBucketOptions {
  /** Compact every run into the max level (default: only what universal compaction picks). */
  full?: boolean;
  /** Plans after a commit conflict before giving up (default 3). */
  maxAttempts?: number;
  /** The snapshot and the bucket's live files in it, when the caller has them (saves a manifest read). */
  initial?: { snapshot: Snapshot; entries: ManifestEntry[] };
  /** Shared across the buckets of one job, so each manifest is read once. */
  manifestCache?: ManifestCache;
}

/** What compacting one bucket did. */
export interface BucketCompactionResult {
  partition: string;
  bucket: number;
  /** The COMPACT snapshot, when one was committed (or had been, by an earlier run of the same job). */
  snapshot?: Snapshot;
  /** True when an earlier attempt of the same job had already committed it. */
  alreadyCommitted: boolean;
  filesIn: number;
  filesOut: number;
  upgradedFiles: number;
  bytesIn: number;
  bytesOut: number;
  changelogFiles: number;
  changelogRows: number;
  /** Plans made (1 + re-plans after conflicts). */
  attempts: number;
}

function emptyResult(partition: string, bucket: number, attempts: number): BucketCompactionResult {
  return { partition, bucket, alreadyCommitted: false, filesIn: 0, filesOut: 0, upgradedFiles: 0, bytesIn: 0, bytesOut: 0, changelogFiles: 0, changelogRows: 0, attempts };
}

/** The live files of one bucket in a snapshot. */
export async function readBucketFiles(table: Table, snapshot: Snapshot, partition: string, bucket: number, cache?: ManifestCache): Promise<ManifestEntry[]> {
  return readLiveFiles(
    table.store,
    table.path,
    snapshot,
    { partition: (p) => p === partition, partitionRange: (min, max) => partition >= min && partition <= max, bucket },
    cache,
  );
}

/**
 * Derived from what the job compacts, so that a retried job that had committed is recognised:
 * the bucket, the mode and every input file with its level (levels only grow, so the same set
 * never comes back).
 */
export function compactCommitIdentifier(partition: string, bucket: number, plan: BucketPlan, full: boolean): string {
  const inputs = plan.unit.files.map((f) => `${f.level}/${f.fileName}`).sort();
  const digest = createHash('sha256').update(JSON.stringify([partition, bucket, full, plan.unit.outputLevel, inputs])).digest('hex');
  return `compact-${digest.slice(0, 32)}`;
}

/**
 * Compacts one bucket: plans from the latest snapshot (or `opts.initial`), runs the unit, commits
 * COMPACT. Returns an empty result when nothing is due. Throws CommitConflictError only when every
 * attempt conflicted.
 */
export async function compactBucket(table: Table, partition: string, bucket: number, opts: CompactBucketOptions = {}): Promise<BucketCompactionResult> {
  const settings = compactionSettingsOf(table);
  const full = opts.full ?? false;
  const maxAttempts = opts.maxAttempts ?? 3;
  const cache = opts.manifestCache ?? new LruManifestCache(100_000);
  let initial = opts.initial;
  for (let attempt = 1; ; attempt++) {
    let entries: ManifestEntry[];
    if (initial) {
      entries = initial.entries;
      initial = undefined;
    } else {
      const latest = await table.snapshots.latest();
      if (!latest) return emptyResult(partition, bucket, attempt);
      entries = await readBucketFiles(table, latest, partition, bucket, cache);
    }
    const plan = planBucketCompaction(entries, settings, table.compareKeys, full);
    if (!plan) return emptyResult(partition, bucket, attempt);
    try {
      return await runPlan(table, settings, partition, bucket, plan, full, attempt, cache);
    } catch (e) {
      // Someone else compacted this bucket first: plan again on what they left.
      if (!(e instanceof CommitConflictError) || attempt >= maxAttempts) throw e;
    }
  }
}

async function runPlan(
  table: Table,
  settings: CompactionSettings,
  partition: string,
  bucket: number,
  plan: BucketPlan,
  full: boolean,
  attempt: number,
  cache: ManifestCache,
): Promise<BucketCompactionResult> {
  const io = new BucketFileIO(table, partition, bucket);
  const engine = mergeEngineFor(mergeConfigFromOptions(table.options));
  const { levels, unit } = plan;
  let committing = false;
  try {
    let changelog: arrow.Table | undefined;
    if (plan.lookupChangelog) {
      const level0 = unit.files.filter((f) => f.level === 0);
      const higher = lookupCandidates(level0, levels.allFiles(), table.compareKeys);
      const read = (files: typeof level0) => Promise.all(files.map(async (file) => ({ file, table: await io.read(file) })));
      changelog = lookupChangelog(await read(level0), await read(higher), { schema: table.schema, engine, rowDeduplicate: settings.rowDeduplicate });
    }
    const fullLog = plan.fullChangelog
      ? new FullCompactionChangelog({ schema: table.schema, engine, maxLevel: levels.maxLevel, rowDeduplicate: settings.rowDeduplicate, read: (f) => io.read(f) })
      : undefined;
    const result = await runCompactTask(
      unit,
      {
        schema: table.schema,
        engine,
        compareKeys: table.compareKeys,
        maxLevel: levels.maxLevel,
        dropDeletes: plan.dropDeletes,
        targetFileSize: settings.targetFileSize,
        compactionFileSize: settings.compactionFileSize,
      },
      io,
      fullLog ?? {},
    );
    if (fullLog) changelog = fullLog.changelog();
    io.release();
    const unitRows = unit.files.reduce((s, f) => s + f.rowCount, 0);
    const bytesPerRow = unitRows > 0 ? plan.inputBytes / unitRows : 1;
    const changelogFiles = changelog && changelog.numRows > 0 ? await io.writeChangelog(changelog, settings.targetFileSize, bytesPerRow) : [];
    if (result.before.length === 0 && changelogFiles.length === 0) return emptyResult(partition, bucket, attempt);

    const change = (file: FileChange['file']): FileChange => ({ partition, bucket, totalBuckets: plan.totalBuckets, file });
    committing = true;
    const committed = await commit(
      table.store,
      table.path,
      {
        commitUser: COMPACT_COMMIT_USER,
        commitIdentifier: compactCommitIdentifier(partition, bucket, plan, full),
        kind: 'COMPACT',
        schemaId: table.schema.id,
        compactBefore: result.before.map(change),
        compactAfter: result.after.map(change),
        compactChangelog: changelogFiles.map(change),
        properties: full ? { [FULL_COMPACTION_PROPERTY]: 'true' } : undefined,
      },
      commitOptionsFor(table, { manifestCache: cache }),
    );
    // An earlier run of this job committed other files for the same plan: ours are not referenced.
    if (committed.alreadyCommitted) await io.deleteWritten();
    return {
      partition,
      bucket,
      snapshot: committed.snapshot,
      alreadyCommitted: committed.alreadyCommitted,
      filesIn: result.before.length,
      filesOut: result.after.length,
      upgradedFiles: result.upgradedFiles,
      bytesIn: result.bytesRead,
      bytesOut: result.bytesWritten,
      changelogFiles: changelogFiles.length,
      changelogRows: changelog?.numRows ?? 0,
      attempts: attempt,
    };
  } catch (e) {
    // Before the commit, or when the commit found a conflict, nothing references what this job
    // wrote. Any other commit failure is ambiguous (the snapshot may exist): leave the files to
    // orphan cleanup rather than risk deleting files a snapshot references.
    if (!committing || e instanceof CommitConflictError) await io.deleteWritten();
    throw e;
  } finally {
    io.release();
  }
}

export interface CompactTableOptions {
  /** Compact every run of each bucket into the max level. */
  full?: boolean;
  /** Only partitions whose values equal these (e.g. `{ dt: '2024-01-01' }`). */
  partition?: Record<string, string>;
  /** Only this bucket number. */
  bucket?: number;
  /**
   * Start no further bucket once the compacted input reached this many bytes, so a call fits a
   * time limit (a Lambda's); the rest is reported as `remainingBuckets`. One bucket's unit is
   * the smallest piece: it always finishes once started.
   */
  maxBytes?: number;
  /** Called after each bucket, with how many of the candidate buckets are done. */
  onProgress?: (p: { done: number; total: number; result: BucketCompactionResult }) => void;
}

/** What compacting a table did. */
export interface CompactionSummary {
  /** Buckets looked at, and those whose compaction committed. */
  bucketsChecked: number;
  bucketsCompacted: number;
  /** Buckets not started because `maxBytes` was reached. */
  remainingBuckets: number;
  /** Buckets given up after repeated conflicts with other compactions. */
  conflicts: number;
  filesIn: number;
  filesOut: number;
  upgradedFiles: number;
  bytesIn: number;
  bytesOut: number;
  changelogFiles: number;
  changelogRows: number;
  /** COMPACT snapshots committed, in order. */
  snapshots: number[];
}

/** Compacts every (partition, bucket) of the table that has something due, most sorted runs first. */
export async function compactTable(table: Table, opts: CompactTableOptions = {}): Promise<CompactionSummary> {
  const summary: CompactionSummary = {
    bucketsChecked: 0, bucketsCompacted: 0, remainingBuckets: 0, conflicts: 0,
    filesIn: 0, filesOut: 0, upgradedFiles: 0, bytesIn: 0, bytesOut: 0, changelogFiles: 0, changelogRows: 0, snapshots: [],
  };
  const matches = partitionMatcher(table, opts.partition);
  const latest = await table.snapshots.latest();
  if (!latest) return summary;
  const cache = new LruManifestCache(1_000_000);
  const entries = await readLiveFiles(table.store, table.path, latest, { partition: matches, bucket: opts.bucket }, cache);
  const settings = compactionSettingsOf(table);
  const groups = groupByBucket(entries).map((g) => ({ ...g, runs: sortedRunCount(g.entries, settings, table.compareKeys) }));
  // The buckets closest to a write stall go first: a budgeted call spends its bytes where they matter.
  groups.sort((a, b) => b.runs - a.runs || (a.partition < b.partition ? -1 : a.partition > b.partition ? 1 : a.bucket - b.bucket));
  summary.bucketsChecked = groups.length;
  let done = 0;
  for (const g of groups) {
    if (opts.maxBytes !== undefined && summary.bytesIn >= opts.maxBytes) {
      summary.remainingBuckets = groups.length - done;
      break;
    }
    let r: BucketCompactionResult;
    try {
      r = await compactBucket(table, g.partition, g.bucket, { full: opts.full, initial: { snapshot: latest, entries: g.entries }, manifestCache: cache });
    } catch (e) {
      if (!(e instanceof CommitConflictError)) throw e;
      summary.conflicts++;
      r = emptyResult(g.partition, g.bucket, 0);
    }
    if (r.snapshot && !r.alreadyCommitted) {
      summary.bucketsCompacted++;
      summary.snapshots.push(r.snapshot.id);
    }
    summary.filesIn += r.filesIn;
    summary.filesOut += r.filesOut;
    summary.upgradedFiles += r.upgradedFiles;
    summary.bytesIn += r.bytesIn;
    summary.bytesOut += r.bytesOut;
    summary.changelogFiles += r.changelogFiles;
    summary.changelogRows += r.changelogRows;
    done++;
    opts.onProgress?.({ done, total: groups.length, result: r });
  }
  return summary;
}

/** Live files grouped per (partition, bucket). */
export function groupByBucket(entries: readonly ManifestEntry[]): Array<{ partition: string; bucket: number; entries: ManifestEntry[] }> {
  const groups = new Map<string, { partition: string; bucket: number; entries: ManifestEntry[] }>();
  for (const e of entries) {
    const id = JSON.stringify([e.partition, e.bucket]);
    let g = groups.get(id);
    if (!g) groups.set(id, (g = { partition: e.partition, bucket: e.bucket, entries: [] }));
    g.entries.push(e);
  }
  return [...groups.values()];
}

/** A partition-path filter from `{ key: value }`, checked against the table's partition keys. */
function partitionMatcher(table: Table, spec?: Record<string, string>): ((p: string) => boolean) | undefined {
  if (!spec || Object.keys(spec).length === 0) return undefined;
  const keys = table.schema.partitionKeys;
  for (const k of Object.keys(spec)) {
    if (!keys.includes(k)) {
      throw new InvalidArgumentError(
        `"${k}" is not a partition key of ${table.name}; ${keys.length ? `its partition keys are ${keys.join(', ')}` : 'the table is not partitioned'}`,
      );
    }
  }
  return (p) => {
    const values = parsePartitionPath(p);
    return Object.entries(spec).every(([k, v]) => values[k] === v);
  };
}
