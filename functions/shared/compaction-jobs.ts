/**
 * Compaction jobs: after a commit, the buckets it touched where universal compaction has
 * something to do become messages on the table's compaction FIFO queue, one message group per
 * (partition, bucket), so that one bucket is never compacted twice at once while different
 * buckets compact in parallel (DESIGN.md, "Compaction, changelog, expiry").
 */
import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { CorruptMetadataError } from '../../lib/errors.js';
import { touchedBucketFiles } from '../../lib/maintenance/compact-trigger.js';
import type { TouchedBucket } from '../../lib/table/commit-hooks.js';
import { planBucketCompaction, sortedRunCount } from '../../lib/maintenance/compact-plan.js';
import { compactionSettingsOf } from '../../lib/maintenance/compaction-settings.js';
import type { Snapshot } from '../../lib/snapshot/snapshot.js';
import { queueId } from '../../lib/stream/split-message.js';
import { QueueRequestError, SQS_MAX_BATCH } from '../../lib/stream/sqs-queue.js';
import type { Table } from '../../lib/table/table.js';
import { sqsClient } from './aws-clients.js';
import { manifestCacheOf } from './tables.js';

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

/** The message group of a bucket's jobs: `<table>/<partition>/<bucket>`. */
export function compactionGroupId(table: string, partition: string, bucket: number): string {
  return queueId(`${table}/${partition}/${bucket}`);
}

/** Sorted runs and due compaction of each touched bucket in `snapshot`. */
export async function bucketStates(table: Table, snapshot: Snapshot, touched: readonly TouchedBucket[]): Promise<BucketState[]> {
  if (touched.length === 0) return [];
  const settings = compactionSettingsOf(table);
  return (await touchedBucketFiles(table, snapshot, touched, manifestCacheOf(table))).map((g) => ({
    partition: g.partition,
    bucket: g.bucket,
    sortedRuns: sortedRunCount(g.entries, settings, table.compareKeys),
    due: planBucketCompaction(g.entries, settings, table.compareKeys, false) !== undefined,
  }));
}

/**
 * Sends jobs to the compaction queue. The deduplication id names the bucket and the snapshot, so
 * a retried commit function does not enqueue its jobs twice.
 */
export async function sendCompactionJobs(queueUrl: string, jobs: readonly CompactionJob[]): Promise<void> {
  for (let i = 0; i < jobs.length; i += SQS_MAX_BATCH) {
    const chunk = jobs.slice(i, i + SQS_MAX_BATCH);
    const r = await sqsClient().send(
      new SendMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: chunk.map((j, k) => ({
          Id: String(k),
          MessageBody: JSON.stringify({ v: 1, ...j }),
          MessageGroupId: compactionGroupId(j.table, j.partition, j.bucket),
          MessageDeduplicationId: queueId(`${j.table}/${j.partition}/${j.bucket}/${j.full ? 'full' : 'due'}/${j.snapshotId}`),
        })),
      }),
    );
    if (r.Failed?.length) {
      throw new QueueRequestError(`SQS refused ${r.Failed.length} compaction jobs: ${r.Failed.map((f) => `${f.Code}: ${f.Message}`).join('; ')}`, r.Failed);
    }
  }
}

/** Parses a compaction job message; throws CorruptMetadataError for anything else. */
export function parseCompactionJob(body: string): CompactionJob {
  let j: Partial<CompactionJob> & { v?: unknown };
  try {
    j = JSON.parse(body) as typeof j;
  } catch (e) {
    throw new CorruptMetadataError(`a compaction job is not JSON (${(e as Error).message}): ${body.slice(0, 80)}`, { cause: e });
  }
  if (j.v !== 1 || typeof j.table !== 'string' || typeof j.partition !== 'string' || !Number.isInteger(j.bucket) || j.bucket! < 0) {
    throw new CorruptMetadataError(`not a varve compaction job (it needs v: 1, table, partition and bucket): ${body.slice(0, 120)}`);
  }
  return { table: j.table, partition: j.partition, bucket: j.bucket!, full: j.full === true, snapshotId: Number(j.snapshotId ?? 0) };
}
