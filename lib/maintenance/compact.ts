/**
 * Compaction as a maintenance action: a compaction run plans each bucket's compaction from the
 * latest snapshot, runs it, writes its outputs (and changelog), and commits ONE COMPACT snapshot
 * for every bucket it compacted. A bucket whose commit conflicts (its inputs were compacted by
 * someone else meanwhile) is never retried as is: it is dropped from the commit, what it wrote is
 * deleted, and it is planned again from the new latest snapshot, a bounded number of times. Input files are never deleted here (expiry does that once no snapshot needs them), so a
 * reader never finds a file missing, whatever happens to the job.
 */
import { SchemaChangedError, type CommitConflictError, InvalidArgumentError } from '../errors.js';
import { followSchemaChanges, RetryBudget, TryAgain } from '../retry-budget.js';
import { LruManifestCache, type ManifestCache } from '../manifest/manifest-file.js';
import { readLiveFiles, touchedFilter } from '../manifest/scan.js';
import type { ManifestEntry } from '../manifest/types.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import { parsePartitionPath } from '../schema/partition.js';
import type { Table } from '../table/table.js';
import { commitCompactionRun } from './compact-commit.js';
import {
  addCounters,
  emptyResult,
  prepareBucketPlan,
  zeroCounters,
  type BucketCompactionResult,
  type CompactionCounters,
  type PreparedBucket,
} from './compact-run.js';
import { planBucketCompaction, sortedRunCount } from './compact-plan.js';
import { compactionSettingsOf } from './compaction-settings.js';

export { COMPACT_COMMIT_USER, FULL_COMPACTION_PROPERTY, type BucketCompactionResult } from './compact-run.js';

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
export async function readBucketFiles(
  table: Table,
  snapshot: Snapshot,
  partition: string,
  bucket: number,
  cache?: ManifestCache,
): Promise<ManifestEntry[]> {
  return readLiveFiles(
    table.store,
    table.path,
    snapshot,
    touchedFilter(new Set([partition]), new Set([bucket])),
    cache,
  );
}

/** One bucket a compaction run covers, with its live files when the caller has them. */
export interface RunBucket {
  partition: string;
  bucket: number;
  /** Live files in a recent snapshot (a stale list only costs a conflict and a re-plan). */
  entries?: ManifestEntry[];
}

export interface CompactBucketsOptions {
  /** Compact every run into the max level (default: only what universal compaction picks). */
  full?: boolean;
  /** Plans per bucket after commit conflicts before giving up on it (default 3). */
  maxAttempts?: number;
  manifestCache?: ManifestCache;
  /** Start no further bucket once the run's compacted input reached this many bytes. */
  maxBytes?: number;
  /** Called after each bucket's plan ran (before the run's commit). */
  onBucket?: (result: BucketCompactionResult) => void;
}

/** What one compaction run did. */
export interface CompactionRunResult {
  /** Per bucket planned: what it did (`snapshot` set when it committed, unset when nothing was due). */
  results: BucketCompactionResult[];
  /** COMPACT snapshots committed, in order: one per round (1 unless buckets conflicted and were re-planned). */
  snapshots: number[];
  /** Buckets given up after `maxAttempts` conflicted plans, with the last conflict. */
  conflicted: Array<{ partition: string; bucket: number; error: CommitConflictError }>;
  /** Buckets not started because `maxBytes` was reached. */
  notStarted: number;
  /** The after-commit work of the last COMPACT commit (the Iceberg export) failed; the compaction landed. */
  hookError?: Error;
}

/**
 * One compaction run over `buckets`: plans and runs each bucket's compaction, then commits every
 * bucket that changed in ONE COMPACT snapshot (compact-commit.ts). A bucket a concurrent commit
 * changed is dropped from that commit, re-planned from the latest snapshot and committed in a
 * further round (with the others that conflicted), at once (the snapshot that beat it is there to
 * plan on), at most `maxAttempts` rounds under one RetryBudget; then the run gives those buckets up
 * (`conflicted`) while the others land regardless. An alter met while preparing re-plans the round
 * through the new schema (followSchemaChanges).
 */
