/**
 * Compaction jobs coalesced per bucket, on moto: 8 commits to one busy bucket (6 of them finding
 * compaction due) queue one job, not one per commit; the job compacts what all of them wrote; a commit after the job started queues
 * the next one; a marker whose job was lost (stale) does not stop compaction for good.
 */
import type { SQSBatchResponse } from 'aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import { createCompactHandler } from '../../functions/compact.js';
import { createIngestHandler } from '../../functions/ingest.js';
import { claimCompactionJobs, JOB_MARKER_FRESH_MS, jobMarkerKey } from '../../lib/maintenance/compaction-job-marker.js';
import { sortedRunCount } from '../../lib/maintenance/compact-plan.js';
import { readBucketFiles } from '../../lib/maintenance/compact.js';
import { compactionSettingsOf } from '../../lib/maintenance/compaction-settings.js';
import type { Table } from '../../lib/table/table.js';
import { awsAvailable } from '../helpers/aws.js';
import {
  captureMetrics,
  createOrders,
  deploy,
  drain,
  powertoolsEnv,
  receive,
  reopen,
  sqsEventOf,
  type Deployment,
  captureLogs,
} from './harness.js';

/** The functions' log lines: an ERROR line fails the test that logged it (harness.ts). */
captureLogs();

// The handlers' EMF metric lines stay off the test output.
captureMetrics();

/** `n` direct-mode ingest invocations, one commit each, updating keys 1..3 (one bucket). */
async function commits(d: Deployment, from: number, n: number): Promise<void> {
  const ingest = createIngestHandler(d.env('direct'));
  for (let c = from; c < from + n; c++) {
    const records = [1, 2, 3].map((id) => ({ id, status: `v${c}`, amount: c }));
    const event = sqsEventOf(d.ingestUrl, [
      { MessageId: `m-${c}`, ReceiptHandle: `r-${c}`, Body: JSON.stringify(records), Attributes: {} },
    ]);
    expect(((await ingest(event)) as SQSBatchResponse).batchItemFailures).toEqual([]);
  }
}

async function sortedRuns(table: Table): Promise<number> {
  const latest = (await table.snapshots.latest())!;
  return sortedRunCount(await readBucketFiles(table, latest, '', 0), compactionSettingsOf(table), table.compareKeys);
}

describe.skipIf(!awsAvailable())('compaction jobs coalesced per bucket (moto)', () => {
  beforeAll(() => powertoolsEnv());

  // Sized by work: each commit is a direct-mode ingest on moto (a few seconds on a loaded machine);
  // 8 commits past a trigger of 3 show the coalescing as well as 20 did.
  it('queues one job for 8 commits to a busy bucket, which compacts them all; the next commit after it started queues the next', {
    timeout: 180_000,
  }, async () => {
    // Prepare: compaction due from 3 sorted runs on, one bucket; the writers' back-pressure (the
    // stop trigger, 3 + 3 by default) out of the way: 8 commits with no compaction running would
    // make the ingest compact the bucket itself before its 8th commit
    const d = await deploy();
    await createOrders(d, {
      bucket: '1',
      'num-sorted-run.compaction-trigger': '3',
      'num-sorted-run.stop-trigger': '20',
    });

    // Act: 8 commits with no compaction running, then the compaction function drains its queue
    await commits(d, 0, 8);
    const polls = await drain(d.compactUrl, createCompactHandler(d.env('direct')), 1);
    const table = await reopen(d);
    const runsAfterFirst = await sortedRuns(table);
    const markerAfterJob = await table.store.head(jobMarkerKey(table, '', 0));
    // Then 6 more commits: due again after the third, one more job
    await commits(d, 8, 6);
    const second = await drain(d.compactUrl, createCompactHandler(d.env('direct')), 1);

    // Assess: 6 commits found compaction due, one job was queued; it compacted the bucket
    expect(polls).toHaveLength(1);
    expect(polls[0].response.batchItemFailures).toEqual([]);
    expect(runsAfterFirst).toBeLessThan(3);
    expect(markerAfterJob).toBeUndefined();
    expect(second).toHaveLength(1);
    const after = await reopen(d);
    expect((await after.snapshots.latest())!.commitKind).toBe('COMPACT');
    expect(await sortedRuns(after)).toBeLessThan(3);
    expect(
      (await after.read())
        .toArray()
        .map((r) => `${String(r.id)}:${String(r.status)}`)
        .sort(),
    ).toEqual(['1:v13', '2:v13', '3:v13']);
  });

  it('sends a job again once the marker is stale (its job was lost), and none while it is fresh', async () => {
    // Prepare
    const d = await deploy();
    const table = await createOrders(d, { bucket: '1' });
    const job = { table: 'shop.orders', partition: '', bucket: 0, snapshotId: 1 };
    const now = Date.now();

    // Act
    const first = await claimCompactionJobs(table, [job], now);
    const whileFresh = await claimCompactionJobs(table, [job], now + JOB_MARKER_FRESH_MS - 60_000);
    const whenStale = await claimCompactionJobs(table, [job], now + JOB_MARKER_FRESH_MS + 60_000);

    // Assess
    expect(first).toEqual([job]);
    expect(whileFresh).toEqual([]);
    expect(whenStale).toEqual([job]);
    expect(await receive(d.compactUrl)).toEqual([]); // claiming sends nothing itself
  });
});
