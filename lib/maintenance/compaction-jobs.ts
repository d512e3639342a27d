/**
 * Compaction jobs: after a commit, each bucket it touched where universal compaction has something
 * to do becomes a job for a compaction worker (on AWS a message of the table's compaction FIFO
 * queue, one message group per (partition, bucket), so that one bucket is never compacted twice at
 * once while different buckets compact in parallel; DESIGN.md, "Compaction, changelog, expiry").
 * A job compacts its bucket with what universal compaction picks, again while more is due and its
 * budget allows; a commit that conflicts with another compaction is re-planned on what that one
 * left (compact.ts).
 */
import * as v from 'valibot';
import { CorruptMetadataError } from '../errors.js';
import { jsonInt, parseJsonMessage, type JsonSchema } from '../json.js';
import type { LruManifestCache, ManifestCache } from '../manifest/manifest-file.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import type { TouchedBucket } from '../table/commit-hooks.js';
import type { Table } from '../table/table.js';
import { compactBuckets, readBucketFiles } from './compact.js';
import { planBucketCompaction, sortedRunCount } from './compact-plan.js';
import { touchedBucketFiles } from './compact-trigger.js';
import { compactionSettingsOf } from './compaction-settings.js';
import { summaryRuns, usableSummary } from './summary-runs.js';

/** One bucket to compact. */
export interface CompactionJob {
  /** `database.table`. */
  table: string;
  partition: string;
  bucket: number;
  /** Compact every sorted run into the top level instead of what universal compaction picks. */
  full?: boolean;
  /** The snapshot whose commit asked for the job (its deduplication id names it). */
  snapshotId: number;
}

export type { TouchedBucket };

/** A touched bucket's state after the commit. */
export interface BucketState extends TouchedBucket {
  sortedRuns: number;
  /** True when universal compaction (or the lookup producer) picks something in it. */
  due: boolean;
}

/** Sorted runs and due compaction of each touched bucket in `snapshot`. */
export async function bucketStates(
  table: Table,
  snapshot: Snapshot,
  touched: readonly TouchedBucket[],
  cache?: LruManifestCache,
): Promise<BucketState[]> {
  if (touched.length === 0) return [];
  const settings = compactionSettingsOf(table);
  const summary = usableSummary(snapshot, settings);
  if (summary) {
    // Carried by the snapshot: no manifest to read (summary-runs.ts); buckets without files left out, as below.
    return touched.flatMap((t) => {
      const runs = summaryRuns(summary, t, settings);
      return runs ? [{ partition: t.partition, bucket: t.bucket, ...runs }] : [];
    });
  }
  return (await touchedBucketFiles(table, snapshot, touched, cache ?? table.manifestCache)).map((g) => ({
    partition: g.partition,
    bucket: g.bucket,
    sortedRuns: sortedRunCount(g.entries, settings, table.compareKeys),
    due: planBucketCompaction(g.entries, settings, table.compareKeys, false) !== undefined,
  }));
}

/** The message body of a job. */
export function encodeCompactionJob(job: CompactionJob): string {
  return JSON.stringify({ v: 1, ...job });
}

/** A compaction job message as sent (`v: 1`). */
const CompactionJobSchema: JsonSchema<CompactionJob> = v.looseObject({
  v: v.literal(1),
  table: v.string(),
  partition: v.string(),
  bucket: v.pipe(jsonInt, v.minValue(0)),
  full: v.optional(v.boolean()),
  snapshotId: v.optional(jsonInt, 0),
});

/** Parses a compaction job message (of table `forTable`, when given); throws CorruptMetadataError for anything else. */
export function parseCompactionJob(body: string, forTable?: string): CompactionJob {
  const j = parseJsonMessage(body, CompactionJobSchema, 'compaction job');
  if (forTable !== undefined && j.table !== forTable) {
    throw new CorruptMetadataError(
      `a compaction job for ${j.table} reached the compaction queue of ${forTable}; each table needs its own queue`,
    );
  }
  return { table: j.table, partition: j.partition, bucket: j.bucket, full: j.full === true, snapshotId: j.snapshotId };
}

