/**
 * Coalescing compaction jobs per bucket: a busy bucket gets one queued job, not one per commit.
 * Before it sends a bucket's job, the enqueuer (the function that committed) looks for the
 * bucket's "job queued" marker (`compaction/queued-<hash>.json` under the table): a marker younger
 * than {@link JOB_MARKER_FRESH_MS} means a job is waiting and will see this commit, so nothing is
 * sent; otherwise it writes the marker, then sends the job. The job deletes the marker when it
 * starts, before it reads the bucket, so a commit that finds no marker any more has its files
 * compacted by the next job, and one that found the marker landed before the job read the bucket.
 *
 * Cost: one HEAD per due bucket per commit, one PUT per job sent (S3 DELETE is free). A marker
 * whose job was never sent (the send failed) or waits longer than the freshness window is stale:
 * the next commit sends a job again, so a lost job delays compaction, never stops it.
 */
import { createHash } from 'node:crypto';
import { runLimited } from '../concurrency.js';
import { utf8 } from '../store/object-store.js';
import type { Table } from '../table/table.js';

/** The folder of the markers under a table; orphan cleanup never touches it. */
const COMPACTION_MARKER_DIR = 'compaction';

/**
 * How long a marker stands for a queued job: past this the next commit sends a job again (a
 * second job of a bucket finds what the first left, at worst nothing). Longer than a job usually
 * waits behind the one job of its bucket that runs (one message group per bucket).
 */
export const JOB_MARKER_FRESH_MS = 15 * 60_000;

/** The key of the marker of bucket `bucket` of `partition`. */
export function jobMarkerKey(table: Table, partition: string, bucket: number): string {
  const id = createHash('sha256').update(`${partition}/${bucket}`).digest('hex').slice(0, 32);
  return `${table.path}/${COMPACTION_MARKER_DIR}/queued-${id}.json`;
}

/**
 * Of `jobs`, the ones to send: those whose bucket has no fresh marker. Writes their markers
 * (before the send: the job that deletes it must find it).
 */
export async function claimCompactionJobs<J extends { partition: string; bucket: number; snapshotId?: number }>(
  table: Table,
  jobs: readonly J[],
  now = Date.now(),
): Promise<J[]> {
  const send = await runLimited(
    jobs.map((j) => async () => {
      const key = jobMarkerKey(table, j.partition, j.bucket);
      const marker = await table.store.head(key);
      if (marker && now - marker.lastModified < JOB_MARKER_FRESH_MS) return false;
      await table.store.put(
        key,
        utf8(JSON.stringify({ partition: j.partition, bucket: j.bucket, snapshotId: j.snapshotId, queuedAt: now })),
      );
      return true;
    }),
    8,
  );
  return jobs.filter((_, i) => send[i]);
}

/** Deletes a bucket's marker: its job starts now, so later commits send a new one. */
export async function releaseJobMarker(table: Table, partition: string, bucket: number): Promise<void> {
  await table.store.delete(jobMarkerKey(table, partition, bucket));
}
