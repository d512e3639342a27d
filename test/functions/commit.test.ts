/**
 * The group-commit function on moto: many writers' batches folded into few snapshots, retries and
 * redeliveries committed once, FIFO partial failures, the `Snapshot Committed` event, and
 * compaction jobs for the buckets that need one.
 */
import { ChangeMessageVisibilityBatchCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse } from 'aws-lambda';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createCommitHandler } from '../../functions/commit.js';
import { createIngestHandler } from '../../functions/ingest.js';
import type { SnapshotCommittedDetail } from '../../lib/aws/commit-events.js';
import { BATCHES_PROPERTY } from '../../lib/table/recent-batches.js';
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

/** The functions' log lines: an ERROR line fails the test that logged it (harness.ts). */
captureLogs();

/** Sorted `id:status` of the table's latest state. */
const rowsOf = (table: Table): Promise<string[]> => rowTexts(table, ['id', 'status']);

/** `writers` ingest invocations running at once, each with its own records, in queue mode. */
async function concurrentWriters(d: Deployment, writers: number, round = 0): Promise<void> {
  const ingest = createIngestHandler(d.env('queue'));
  await Promise.all(
    Array.from({ length: writers }, async (_, w) => {
      const records = [0, 1, 2].map((i) => ({ id: w * 10 + i, status: `w${w}`, amount: i }));
      const id = `writer-${w}-round-${round}`;
      const event = sqsEventOf(d.ingestUrl, [
        { MessageId: id, ReceiptHandle: id, Body: JSON.stringify(records), Attributes: {} },
      ]);
      expect(((await ingest(event)) as SQSBatchResponse).batchItemFailures).toEqual([]);
    }),
  );
}

