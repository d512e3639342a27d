/**
 * The compaction Lambda: jobs from the table's compaction FIFO queue, grouped by (partition,
 * bucket) so that a bucket is never compacted twice at once. Each job runs rounds of universal
 * compaction of its bucket while more is due and half the invocation's remaining time allows
 * (lib/maintenance/compaction-jobs.ts); after each COMPACT commit it puts `Snapshot Committed`
 * (changelog producers put their changelog there), then reports the bucket's sorted runs
 * (SortedRuns, dimension `table`). A failed job holds back the later jobs of its bucket only.
 * A job first deletes its bucket's "job queued" marker, so the next commit queues a new job while
 * the commits before it queue none (lib/maintenance/compaction-job-marker.ts).
 */
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { releaseJobMarker } from '../lib/maintenance/compaction-job-marker.js';
import { parseCompactionJob, runCompactionJob } from '../lib/maintenance/compaction-jobs.js';
import { announceSnapshotCommitted } from './shared/commit-events.js';
import type { Env } from './shared/env.js';
import { processFifoBatch } from './shared/fifo-batch.js';
import { thenExport } from './shared/glue.js';
import { emitMetric, instrumented, log, METRIC, UNIT } from './shared/observability.js';
import { manifestCacheOf, openTable } from './shared/tables.js';

/** Share of the remaining invocation time a job may start new compaction rounds in. */
const BUDGET_SHARE = 0.5;
/** The budget when the handler runs without a Lambda context (tests, scripts). */
const DEFAULT_BUDGET_MS = 5 * 60_000;

/** The compaction handler for the environment `env`. */
export function createCompactHandler(env: Env = process.env) {
  return async (event: SQSEvent, context?: Context): Promise<SQSBatchResponse> => {
    const table = await openTable(env, 'compact');
    const budgetEnd = Date.now() + (context ? context.getRemainingTimeInMillis() * BUDGET_SHARE : DEFAULT_BUDGET_MS);
    const bus = env.VARVE_EVENT_BUS_NAME;
    return thenExport(env, table, processFifoBatch(
      event,
      async (record) => {
        try {
          const job = parseCompactionJob(record.body, table.name);
          // Before the bucket is read: a commit from now on queues the next job.
          await releaseJobMarker(table, job.partition, job.bucket);
          const result = await runCompactionJob(table, job, {
            budgetEnd,
            manifestCache: manifestCacheOf(table),
            onSnapshot: async (s) => (bus ? announceSnapshotCommitted(bus, table.name, s) : undefined),
          });
          emitMetric(METRIC.sortedRuns, UNIT.count, result.sortedRuns, { table: table.name });
          log().info('compaction job done', { table: table.name, partition: job.partition, bucket: job.bucket, ...result });
        } catch (e) {
          log().error('compaction job failed; it will be retried', { table: table.name, messageId: record.messageId, error: e as Error });
          throw e;
        }
      },
      context,
      { skipGroupOnError: true },
    ));
  };
}

/** Lambda entry of the compaction function. */
export const handler = instrumented(createCompactHandler());