/** How long and how often a batch of jobs may compact. */
export interface CompactionJobOptions {
  /** Epoch ms after which no new round starts. */
  budgetEnd: number;
  /** Rounds at most, whatever the time: the next job (or the next commit's) goes on. @default 8 */
  maxRounds?: number;
  manifestCache?: ManifestCache;
  /** Called after each round that has a snapshot (also one an earlier attempt of the jobs committed). */
  onSnapshot?: (snapshot: Snapshot) => Promise<void>;
}

/** What the jobs of one bucket came to. */
export interface CompactionJobBucket extends TouchedBucket {
  full: boolean;
  /** The bucket's sorted runs afterwards (unset when it failed). */
  sortedRuns?: number;
  /** Set when the bucket gave up after repeated conflicts with other commits: its jobs are retried. */
  error?: Error;
}

/** What a batch of jobs did. */
export interface CompactionJobsResult {
  /** COMPACT snapshots committed, in order: one per round (and per mode, when full and universal jobs share a batch). */
  snapshots: number[];
  rounds: number;
  buckets: CompactionJobBucket[];
}

/** The key of a job's bucket in a batch. */
export function jobBucketKey(job: Pick<CompactionJob, 'partition' | 'bucket'>): string {
  return JSON.stringify([job.partition, job.bucket]);
}

/**
 * Runs a batch of compaction jobs as ONE compaction run (compact.ts): every bucket the jobs name
 * (once, however many of its jobs are in the batch) is planned and compacted, and the buckets that
 * changed are committed in one COMPACT snapshot, as the local `compact` does; a bucket a
 * concurrent commit changed is re-planned and committed in a further round, and given up (its
 * `error` set, so its jobs are retried) after repeated conflicts. Further rounds run while a round
 * committed, more is due and the budget allows; each covers every bucket still due. Full jobs
 * (`full: true`) are a run of their own.
 */
export async function runCompactionJobs(
  table: Table,
  jobs: readonly CompactionJob[],
  opts: CompactionJobOptions,
): Promise<CompactionJobsResult> {
  const cache = opts.manifestCache ?? table.manifestCache;
  const buckets = new Map<string, CompactionJobBucket>();
  for (const j of jobs) {
    const b = buckets.get(jobBucketKey(j));
    if (b) b.full ||= j.full === true;
    else buckets.set(jobBucketKey(j), { partition: j.partition, bucket: j.bucket, full: j.full === true });
  }
  const snapshots: number[] = [];
  let rounds = 0;
  for (const full of [false, true]) {
    let pending = [...buckets.values()].filter((b) => b.full === full);
    let modeRounds = 0;
    while (pending.length > 0) {
      rounds++;
      modeRounds++;
      const run = await compactBuckets(table, pending, { full, manifestCache: cache });
      snapshots.push(...run.snapshots);
      for (const c of run.conflicted) buckets.get(jobBucketKey(c))!.error = c.error;
      // Announced on a retried batch too: its first attempt may have stopped right after the commit.
      const seen = new Map<number, Snapshot>();
      for (const r of run.results) if (r.snapshot) seen.set(r.snapshot.id, r.snapshot);
      for (const s of [...seen.values()].sort((a, b) => a.id - b.id)) await opts.onSnapshot?.(s);
      // Go on with the buckets that committed now, while budget remains (a full compaction is one round).
      const committed = new Set(
        run.results.filter((r) => r.snapshot !== undefined && !r.alreadyCommitted).map(jobBucketKey),
      );
      if (full || modeRounds >= (opts.maxRounds ?? 8) || Date.now() >= opts.budgetEnd) break;
      pending = pending.filter((b) => committed.has(jobBucketKey(b)));
    }
  }
  // The sorted runs left (a metric): in the newest snapshot the committer's caching manager knows,
  // usually this run's own (no lookup, no GET), from what it carries per bucket when it does.
  const latest = table.commitSnapshots.newestKnown() ?? (await table.commitSnapshots.latest());
  const settings = compactionSettingsOf(table);
  const summary = latest && usableSummary(latest, settings);
  for (const b of buckets.values()) {
    if (b.error) continue;
    if (summary) {
      b.sortedRuns = summaryRuns(summary, b, settings)?.sortedRuns ?? 0;
      continue;
    }
    const entries = latest ? await readBucketFiles(table, latest, b.partition, b.bucket, cache) : [];
    b.sortedRuns = sortedRunCount(entries, settings, table.compareKeys);
  }
  return { snapshots, rounds, buckets: [...buckets.values()] };
}
