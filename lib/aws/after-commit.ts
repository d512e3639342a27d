/**
 * What follows an APPEND commit a function makes, and how a function's writer commits: the
 * `Snapshot Committed` event, CommitLatencyMs / CommitConflicts, the sorted runs of every bucket
 * written, and compaction jobs for the buckets that need one and have none queued (the commit
 * recorded which in its snapshot: lib/snapshot/queued-jobs.ts). Best effort after the commit: it has
 * landed whatever happens here, discovery's schedule is the backstop for a lost event and the next
 * commit to a bucket enqueues its job again.
 */
import type { AfterAppend } from '../table/append-commit.js';
import { touchedBy } from '../table/append-commit.js';
import type { LandOptions } from '../table/land-rows.js';
import { claimCompactionJobs } from '../maintenance/compaction-job-marker.js';
import { type BucketState, bucketStates } from '../maintenance/compaction-jobs.js';
import { compactionSettingsOf } from '../maintenance/compaction-settings.js';
import { summaryRuns } from '../maintenance/summary-runs.js';
import { queuedJobsOf } from '../snapshot/queued-jobs.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import { sendsCompactionJobs } from '../table/commit-options.js';
import type { CommitMessage } from '../table/commit-message.js';
import type { Table } from '../table/table.js';
import { announceSnapshotCommitted } from './commit-events.js';
import type { WriterSettings } from './env.js';
import { emitMetric, log, METRIC, UNIT } from './telemetry.js';
import { sendCommitMessage, sendCompactionJobs } from './queues.js';
import { commitCachesOf, manifestCacheOf, schemaSeenAt } from './tables.js';

/** The after-commit work of `table`'s APPEND commits under `settings` (see the file comment). */
export function afterAppend(
  table: Table,
  settings: Pick<WriterSettings, 'compactQueueUrl' | 'eventBusName'>,
): AfterAppend {
  if (settings.compactQueueUrl) recordQueuedJobs(table);
  return async ({ snapshot, batches, conflicts, latencyMs, hookError }) => {
    const dims = { table: table.name };
    if (hookError)
      log().warn("the table's after-commit work failed; the commit has landed", {
        table: table.name,
        snapshotId: snapshot.id,
        error: hookError,
      });
    emitMetric(METRIC.commitConflicts, UNIT.count, conflicts, dims);
    if (latencyMs !== undefined) emitMetric(METRIC.commitLatencyMs, UNIT.ms, latencyMs, dims);
    if (settings.eventBusName) await announceSnapshotCommitted(settings.eventBusName, table.name, snapshot);
    try {
      const states = await bucketStates(table, snapshot, touchedBy(batches), manifestCacheOf(table));
      for (const s of states) emitMetric(METRIC.sortedRuns, UNIT.count, s.sortedRuns, dims);
      if (settings.compactQueueUrl)
        await sendQueuedJobs(table, settings.compactQueueUrl, snapshot, new Set([snapshot.id]), states);
    } catch (e) {
      log().warn('compaction jobs were not enqueued; the next commit to these buckets enqueues them', {
        table: table.name,
        snapshotId: snapshot.id,
        error: e as Error,
      });
    }
  };
}

/**
 * Makes `table`'s commits record the buckets with a compaction job queued (queued-jobs.ts), due
 * as the compaction-job check judges from what a snapshot carries per bucket. Not for an append
 * table: its small-file compaction weighs each file, which the summary does not hold.
 */
function recordQueuedJobs(table: Table): void {
  const settings = compactionSettingsOf(table);
  if (settings.append) return;
  sendsCompactionJobs(
    table,
    (summary, partition, bucket) => summaryRuns(summary, { partition, bucket }, settings)?.due === true,
  );
}

/**
 * Sends the compaction jobs `latest` records as queued by one of the snapshots `setBy` (the
 * sender's own commits: each sends what it queued). A snapshot without the record (its table
 * carries no per-bucket summary) falls back to the "job queued" markers for the buckets of
 * `fallback` that are due (compaction-job-marker.ts); none given, nothing is sent.
 */
async function sendQueuedJobs(
  table: Table,
  queueUrl: string,
  latest: Snapshot,
  setBy: ReadonlySet<number>,
  fallback?: readonly BucketState[],
): Promise<void> {
  const queued = queuedJobsOf(latest);
  const job = (partition: string, bucket: number, snapshotId = latest.id) => ({
    table: table.name,
    partition,
    bucket,
    snapshotId,
  });
  const jobs =
    queued !== undefined
      ? queued.filter((j) => setBy.has(j[3])).map(([partition, bucket, , id]) => job(partition, bucket, id))
      : // One queued job per bucket: a bucket whose job still waits gets none.
        await claimCompactionJobs(
          table,
          (fallback ?? []).filter((s) => s.due).map((s) => job(s.partition, s.bucket)),
        );
  if (jobs.length > 0) await sendCompactionJobs(queueUrl, jobs);
}

/**
 * The compaction function's side of the record (queued-jobs.ts): its COMPACT commits record the
 * buckets with a job queued, and a run that leaves a bucket still due (a commit landed while the
 * job read it) queues the bucket's next job; `send` sends what the run's snapshots queued, as the
 * newest of them records it (an entry a later round cleared is not sent). Best effort: an entry
 * whose job was not sent goes stale, and a later commit sends it.
 */
export function nextJobsOfRun(
  table: Table,
  queueUrl: string | undefined,
): { seen(s: Snapshot): void; send(): Promise<void> } {
  if (queueUrl) recordQueuedJobs(table);
  const committed: Snapshot[] = [];
  return {
    seen: (s) => committed.push(s),
    send: async () => {
      const newest = committed.reduce<Snapshot | undefined>((n, s) => (n && n.id > s.id ? n : s), undefined);
      if (!queueUrl || !newest) return;
      await sendQueuedJobs(table, queueUrl, newest, new Set(committed.map((s) => s.id))).catch((error: unknown) =>
        log().warn('the next compaction jobs were not sent; a later commit sends them', {
          table: table.name,
          error: error as Error,
        }),
      );
    },
  };
}

/** `m` with when the lookup that found its schema (`table`'s) newest started, when known. */
function withSchemaSeenAt(table: Table, m: CommitMessage): CommitMessage {
  const seenAt = schemaSeenAt(table);
  return seenAt === undefined || m.schemaId !== table.schema.id ? m : { ...m, schemaSeenAt: seenAt };
}

/** How a function's writer lands rows in `table` under `settings`: enqueued for the group commit, or committed directly. */
export function landOptions(
  table: Table,
  settings: WriterSettings,
  commitUser: string,
  commitIdentifier: string,
  sources?: string[],
): LandOptions {
  const queueUrl = settings.mode === 'queue' ? settings.commitQueueUrl : undefined;
  return {
    commitUser,
    commitIdentifier,
    sources,
    // With when its schema was found newest: the commit function, cold, opens the table at it (tables.ts).
    enqueue: queueUrl ? (m) => sendCommitMessage(queueUrl, withSchemaSeenAt(table, m)) : undefined,
    afterCommit: afterAppend(table, settings),
    commitOptions: commitCachesOf(table),
  };
}
