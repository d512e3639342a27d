/**
 * A function's writer keeps to `num-sorted-run.stop-trigger` in a warm container (moto): before
 * each commit it counts the touched buckets' sorted runs in the latest snapshot and compacts a
 * bucket over the trigger first (lib/aws/tables.ts's commit hooks). The count must be of the
 * latest snapshot: when the commits went through another snapshot manager than the check's, a
 * warm container counted the first snapshot it had seen, and a bucket grew without bound while the
 * compaction function was behind.
 */
import type { SQSBatchResponse } from 'aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import { createIngestHandler } from '../../functions/ingest.js';
import { sortedRunCount } from '../../lib/maintenance/compact-plan.js';
import { readBucketFiles } from '../../lib/maintenance/compact.js';
import { compactionSettingsOf } from '../../lib/maintenance/compaction-settings.js';
import { awsAvailable } from '../helpers/aws.js';
import { captureMetrics, createOrders, deploy, powertoolsEnv, reopen, sqsEventOf, captureLogs } from './harness.js';

/** The functions' log lines: an ERROR line fails the test that logged it (harness.ts). */
captureLogs();

// The handlers' EMF metric lines stay off the test output.
captureMetrics();

describe.skipIf(!awsAvailable())('back-pressure of a warm ingest function (moto)', () => {
  beforeAll(() => powertoolsEnv());

  it('never lets a bucket pass the stop trigger by more than the commit being made', async () => {
    // Prepare: one bucket, compaction due from 2 sorted runs, writers stalling over 2 + 3; no
    // compaction function runs, so only the writer's own check keeps the bucket in bounds
    const d = await deploy();
    await createOrders(d, { bucket: '1', 'num-sorted-run.compaction-trigger': '2' });
    const ingest = createIngestHandler(d.env('direct'));
    const COMMITS = 9;

    // Act: COMMITS direct commits from one (warm) container, each updating keys 1..3
    const runs: number[] = [];
    for (let c = 0; c < COMMITS; c++) {
      const records = [1, 2, 3].map((id) => ({ id, status: `v${c}`, amount: c }));
      const event = sqsEventOf(d.ingestUrl, [
        { MessageId: `m-${c}`, ReceiptHandle: `r-${c}`, Body: JSON.stringify(records), Attributes: {} },
      ]);
      expect(((await ingest(event)) as SQSBatchResponse).batchItemFailures).toEqual([]);
      const table = await reopen(d);
      const latest = (await table.snapshots.latest())!;
      runs.push(
        sortedRunCount(await readBucketFiles(table, latest, '', 0), compactionSettingsOf(table), table.compareKeys),
      );
    }

    // Assess: at most stop trigger + 1 runs after any commit (was 1, 2, …, 9), and the rows intact
    const table = await reopen(d);
    const stop = compactionSettingsOf(table).stopTrigger;
    console.log(`sorted runs after each commit (stop trigger ${stop}): ${runs.join(' ')}`);
    expect(stop).toBe(5);
    expect(Math.max(...runs)).toBeLessThanOrEqual(stop + 1);
    expect(
      (await table.read())
        .toArray()
        .map((r) => `${String(r.id)}:${String(r.status)}`)
        .sort(),
    ).toEqual(['1:v8', '2:v8', '3:v8']);
  });
});
