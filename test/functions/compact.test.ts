/**
 * The compaction function on moto: jobs enqueued by commits, one bucket per job, COMPACT snapshots
 * announced on the bus, the bucket's sorted runs reported, and concurrent or useless jobs harmless.
 */
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse } from 'aws-lambda';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createCompactHandler } from '../../functions/compact.js';
import { createIngestHandler } from '../../functions/ingest.js';
import type { SnapshotCommittedDetail } from '../../lib/aws/commit-events.js';
import { readBucketFiles } from '../../lib/maintenance/compact.js';
import { sortedRunCount } from '../../lib/maintenance/compact-plan.js';
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
  sqs,
  sqsEventOf,
  takeEvents,
  type Deployment,
  captureLogs,
} from './harness.js';
import { rowTexts } from '../helpers/tables.js';

/** The functions' log lines: an ERROR line no test expects fails it (harness.ts). */
const logs = captureLogs();

/** Sorted `id:status` of the table's latest state. */
const rowsOf = (table: Table): Promise<string[]> => rowTexts(table, ['id', 'status']);

/** `commits` ingest invocations in direct mode, one commit each, updating keys 1..3. */
async function commits(d: Deployment, n: number): Promise<void> {
  const ingest = createIngestHandler(d.env('direct'));
  for (let c = 0; c < n; c++) {
    const records = [1, 2, 3].map((id) => ({ id, status: `v${c}`, amount: c }));
    const event = sqsEventOf(d.ingestUrl, [
      { MessageId: `m-${c}`, ReceiptHandle: `r-${c}`, Body: JSON.stringify(records), Attributes: {} },
    ]);
    expect(((await ingest(event)) as SQSBatchResponse).batchItemFailures).toEqual([]);
  }
}

async function sendJob(d: Deployment, body: string, dedup: string): Promise<void> {
  await sqs.send(
    new SendMessageCommand({
      QueueUrl: d.compactUrl,
      MessageBody: body,
      MessageGroupId: 'shop.orders//0',
      MessageDeduplicationId: dedup,
    }),
  );
}

