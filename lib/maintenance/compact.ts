/**
 * Compaction as a maintenance action: plan a bucket's compaction from the latest snapshot, run
 * it, write its outputs (and changelog), and commit one COMPACT snapshot. A COMPACT commit that
 * conflicts (its inputs were compacted by someone else meanwhile) is never retried as is: the
 * job deletes what it wrote and plans again from the new latest snapshot, a bounded number of
 * times. Input files are never deleted here (expiry does that once no snapshot needs them), so a
 * reader never finds a file missing, whatever happens to the job.
 */
import { exportIcebergAfterCommit } from '../iceberg/export-trigger.js';
import { SchemaChangedError, CommitConflictError, InvalidArgumentError } from '../errors.js';
import { LruManifestCache, type ManifestCache } from '../manifest/manifest-file.js';
import { readLiveFiles } from '../manifest/scan.js';
import type { ManifestEntry } from '../manifest/types.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import { parsePartitionPath } from '../schema/partition.js';
import type { Table } from '../table/table.js';
import { addCounters, emptyResult, runBucketPlan, zeroCounters, type BucketCompactionResult, type CompactionCounters } from './compact-run.js';
import { planBucketCompaction, sortedRunCount } from './compact-plan.js';
import { compactionSettingsOf } from './compaction-settings.js';

export { COMPACT_COMMIT_USER, FULL_COMPACTION_PROPERTY, compactCommitIdentifier, type BucketCompactionResult } from './compact-run.js';

export interface CompactBucketOptions {
  /** Compact every run into the max level (default: only what universal compaction picks). */
  full?: boolean;
  /** Plans after a commit conflict before giving up (default 3). */
  maxAttempts?: number;
  /**
   * The bucket's live files in a recent snapshot, when the caller has them: the first plan uses
   * them instead of reading manifests (a stale list only costs a conflict and a re-plan).
   */
  entries?: ManifestEntry[];
  /** Shared across the buckets of one job, so each manifest is read once. */
  manifestCache?: ManifestCache;
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
 * Compacts one bucket: plans from the latest snapshot (or `opts.entries`), runs the unit, commits
 * COMPACT. Returns an empty result when nothing is due. Throws CommitConflictError only when every
 * attempt conflicted.
 */
export async function compactBucket(table: Table, partition: string, bucket: number, opts: CompactBucketOptions = {}): Promise<BucketCompactionResult> {
  const settings = compactionSettingsOf(table);
  const full = opts.full ?? false;
  const maxAttempts = opts.maxAttempts ?? 3;
  const cache = opts.manifestCache ?? new LruManifestCache(100_000);
  let given = opts.entries;
  for (let attempt = 1; ; attempt++) {
    let entries: ManifestEntry[];
    if (given) {
      entries = given;
      given = undefined;
    } else {
      const latest = await table.snapshots.latest();
      if (!latest) return emptyResult(partition, bucket, attempt);
      entries = await readBucketFiles(table, latest, partition, bucket, cache);
    }
    const plan = planBucketCompaction(entries, settings, table.compareKeys, full);
    if (!plan) return emptyResult(partition, bucket, attempt);
    try {
      return await runBucketPlan(table, settings, { partition, bucket, plan, full, attempt }, cache);
    } catch (e) {
      // Someone else compacted this bucket first: plan again on what they left.
      if (!(e instanceof CommitConflictError) || attempt >= maxAttempts) throw e;
      // An alter since this table was opened: compact through the new schema.
      if (e instanceof SchemaChangedError) table = await table.latest();
    }
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
export interface CompactionSummary extends CompactionCounters {
  /** Buckets looked at, and those whose compaction committed. */
  bucketsChecked: number;
  bucketsCompacted: number;
  /** Buckets not started because `maxBytes` was reached. */
  remainingBuckets: number;
  /** Buckets given up after repeated conflicts with other compactions. */
  conflicts: number;
  /** COMPACT snapshots committed, in order. */
  snapshots: number[];
  /** Set when the Iceberg export after the compaction failed (the compaction itself landed). */
  icebergExportError?: Error;
}

/** Compacts every (partition, bucket) of the table that has something due, most sorted runs first. */
export async function compactTable(table: Table, opts: CompactTableOptions = {}): Promise<CompactionSummary> {
  const summary: CompactionSummary = {
    bucketsChecked: 0, bucketsCompacted: 0, remainingBuckets: 0, conflicts: 0,
    ...zeroCounters(), snapshots: [],
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
      r = await compactBucket(table, g.partition, g.bucket, { full: opts.full, entries: g.entries, manifestCache: cache });
    } catch (e) {
      if (!(e instanceof CommitConflictError)) throw e;
      summary.conflicts++;
      r = emptyResult(g.partition, g.bucket, 0);
    }
    if (r.snapshot && !r.alreadyCommitted) {
      summary.bucketsCompacted++;
      summary.snapshots.push(r.snapshot.id);
    }
    addCounters(summary, r);
    done++;
    opts.onProgress?.({ done, total: groups.length, result: r });
  }
  if (summary.snapshots.length > 0) summary.icebergExportError = await exportIcebergAfterCommit(table);
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