export async function compactBuckets(
  table: Table,
  buckets: readonly RunBucket[],
  opts: CompactBucketsOptions = {},
): Promise<CompactionRunResult> {
  const run: CompactionRun = {
    table,
    opts,
    full: opts.full ?? false,
    cache: opts.manifestCache ?? new LruManifestCache(100_000),
    out: { results: [], snapshots: [], conflicted: [], notStarted: 0 },
    bytes: 0,
  };
  const conflicts = new RetryBudget({
    what: `compacting ${table.name}`,
    maxRetries: Math.max(0, (opts.maxAttempts ?? 3) - 1),
    minWaitMs: 0,
    maxWaitMs: 0,
  });
  let round: RoundBucket[] = buckets.map((b) => ({ ...b, attempt: 1 }));
  await conflicts.run(async (): Promise<undefined | TryAgain> => {
    const prepared = await followSchemaChanges(
      `compacting ${table.name}`,
      round,
      (r) => prepareRound(run, r),
      async (r) => {
        run.table = await run.table.latest();
        return r.map((b) => ({ partition: b.partition, bucket: b.bucket, attempt: b.attempt + 1 }));
      },
    );
    if (prepared.length === 0) return undefined;
    const r = await commitCompactionRun(run.table, prepared, run.cache);
    if (r.snapshot) {
      run.out.hookError = r.hookError;
      if (!r.alreadyCommitted) run.out.snapshots.push(r.snapshot.id);
      for (const p of r.committed) run.out.results.push(resultOf(p, r.snapshot, r.alreadyCommitted));
    }
    // An alter since this table was opened: re-plan through the new schema.
    if (r.lastConflict instanceof SchemaChangedError) run.table = await run.table.latest();
    if (r.conflicted.length === 0) return undefined;
    if (conflicts.spent) {
      for (const p of r.conflicted)
        run.out.conflicted.push({ partition: p.partition, bucket: p.bucket, error: r.lastConflict! });
      return undefined;
    }
    round = r.conflicted.map((p) => ({ partition: p.partition, bucket: p.bucket, attempt: p.attempts + 1 }));
    return new TryAgain(`${round.length} bucket(s) conflicted with a concurrent commit`, r.lastConflict);
  });
  return run.out;
}

/** The state of one compaction run across its rounds. */
interface CompactionRun {
  /** The table at the newest schema met so far. */
  table: Table;
  opts: CompactBucketsOptions;
  full: boolean;
  cache: ManifestCache;
  out: CompactionRunResult;
  /** Compacted input so far (for `maxBytes`). */
  bytes: number;
}

/** A bucket of a round, with the number of its plan. */
type RoundBucket = RunBucket & { attempt: number };

/**
 * Plans and prepares each bucket of a round (up to the run's `maxBytes`). On an error (a file
 * written under a newer schema: SchemaChangedError) what it prepared is discarded and its results
 * and bytes taken back before the error is thrown.
 */
async function prepareRound(run: CompactionRun, round: readonly RoundBucket[]): Promise<PreparedBucket[]> {
  const { table, opts, out } = run;
  const settings = compactionSettingsOf(table);
  // Through the committer's caching manager, which the commit then starts from: one lookup of the
  // latest snapshot per round, each snapshot read once (a plan on a base since replaced fails the
  // commit's conflict check and is planned again).
  const latest = round.some((b) => !b.entries) ? await table.commitSnapshots.latest() : undefined;
  const prepared: PreparedBucket[] = [];
  const before = { results: out.results.length, bytes: run.bytes };
  for (let i = 0; i < round.length; i++) {
    const b = round[i];
    if (opts.maxBytes !== undefined && run.bytes >= opts.maxBytes) {
      out.notStarted += round.length - i;
      break;
    }
    const entries = b.entries ?? (latest ? await readBucketFiles(table, latest, b.partition, b.bucket, run.cache) : []);
    const plan = planBucketCompaction(entries, settings, table.compareKeys, run.full);
    let p: PreparedBucket | undefined;
    try {
      p = plan
        ? await prepareBucketPlan(table, settings, {
            partition: b.partition,
            bucket: b.bucket,
            plan,
            full: run.full,
            attempt: b.attempt,
          })
        : undefined;
    } catch (e) {
      await Promise.all(prepared.map((q) => q.discard()));
      out.results.length = before.results;
      run.bytes = before.bytes;
      throw e;
    }
    if (p) {
      run.bytes += p.bytesIn;
      prepared.push(p);
    } else out.results.push(emptyResult(b.partition, b.bucket, b.attempt));
    opts.onBucket?.(p ? resultOf(p, undefined, false) : emptyResult(b.partition, b.bucket, b.attempt));
  }
  return prepared;
}

