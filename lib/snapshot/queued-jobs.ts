/**
 * Which buckets have a compaction job queued, carried by the snapshots themselves (snapshot
 * property `varve.queued-jobs`), so that a committer decides whether to send a bucket's job from
 * the base it already read: no request. An entry `[partition, bucket, queuedAt, snapshotId]` says
 * that the commit of snapshot `snapshotId` found the bucket due and sends its job right after it
 * lands (the sender sends the entries its own snapshots set: lib/aws/after-commit.ts). The rule each commit
 * follows (nextQueuedJobs), given the base's entries and this commit's new per-bucket summary:
 *
 * 1. Carried forward: every entry of the base younger than {@link QUEUED_JOB_FRESH_MS} whose
 *    bucket still holds files and loses none in this commit.
 * 2. Cleared: the entry of a bucket this commit removes files from. Files leave a bucket only by a
 *    compaction (or an overwrite) that read it, so its queued job has run or finds less to do.
 * 3. Set: for each bucket this commit adds to or removes from, and each whose entry went stale,
 *    that is due in the new summary and has no entry left: a new entry, its job sent after the
 *    commit.
 *
 * Why no due bucket is left without a job coming (beyond the freshness window):
 * - Appends only add sorted runs, so a bucket that is due stays due until files leave it (2).
 * - A commit that makes a bucket due sends its job unless an entry says one is queued (3).
 * - That queued job reads the latest snapshot when it starts and commits its compaction on the
 *   newest one: a commit X that landed while the job ran (it kept the entry and sent nothing) is
 *   in the base of the job's commit C, so C's summary holds X's files. C clears the entry (2) and,
 *   when the bucket is still due with X's files, sets a new one (3), whose job the compaction
 *   function sends after its run. A commit after C finds no entry and sends when due.
 * - A job that is never sent (the sender stopped between its commit and the send, or the send
 *   failed) or never finishes (its retries exhausted) leaves an entry with no job behind it: the
 *   entry goes stale after QUEUED_JOB_FRESH_MS, and the next commit to the table — any bucket —
 *   sends the job again (3). So a lost job delays compaction by at most the window, never stops
 *   it, while the table is written to.
 * - A commit whose committer does not take part (a CLI writer: it compacts inline) writes no
 *   entries; the next taking part starts from none and sends a job for each due bucket it
 *   touches: one job more at worst, never one fewer.
 * test/snapshot/queued-jobs.test.ts checks this with commits, sends lost, jobs started and
 * finished in random orders.
 */
import * as v from 'valibot';
import { jsonInt, parseJsonProperty } from '../json.js';
import type { ManifestEntry } from '../manifest/types.js';
import { type BucketSummary, summaryBucketFiles } from './bucket-summary.js';
import type { Snapshot } from './snapshot.js';

/** Snapshot property holding the entries (see the file comment). */
export const QUEUED_JOBS_PROPERTY = 'varve.queued-jobs';

/**
 * How long an entry stands for a queued job: past this, a commit sends the bucket's job again (a
 * second job of a bucket finds what the first left, at worst nothing). Longer than a job usually
 * waits behind the one job of its bucket that runs (one message group per bucket).
 */
export const QUEUED_JOB_FRESH_MS = 15 * 60_000;

/** One bucket's queued job: [partition, bucket, queuedAt (epoch ms), id of the snapshot that queued it]. */
export type QueuedJob = [partition: string, bucket: number, queuedAt: number, snapshotId: number];

/** Whether a bucket is due for compaction in a summary (the caller's compaction settings decide). */
export type CompactionDue = (summary: BucketSummary, partition: string, bucket: number) => boolean;

/** What one commit brings to the rule: its snapshot id, its clock, its changes and its new summary. */
export interface QueuedJobsStep {
  snapshotId: number;
  now: number;
  adds: readonly ManifestEntry[];
  deletes: readonly ManifestEntry[];
  /** The summary of the snapshot being planned (the base's, less the deletes, plus the adds). */
  summary: BucketSummary;
  due: CompactionDue;
}

const keyOf = (partition: string, bucket: number): string => JSON.stringify([partition, bucket]);

/** The entries of snapshot `snapshotId`'s commit from its base's `base` (the rule in the file comment). */
export function nextQueuedJobs(base: readonly QueuedJob[], step: QueuedJobsStep): QueuedJob[] {
  const removedFrom = new Set(step.deletes.map((e) => keyOf(e.partition, e.bucket)));
  const next = new Map<string, QueuedJob>();
  const candidates = new Map<string, [string, number]>();
  for (const e of [...step.adds, ...step.deletes])
    candidates.set(keyOf(e.partition, e.bucket), [e.partition, e.bucket]);
  for (const job of base) {
    const [partition, bucket, queuedAt] = job;
    const key = keyOf(partition, bucket);
    if (summaryBucketFiles(step.summary, partition, bucket) === undefined || removedFrom.has(key)) continue;
    if (step.now - queuedAt < QUEUED_JOB_FRESH_MS) next.set(key, job);
    else candidates.set(key, [partition, bucket]);
  }
  for (const [key, [partition, bucket]] of candidates)
    if (!next.has(key) && step.due(step.summary, partition, bucket))
      next.set(key, [partition, bucket, step.now, step.snapshotId]);
  return [...next.values()];
}

const parsed = new WeakMap<Snapshot, QueuedJob[] | undefined>();

/** The entries `snapshot` carries, undefined when it carries none (its committer took no part, or they do not parse). */
export function queuedJobsOf(snapshot: Snapshot | undefined): QueuedJob[] | undefined {
  if (snapshot === undefined) return undefined;
  if (!parsed.has(snapshot)) parsed.set(snapshot, decode(snapshot.properties?.[QUEUED_JOBS_PROPERTY]));
  return parsed.get(snapshot);
}

/** The property value of `jobs`. */
export function encodeQueuedJobs(jobs: readonly QueuedJob[]): string {
  return JSON.stringify(jobs);
}

const QueuedJobsSchema = v.array(
  v.tuple([v.string(), v.pipe(jsonInt, v.minValue(0)), v.pipe(jsonInt, v.minValue(0)), v.pipe(jsonInt, v.minValue(0))]),
);

function decode(text: string | undefined): QueuedJob[] | undefined {
  return parseJsonProperty(text, QueuedJobsSchema);
}
