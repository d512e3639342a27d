/**
 * The compaction Lambda: jobs from the compaction FIFO queue (a message group per bucket). An
 * invocation runs every job of its batch as ONE compaction run (lib/maintenance/compaction-jobs.ts):
 * their buckets go into one COMPACT snapshot, as the local `compact` makes one per run; each is
 * announced (`Snapshot Committed`), each bucket's sorted runs reported. A bucket that kept
 * conflicting fails its jobs (and the later ones of its group), an unreadable job fails alone, an
 * error of the run fails the batch. It first deletes the buckets' "job queued" markers (a table
 * without the per-bucket summary uses them). Its COMPACT snapshots record the buckets with a job
 * queued (lib/snapshot/queued-jobs.ts): one that leaves a bucket still due (a commit landed while
 * the job read it) queues its next job, which the function sends after the run.
 */
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { releaseJobMarker } from '../lib/maintenance/compaction-job-marker.js';
import {
  jobBucketKey,
  parseCompactionJob,
  runCompactionJobs,
  type CompactionJob,
} from '../lib/maintenance/compaction-jobs.js';
import { announceSnapshotCommitted } from '../lib/aws/commit-events.js';
import { nextJobsOfRun } from '../lib/aws/after-commit.js';
import type { Env } from '../lib/aws/env.js';
import { processFifoBatch } from './shared/fifo-batch.js';
import { thenExport } from '../lib/aws/glue.js';
import { emitMetric, instrumented, log, METRIC, UNIT } from './shared/observability.js';
import { manifestCacheOf, openTable } from '../lib/aws/tables.js';

/** Share of the remaining time the run may start new rounds in; the budget without a Lambda context (tests). */
const BUDGET_SHARE = 0.5;
const DEFAULT_BUDGET_MS = 5 * 60_000;

/** The compaction handler for the environment `env`. */
export function createCompactHandler(env: Env = process.env) {
  return async (event: SQSEvent, context?: Context): Promise<SQSBatchResponse> => {
    const table = await openTable(env, 'compact');
    const nextJobs = nextJobsOfRun(table, env.VARVE_COMPACT_QUEUE_URL);
    const budgetEnd = Date.now() + (context ? context.getRemainingTimeInMillis() * BUDGET_SHARE : DEFAULT_BUDGET_MS);
    const bus = env.VARVE_EVENT_BUS_NAME;
    const jobs = new Map<string, CompactionJob | Error>(
      event.Records.map((r) => [r.messageId, parse(r.body, table.name)]),
    );
    const valid = [...jobs.values()].filter((j): j is CompactionJob => !(j instanceof Error));
    const run = (async () => {
      // Before the buckets are read: a commit from now on queues the next job.
      await Promise.all(valid.map((j) => releaseJobMarker(table, j.partition, j.bucket)));
      const result = await runCompactionJobs(table, valid, {
        budgetEnd,
        manifestCache: manifestCacheOf(table),
        onSnapshot: async (s) => {
          nextJobs.seen(s);
          if (bus) await announceSnapshotCommitted(bus, table.name, s);
        },
      });
      await nextJobs.send();
      for (const b of result.buckets)
        if (b.sortedRuns !== undefined) emitMetric(METRIC.sortedRuns, UNIT.count, b.sortedRuns, { table: table.name });
      log().info('compaction jobs done', {
        table: table.name,
        jobs: valid.length,
        snapshots: result.snapshots,
        rounds: result.rounds,
        buckets: result.buckets.map(({ error, ...b }) => ({ ...b, failed: error?.message })),
      });
      return new Map(result.buckets.map((b) => [jobBucketKey(b), b.error]));
    })().catch((e: unknown) => e as Error);
    return thenExport(
      env,
      table,
      processFifoBatch(
        event,
        async (record) => {
          const job = jobs.get(record.messageId)!;
          const outcome = job instanceof Error ? job : await run;
          const error = outcome instanceof Error ? outcome : outcome.get(jobBucketKey(job as CompactionJob));
          if (!error) return;
          log().error('compaction job failed; it will be retried', {
            table: table.name,
            messageId: record.messageId,
            error,
          });
          throw error;
        },
        context,
        { skipGroupOnError: true },
      ),
    );
  };
}

/** The job of a message body, or why it is none. */
function parse(body: string, table: string): CompactionJob | Error {
  try {
    return parseCompactionJob(body, table);
  } catch (e) {
    return e as Error;
  }
}

/** Lambda entry of the compaction function. */
export const handler = instrumented(createCompactHandler());
