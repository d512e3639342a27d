/**
 * The APPEND commit of one or more writer batches (one snapshot however many batches: the group
 * commit), with its metrics, and what follows a commit on AWS: the `Snapshot Committed` event, the
 * sorted runs of every bucket written, and compaction jobs for the buckets that need one.
 */
import type { Snapshot } from '../../lib/snapshot/snapshot.js';
import { commit, type CommitBatch, type CommitResult } from '../../lib/snapshot/commit.js';
import { dataFileKey } from '../../lib/table/paths.js';
import { commitOptionsFor } from '../../lib/table/commit-options.js';
import type { Table } from '../../lib/table/table.js';
import { announceSnapshotCommitted } from './commit-events.js';
import { bucketStates, sendCompactionJobs, type TouchedBucket } from './compaction-jobs.js';
import type { WriterSettings } from './env.js';
import { emitMetric, log, METRIC, UNIT } from './observability.js';
import { cachingSnapshotManagerOf, manifestCacheOf } from './tables.js';

/** Who commits and how the commit recognises itself when retried. */
export interface AppendSpec {
  /** Stable per table and role (`ingest`, `group-commit`, a stream sink): idempotence is per user. */
  commitUser: string;
  /** Derived from the input (see identifiers.ts). */
  commitIdentifier: string;
  /** The schema the batches were written with. @default the table's current schema */
  schemaId?: number;
  properties?: Record<string, string>;
}

/**
 * Commits `batches` as one APPEND snapshot. Emits CommitLatencyMs (when this call created the
 * snapshot) and CommitConflicts (snapshot ids lost to other committers), dimension `table`.
 */
export async function commitAppend(table: Table, batches: CommitBatch[], spec: AppendSpec): Promise<CommitResult> {
  const started = performance.now();
  let retries = 0;
  const dims = { table: table.name };
  try {
    const result = await commit(
      table.store,
      table.path,
      {
        commitUser: spec.commitUser,
        commitIdentifier: spec.commitIdentifier,
        kind: 'APPEND',
        schemaId: spec.schemaId ?? table.schema.id,
        batches,
        properties: spec.properties,
      },
      commitOptionsFor(table, { manifestCache: manifestCacheOf(table), snapshotManager: cachingSnapshotManagerOf(table), onRetry: () => retries++ }),
    );
    // Every attempt after the first followed a lost race for the snapshot id.
    emitMetric(METRIC.commitConflicts, UNIT.count, Math.max(0, result.attempts - 1), dims);
    if (result.committed) emitMetric(METRIC.commitLatencyMs, UNIT.ms, Math.round(performance.now() - started), dims);
    return result;
  } catch (e) {
    emitMetric(METRIC.commitConflicts, UNIT.count, retries, dims);
    throw e;
  }
}

/** The (partition, bucket) pairs the batches write to. */
export function touchedBy(batches: readonly CommitBatch[]): TouchedBucket[] {
  const seen = new Map<string, TouchedBucket>();
  for (const b of batches) {
    for (const c of [...b.newFiles, ...b.changelogFiles]) seen.set(JSON.stringify([c.partition, c.bucket]), { partition: c.partition, bucket: c.bucket });
  }
  return [...seen.values()];
}

/**
 * After a commit: announces the snapshot, reports each written bucket's sorted runs (SortedRuns,
 * dimension `table`) and enqueues compaction jobs for the buckets that need one. Best effort: the
 * commit has landed whatever happens here, discovery's schedule is the backstop for a lost event
 * and the next commit to a bucket enqueues its job again.
 */
export async function afterCommit(table: Table, snapshot: Snapshot, touched: readonly TouchedBucket[], settings: WriterSettings): Promise<void> {
  if (settings.eventBusName) await announceSnapshotCommitted(settings.eventBusName, table.name, snapshot);
  try {
    const states = await bucketStates(table, snapshot, touched);
    for (const s of states) emitMetric(METRIC.sortedRuns, UNIT.count, s.sortedRuns, { table: table.name });
    const due = states.filter((s) => s.due);
    if (due.length > 0 && settings.compactQueueUrl) {
      await sendCompactionJobs(
        settings.compactQueueUrl,
        due.map((s) => ({ table: table.name, partition: s.partition, bucket: s.bucket, snapshotId: snapshot.id })),
      );
    }
  } catch (e) {
    log().warn('compaction jobs were not enqueued; the next commit to these buckets enqueues them', { table: table.name, snapshotId: snapshot.id, error: e as Error });
  }
}

/** Deletes the files of batches that no snapshot references (a retry whose commit had already landed). */
export async function deleteBatchFiles(table: Table, batches: readonly CommitBatch[]): Promise<void> {
  for (const b of batches) {
    for (const c of [...b.newFiles, ...b.changelogFiles]) await table.store.delete(dataFileKey(table.path, c.partition, c.bucket, c.file.fileName));
  }
}