describe.skipIf(!awsAvailable())('the compaction function on moto', () => {
  const metrics = captureMetrics();
  beforeAll(() => powertoolsEnv());
  beforeEach(() => metrics.clear());

  it('compacts the bucket its job names, announces the COMPACT snapshot and reports the sorted runs left', async () => {
    // Prepare: compaction is due from 3 sorted runs on; three commits to the one bucket
    const d = await deploy();
    await createOrders(d, { bucket: '1', 'num-sorted-run.compaction-trigger': '3' });
    await commits(d, 3);
    await takeEvents(d.commitEventsUrl);
    metrics.clear();

    // Act
    const polls = await drain(d.compactUrl, createCompactHandler(d.env('direct')), 1);

    // Assess
    expect(polls.map((p) => p.response.batchItemFailures)).toEqual([[]]);
    const table = await reopen(d);
    const latest = (await table.snapshots.latest())!;
    expect(latest).toMatchObject({ id: 4, commitKind: 'COMPACT', commitUser: 'compactor' });
    expect(await rowsOf(table)).toEqual(['1:v2', '2:v2', '3:v2']);
    const events = await takeEvents<SnapshotCommittedDetail>(d.commitEventsUrl);
    expect(events.map((e) => e.detail)).toEqual([
      { table: 'shop.orders', snapshotId: 4, commitKind: 'COMPACT', changelog: false },
    ]);
    expect(metrics.points.filter((p) => p.name === 'SortedRuns')).toEqual([
      { name: 'SortedRuns', value: 1, namespace: 'Varve', dimensions: { service: 'varve', table: 'shop.orders' } },
    ]);
  });

  it('commits nothing for a job whose bucket has nothing due', async () => {
    // Prepare
    const d = await deploy();
    await createOrders(d, { bucket: '1' });
    await commits(d, 1);
    await sendJob(d, JSON.stringify({ v: 1, table: 'shop.orders', partition: '', bucket: 0, snapshotId: 1 }), 'job-1');

    // Act
    const polls = await drain(d.compactUrl, createCompactHandler(d.env('direct')), 1);

    // Assess
    expect(polls.map((p) => p.response.batchItemFailures)).toEqual([[]]);
    expect(await (await reopen(d)).snapshots.latestId()).toBe(1);
  });

  it('keeps the data right when two jobs of one bucket run at once, whichever commits first', async () => {
    // Prepare: two jobs for the same bucket, handed to two invocations at once (as if FIFO were bypassed)
    const d = await deploy();
    await createOrders(d, { bucket: '1', 'num-sorted-run.compaction-trigger': '2' });
    await commits(d, 3);
    await drainQueue(d);
    const job = JSON.stringify({ v: 1, table: 'shop.orders', partition: '', bucket: 0, snapshotId: 3 });
    const event = (id: string) =>
      sqsEventOf(d.compactUrl, [
        { MessageId: id, ReceiptHandle: id, Body: job, Attributes: { MessageGroupId: 'shop.orders//0' } },
      ]);

    // Act
    const [a, b] = await Promise.all([
      createCompactHandler(d.env('direct'))(event('a')),
      createCompactHandler(d.env('direct'))(event('b')),
    ]);

    // Assess: a conflict re-plans on what the winner left, so neither fails and nothing is compacted twice
    expect([a.batchItemFailures, b.batchItemFailures]).toEqual([[], []]);
    const table = await reopen(d);
    const kinds = [];
    for (let id = 1; id <= (await table.snapshots.latestId())!; id++)
      kinds.push((await table.snapshots.read(id)).commitKind);
    expect(kinds.slice(0, 3)).toEqual(['APPEND', 'APPEND', 'APPEND']);
    expect(kinds.slice(3).every((k) => k === 'COMPACT')).toBe(true);
    expect(kinds.length).toBeGreaterThan(3);
    expect(await rowsOf(table)).toEqual(['1:v2', '2:v2', '3:v2']);
  });

  it('runs a batch of jobs of several buckets as one run: one COMPACT snapshot, the same rows', async () => {
    // Prepare: 4 buckets, each due after 2 commits; every commit writes keys 1..16 (all buckets)
    const d = await deploy();
    await createOrders(d, { bucket: '4', 'num-sorted-run.compaction-trigger': '2' });
    const ingest = createIngestHandler(d.env('direct'));
    for (let c = 0; c < 2; c++) {
      const records = Array.from({ length: 16 }, (_, i) => ({ id: i + 1, status: `v${c}`, amount: c }));
      const event = sqsEventOf(d.ingestUrl, [
        { MessageId: `m-${c}`, ReceiptHandle: `r-${c}`, Body: JSON.stringify(records), Attributes: {} },
      ]);
      expect(((await ingest(event)) as SQSBatchResponse).batchItemFailures).toEqual([]);
    }
    const before = await reopen(d);
    const rows = await rowsOf(before);
    const appends = (await before.snapshots.latestId())!;
    await takeEvents(d.commitEventsUrl);
    metrics.clear();
    const messages = await receive(d.compactUrl, 10);
    // One job per bucket, queued by the commits (coalesced: the second commit found the markers)
    expect(new Set(messages.map((m) => m.Attributes?.MessageGroupId)).size).toBe(4);
    expect(messages).toHaveLength(4);

    // Act
    const response = await createCompactHandler(d.env('direct'))(sqsEventOf(d.compactUrl, messages));

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    const table = await reopen(d);
    expect(await table.snapshots.latestId()).toBe(appends + 1);
    const compact = await table.snapshots.read(appends + 1);
    expect(compact).toMatchObject({ commitKind: 'COMPACT', commitUser: 'compactor' });
    expect(await rowsOf(table)).toEqual(rows);
    const events = await takeEvents<SnapshotCommittedDetail>(d.commitEventsUrl);
    expect(events.map((e) => e.detail.snapshotId)).toEqual([appends + 1]);
    expect(metrics.points.filter((p) => p.name === 'SortedRuns').map((p) => p.value)).toEqual([1, 1, 1, 1]);
  });

  it('fails an unreadable job and the later ones of its group only; the other groups compact', async () => {
    // Prepare: a bad job in bucket 0's group, then a good job in that group and one in bucket 1's
    const d = await deploy();
    await createOrders(d, { bucket: '2', 'num-sorted-run.compaction-trigger': '2' });
    const ingest = createIngestHandler(d.env('direct'));
    for (let c = 0; c < 2; c++) {
      const records = Array.from({ length: 8 }, (_, i) => ({ id: i + 1, status: `v${c}`, amount: c }));
      const event = sqsEventOf(d.ingestUrl, [
        { MessageId: `m-${c}`, ReceiptHandle: `r-${c}`, Body: JSON.stringify(records), Attributes: {} },
      ]);
      expect(((await ingest(event)) as SQSBatchResponse).batchItemFailures).toEqual([]);
    }
    await drainQueue(d);
    const job = (bucket: number) =>
      JSON.stringify({ v: 1, table: 'shop.orders', partition: '', bucket, snapshotId: 2 });
    const record = (id: string, body: string, group: string) => ({
      MessageId: id,
      ReceiptHandle: id,
      Body: body,
      Attributes: { MessageGroupId: group },
    });
    const event = sqsEventOf(d.compactUrl, [
      record('bad', 'not a job', 'shop.orders//0'),
      record('b0', job(0), 'shop.orders//0'),
      record('b1', job(1), 'shop.orders//1'),
    ]);

    // Act
    const response = await createCompactHandler(d.env('direct'))(event);

    // Assess: bucket 0's group failed from the bad job on; bucket 1 compacted in one snapshot
    expect(response.batchItemFailures.map((f) => f.itemIdentifier)).toEqual(['bad', 'b0']);
    const table = await reopen(d);
    expect(await table.snapshots.latestId()).toBe(3);
    const runs = await Promise.all(
      [0, 1].map(async (b) =>
        sortedRunCount(
          await readBucketFiles(table, (await table.snapshots.latest())!, '', b),
          compactionSettingsOf(table),
          table.compareKeys,
        ),
      ),
    );
    // The run compacted bucket 0 too (its good job was in the batch): a job is only a hint, and its retry finds nothing due.
    expect(runs).toEqual([1, 1]);
    // One ERROR line for the bad job, saying it is retried; and a WARN line: the made-up receipt handles cannot take a retry delay.
    expect(logs.matching(/^ERROR /)).toHaveLength(1);
    logs.expectOnly(
      /^ERROR compaction job failed; it will be retried: a compaction job is not one varve sent .*: not a job$/,
      'WARN some failed messages keep the queue visibility timeout',
    );
  });

  it('fails a job it cannot read, and every job after it in the batch', async () => {
    // Prepare
    const d = await deploy();
    await createOrders(d, { bucket: '1' });
    await sendJob(d, 'not a job', 'bad');
    await sendJob(d, JSON.stringify({ v: 1, table: 'shop.orders', partition: '', bucket: 0, snapshotId: 1 }), 'good');
    const messages = await receive(d.compactUrl, 10);

    // Act
    const response = await createCompactHandler(d.env('direct'))(sqsEventOf(d.compactUrl, messages));

    // Assess
    expect(response.batchItemFailures.map((f) => f.itemIdentifier)).toEqual(messages.map((m) => m.MessageId));
    expect(logs.matching(/^ERROR /)).toHaveLength(1);
    logs.expectOnly(
      /^ERROR compaction job failed; it will be retried: a compaction job is not one varve sent .*: not a job$/,
    );
  });
});

/** Empties the compaction queue of the jobs the commits enqueued (this test hands out its own). */
async function drainQueue(d: Deployment): Promise<void> {
  await drain(d.compactUrl, async () => ({ batchItemFailures: [] }));
}
