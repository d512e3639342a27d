/**
 * The compaction Lambda: one job per invocation from the table's compaction FIFO queue, grouped
 * by (partition, bucket) so that a bucket is never compacted twice at once. A job compacts its
 * bucket with what universal compaction picks, again while more is due and the work budget (a
 * share of the invocation's remaining time) allows; a commit that conflicts with another
 * compaction is re-planned on what that one left (lib/maintenance/compact.ts). After each COMPACT
 * commit it puts `Snapshot Committed` (changelog producers put their changelog there) and reports
 * the bucket's sorted runs (SortedRuns, dimension `table`).
 */
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { CorruptMetadataError } from '../lib/errors.js';
import { compactBucket, readBucketFiles, type BucketCompactionResult } from '../lib/maintenance/compact.js';
import { sortedRunCount } from '../lib/maintenance/compact-plan.js';
import { compactionSettingsOf } from '../lib/maintenance/compaction-settings.js';
import type { Table } from '../lib/table/table.js';
import { announceSnapshotCommitted } from './shared/commit-events.js';
import { parseCompactionJob, type CompactionJob } from './shared/compaction-jobs.js';
import type { Env } from './shared/env.js';
import { emitMetric, log, METRIC, UNIT } from './shared/observability.js';
import { manifestCacheOf, openTable } from './shared/tables.js';

/** Share of the remaining invocation time a job may start new compaction rounds in. */
const BUDGET_SHARE = 0.5;
/** Rounds per job at most, whatever the time: the next job (or the next commit's) goes on. */
const MAX_ROUNDS = 8;
/** The budget when the handler runs without a Lambda context (tests, scripts). */
const DEFAULT_BUDGET_MS = 5 * 60_000;

/** The compaction handler for the environment `env`. */
export function createCompactHandler(env: Env = process.env) {
  return async (event: SQSEvent, context?: Context): Promise<SQSBatchResponse> => {
    const table = await openTable(env, 'compact');
    const budgetEnd = Date.now() + (context ? context.getRemainingTimeInMillis() * BUDGET_SHARE : DEFAULT_BUDGET_MS);
    for (let i = 0; i < event.Records.length; i++) {
      const record = event.Records[i];
      try {
        const job = parseCompactionJob(record.body);
        if (job.table !== table.name) {
          throw new CorruptMetadataError(`a compaction job for ${job.table} reached the compaction queue of ${table.name}; each table needs its own queue`);
        }
        await runJob(env, table, job, budgetEnd);
      } catch (e) {
        // FIFO: this job and every later one of the batch go back, in order.
        log().error('compaction job failed; it will be retried', { table: table.name, messageId: record.messageId, error: e as Error });
        return { batchItemFailures: event.Records.slice(i).map((r) => ({ itemIdentifier: r.messageId })) };
      }
    }
    return { batchItemFailures: [] };
  };
}

/** Lambda entry of the compaction function. */
export const handler = createCompactHandler();

async function runJob(env: Env, table: Table, job: CompactionJob, budgetEnd: number): Promise<void> {
  const cache = manifestCacheOf(table);
  /** COMPACT snapshots this job committed, in order. */
  const snapshots: number[] = [];
  let rounds = 0;
  for (;;) {
    rounds++;
    const r: BucketCompactionResult = await compactBucket(table, job.partition, job.bucket, { full: job.full, manifestCache: cache });
    const committed = r.snapshot !== undefined && !r.alreadyCommitted;
    if (r.snapshot) {
      if (committed) snapshots.push(r.snapshot.id);
      // Announced on a retried job too: its first attempt may have stopped right after the commit.
      if (env.VARVE_EVENT_BUS_NAME) await announceSnapshotCommitted(env.VARVE_EVENT_BUS_NAME, table.name, r.snapshot);
    }
    // A full compaction is one round; otherwise go on while a round committed and budget remains.
    if (!committed || job.full || rounds >= MAX_ROUNDS || Date.now() >= budgetEnd) break;
  }
  const latest = await table.snapshots.latest();
  const entries = latest ? await readBucketFiles(table, latest, job.partition, job.bucket, cache) : [];
  const sortedRuns = sortedRunCount(entries, compactionSettingsOf(table), table.compareKeys);
  emitMetric(METRIC.sortedRuns, UNIT.count, sortedRuns, { table: table.name });
  log().info('compaction job done', { table: table.name, partition: job.partition, bucket: job.bucket, snapshots, rounds, sortedRuns });
}
