/**
 * Compaction jobs: after a commit, each bucket it touched where universal compaction has something
 * to do becomes a job for a compaction worker (on AWS a message of the table's compaction FIFO
 * queue, one message group per (partition, bucket), so that one bucket is never compacted twice at
 * once while different buckets compact in parallel; DESIGN.md, "Compaction, changelog, expiry").
 * A job compacts its bucket with what universal compaction picks, again while more is due and its
 * budget allows; a commit that conflicts with another compaction is re-planned on what that one
 * left (compact.ts).
 */
import { CorruptMetadataError } from '../errors.js';
import type { LruManifestCache, ManifestCache } from '../manifest/manifest-file.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import type { TouchedBucket } from '../table/commit-hooks.js';
import type { Table } from '../table/table.js';
import { compactBucket, readBucketFiles } from './compact.js';
import { planBucketCompaction, sortedRunCount } from './compact-plan.js';
import { touchedBucketFiles } from './compact-trigger.js';
import { compactionSettingsOf } from './compaction-settings.js';

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
export async function bucketStates(table: Table, snapshot: Snapshot, touched: readonly TouchedBucket[], cache?: LruManifestCache): Promise<BucketState[]> {
  if (touched.length === 0) return [];
  const settings = compactionSettingsOf(table);
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

/** Parses a compaction job message (of table `forTable`, when given); throws CorruptMetadataError for anything else. */
export function parseCompactionJob(body: string, forTable?: string): CompactionJob {
  let j: Partial<CompactionJob> & { v?: unknown };
  try {
    j = JSON.parse(body) as typeof j;
  } catch (e) {
    throw new CorruptMetadataError(`a compaction job is not JSON (${(e as Error).message}): ${body.slice(0, 80)}`, { cause: e });
  }
  if (j.v !== 1 || typeof j.table !== 'string' || typeof j.partition !== 'string' || !Number.isInteger(j.bucket) || j.bucket! < 0) {
    throw new CorruptMetadataError(`not a varve compaction job (it needs v: 1, table, partition and bucket): ${body.slice(0, 120)}`);
  }
  if (forTable !== undefined && j.table !== forTable) {
    throw new CorruptMetadataError(`a compaction job for ${j.table} reached the compaction queue of ${forTable}; each table needs its own queue`);
  }
  return { table: j.table, partition: j.partition, bucket: j.bucket!, full: j.full === true, snapshotId: Number(j.snapshotId ?? 0) };
}

/** How long and how often one job may compact. */
export interface CompactionJobOptions {
  /** Epoch ms after which no new round starts. */
  budgetEnd: number;
  /** Rounds at most, whatever the time: the next job (or the next commit's) goes on. @default 8 */
  maxRounds?: number;
  manifestCache?: ManifestCache;
  /** Called after each round that has a snapshot (also one an earlier attempt of the job committed). */
  onSnapshot?: (snapshot: Snapshot) => Promise<void>;
}

/** What one job did. */
export interface CompactionJobResult {
  /** COMPACT snapshots this job committed, in order. */
  snapshots: number[];
  rounds: number;
  /** The bucket's sorted runs afterwards. */
  sortedRuns: number;
}

/** Runs one compaction job: rounds of universal compaction of its bucket (one for a full compaction). */
export async function runCompactionJob(table: Table, job: CompactionJob, opts: CompactionJobOptions): Promise<CompactionJobResult> {
  const cache = opts.manifestCache ?? table.manifestCache;
  const snapshots: number[] = [];
  let rounds = 0;
  for (;;) {
    rounds++;
    const r = await compactBucket(table, job.partition, job.bucket, { full: job.full, manifestCache: cache });
    const committed = r.snapshot !== undefined && !r.alreadyCommitted;
    if (r.snapshot) {
      if (committed) snapshots.push(r.snapshot.id);
      // Announced on a retried job too: its first attempt may have stopped right after the commit.
      await opts.onSnapshot?.(r.snapshot);
    }
    // A full compaction is one round; otherwise go on while a round committed and budget remains.
    if (!committed || job.full || rounds >= (opts.maxRounds ?? 8) || Date.now() >= opts.budgetEnd) break;
  }
  const latest = await table.snapshots.latest();
  const entries = latest ? await readBucketFiles(table, latest, job.partition, job.bucket, cache) : [];
  return { snapshots, rounds, sortedRuns: sortedRunCount(entries, compactionSettingsOf(table), table.compareKeys) };
}