/** A prepared bucket's result, committed in `snapshot` or not (yet). */
function resultOf(
  p: PreparedBucket,
  snapshot: Snapshot | undefined,
  alreadyCommitted: boolean,
): BucketCompactionResult {
  const {
    partition,
    bucket,
    attempts,
    filesIn,
    filesOut,
    upgradedFiles,
    bytesIn,
    bytesOut,
    changelogFiles,
    changelogRows,
  } = p;
  return {
    partition,
    bucket,
    snapshot,
    alreadyCommitted,
    attempts,
    filesIn,
    filesOut,
    upgradedFiles,
    bytesIn,
    bytesOut,
    changelogFiles,
    changelogRows,
  };
}

/**
 * Compacts one bucket (a run of one bucket): plans from the latest snapshot (or `opts.entries`),
 * runs the unit, commits COMPACT. Returns an empty result when nothing is due. Throws
 * CommitConflictError only when every attempt conflicted.
 */
export async function compactBucket(
  table: Table,
  partition: string,
  bucket: number,
  opts: CompactBucketOptions = {},
): Promise<BucketCompactionResult> {
  const run = await compactBuckets(table, [{ partition, bucket, entries: opts.entries }], {
    full: opts.full,
    maxAttempts: opts.maxAttempts,
    manifestCache: opts.manifestCache,
  });
  if (run.conflicted.length > 0) throw run.conflicted[0].error;
  return run.results[0] ?? emptyResult(partition, bucket, 1);
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
    bucketsChecked: 0,
    bucketsCompacted: 0,
    remainingBuckets: 0,
    conflicts: 0,
    ...zeroCounters(),
    snapshots: [],
  };
  const matches = partitionMatcher(table, opts.partition);
  const latest = await table.snapshots.latest();
  if (!latest) return summary;
  const cache = new LruManifestCache(1_000_000);
  const entries = await readLiveFiles(
    table.store,
    table.path,
    latest,
    { partition: matches, ...(opts.bucket === undefined ? {} : { buckets: new Set([opts.bucket]) }) },
    cache,
  );
  const settings = compactionSettingsOf(table);
  const groups = groupByBucket(entries).map((g) => ({
    ...g,
    runs: sortedRunCount(g.entries, settings, table.compareKeys),
  }));
  // The buckets closest to a write stall go first: a budgeted call spends its bytes where they matter.
  groups.sort(
    (a, b) => b.runs - a.runs || (a.partition < b.partition ? -1 : a.partition > b.partition ? 1 : a.bucket - b.bucket),
  );
  summary.bucketsChecked = groups.length;
  let done = 0;
  const seen = new Set<string>();
  const run = await compactBuckets(table, groups, {
    full: opts.full,
    manifestCache: cache,
    maxBytes: opts.maxBytes,
    onBucket: (result) => {
      const id = JSON.stringify([result.partition, result.bucket]);
      if (seen.has(id)) return; // a re-plan after a conflict is not a new bucket
      seen.add(id);
      done++;
      opts.onProgress?.({ done, total: groups.length, result });
    },
  });
  for (const r of run.results) {
    if (!r.snapshot || r.alreadyCommitted) continue;
    summary.bucketsCompacted++;
    addCounters(summary, r);
  }
  summary.snapshots = run.snapshots;
  summary.conflicts = run.conflicted.length;
  summary.remainingBuckets = run.notStarted;
  // The commit's after-commit hook exported (lib/iceberg/export-trigger.ts): report its failure, not export again.
  if (run.hookError !== undefined) summary.icebergExportError = run.hookError;
  return summary;
}

/** Live files grouped per (partition, bucket). */
export function groupByBucket(
  entries: readonly ManifestEntry[],
): Array<{ partition: string; bucket: number; entries: ManifestEntry[] }> {
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