describe.skipIf(!awsAvailable())('the commit function on moto', () => {
  const metrics = captureMetrics();
  beforeAll(() => powertoolsEnv());
  beforeEach(() => metrics.clear());

  it('folds the batches of concurrent writers into one snapshot per invocation', async () => {
    // Prepare
    const d = await deploy();
    await createOrders(d);
    await concurrentWriters(d, 8);

    // Act
    const polls = await drain(d.commitUrl, createCommitHandler(d.env('queue')));

    // Assess: 8 writers, one invocation of (up to) 10 messages, one snapshot
    const table = await reopen(d);
    expect(polls.flatMap((p) => p.response.batchItemFailures)).toEqual([]);
    expect(await table.snapshots.latestId()).toBe(polls.length);
    expect(polls.length).toBe(1);
    expect((await rowsOf(table)).length).toBe(24);
    const snapshot = (await table.snapshots.latest())!;
    expect(snapshot).toMatchObject({ commitUser: 'group-commit', commitKind: 'APPEND', totalRecordCount: 24 });
    expect(JSON.parse(snapshot.properties![BATCHES_PROPERTY])).toHaveLength(8);
    const events = await takeEvents<SnapshotCommittedDetail>(d.commitEventsUrl);
    expect(events.map((e) => [e.source, e['detail-type'], e.detail])).toEqual([
      ['varve', 'Snapshot Committed', { table: 'shop.orders', snapshotId: 1, commitKind: 'APPEND', changelog: false }],
    ]);
    const latency = metrics.points.filter((p) => p.name === 'CommitLatencyMs');
    expect(latency).toHaveLength(1);
    expect(latency[0].dimensions).toEqual({ service: 'varve', table: 'shop.orders' });
  });

  it('commits an invocation retried as is once', async () => {
    // Prepare
    const d = await deploy();
    await createOrders(d);
    await concurrentWriters(d, 2);
    const event = sqsEventOf(d.commitUrl, await receive(d.commitUrl, 10));
    const commit = createCommitHandler(d.env('queue'));

    // Act
    const first = await commit(event);
    const again = await createCommitHandler(d.env('queue'))(event);

    // Assess
    expect([first.batchItemFailures, again.batchItemFailures]).toEqual([[], []]);
    const table = await reopen(d);
    expect(await table.snapshots.latestId()).toBe(1);
    expect((await rowsOf(table)).length).toBe(6);
  });

  it('does not commit again a batch redelivered in a larger batch after its commit', async () => {
    // Prepare: three batches committed, but the invocation "crashed" before SQS deleted them
    const d = await deploy();
    await createOrders(d);
    await concurrentWriters(d, 3);
    const commit = createCommitHandler(d.env('queue'));
    const firstMessages = await receive(d.commitUrl, 10);
    expect(firstMessages).toHaveLength(3);
    await commit(sqsEventOf(d.commitUrl, firstMessages));
    await sqs.send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: d.commitUrl,
        Entries: firstMessages.map((m, i) => ({
          Id: String(i),
          ReceiptHandle: m.ReceiptHandle!,
          VisibilityTimeout: 0,
        })),
      }),
    );
    // A fourth writer's batch arrives behind them.
    const ingest = createIngestHandler(d.env('queue'));
    await ingest(
      sqsEventOf(d.ingestUrl, [
        {
          MessageId: 'late',
          ReceiptHandle: 'r',
          Body: JSON.stringify({ id: 99, status: 'late', amount: 9 }),
          Attributes: {},
        },
      ]),
    );

    // Act: the redelivery is a different invocation batch (four messages, three received twice)
    const polls = await drain(d.commitUrl, commit);

    // Assess
    expect(polls[0].event.Records.map((r) => r.attributes.ApproximateReceiveCount)).toEqual(['2', '2', '2', '1']);
    const table = await reopen(d);
    expect(await table.snapshots.latestId()).toBe(2);
    const second = (await table.snapshots.latest())!;
    expect(second.deltaRecordCount).toBe(1);
    expect(JSON.parse(second.properties![BATCHES_PROPERTY])).toHaveLength(1);
    expect((await rowsOf(table)).length).toBe(10);
  });

  it('commits a batch once even when its writer re-sends it after SQS forgot the first copy', async () => {
    // Prepare: moto delivers a re-send once the original is deleted, as AWS does after its 5-minute window
    const d = await deploy();
    await createOrders(d);
    const commit = createCommitHandler(d.env('queue'));
    await concurrentWriters(d, 1);
    await drain(d.commitUrl, commit);

    // Act: the writer's invocation is retried with the same message ids
    await concurrentWriters(d, 1);
    const polls = await drain(d.commitUrl, commit);

    // Assess: the re-sent batch was delivered, and recognised
    expect(polls.map((p) => p.event.Records.length)).toEqual([1]);
    const table = await reopen(d);
    expect(await table.snapshots.latestId()).toBe(1);
    expect((await table.snapshots.latest())!.totalRecordCount).toBe(3);
  });

  it('enqueues a compaction job, grouped by bucket, for each bucket universal compaction picks', async () => {
    // Prepare: compaction due at 2 sorted runs; one bucket so every write lands in it
    const d = await deploy();
    await createOrders(d, { bucket: '1', 'num-sorted-run.compaction-trigger': '2' });
    const commit = createCommitHandler(d.env('queue'));

    // Act: two group commits of the same bucket
    for (let round = 0; round < 2; round++) {
      await concurrentWriters(d, 1, round);
      await drain(d.commitUrl, commit);
    }

    // Assess
    const jobs = await receive(d.compactUrl, 10);
    expect(jobs.map((j) => JSON.parse(j.Body!))).toEqual([
      { v: 1, table: 'shop.orders', partition: '', bucket: 0, snapshotId: 2 },
    ]);
    expect(jobs[0].Attributes?.MessageGroupId).toBe('shop.orders//0');
    expect(metrics.points.filter((p) => p.name === 'SortedRuns').map((p) => p.value)).toEqual([1, 2]);
  });

  it('sends nothing to compaction while no bucket needs it', async () => {
    // Prepare
    const d = await deploy();
    await createOrders(d);
    await concurrentWriters(d, 2);

    // Act
    await drain(d.commitUrl, createCommitHandler(d.env('queue')));

    // Assess
    expect(await receive(d.compactUrl, 10)).toEqual([]);
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: d.compactUrl,
        MessageBody: 'x',
        MessageGroupId: 'g',
        MessageDeduplicationId: 'x',
      }),
    );
    expect(await receive(d.compactUrl, 10)).toHaveLength(1); // the queue itself works
  });
});
