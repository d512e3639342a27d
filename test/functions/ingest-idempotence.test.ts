/**
 * Issue 11, failure 4 on moto: ingestion is idempotent per message and per inbox object, never per
 * batch composition: the same SQS messages redelivered in other batches land once, and a
 * duplicate inbox event writes no data file again.
 */
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { Message } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse } from 'aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import { createCommitHandler } from '../../functions/commit.js';
import { createIngestHandler, type IngestFileResult } from '../../functions/ingest.js';
import { listAll } from '../../lib/store/object-store.js';
import type { Table } from '../../lib/table/table.js';
import { awsAvailable } from '../helpers/aws.js';
import {
  captureMetrics,
  createOrders,
  deploy,
  drain,
  objectCreatedEvent,
  powertoolsEnv,
  reopen,
  sqsEventOf,
  type Deployment,
  captureLogs,
} from './harness.js';

/** The functions' log lines: an ERROR line fails the test that logged it (harness.ts). */
captureLogs();

const s3 = new S3Client({ forcePathStyle: true });

/** Message `n` (two records) as received for the `receive`-th time. */
function message(n: number, receive: number): Message {
  const records = [0, 1].map((i) => ({ id: n * 10 + i, status: `m${n}`, amount: i }));
  return {
    MessageId: `message-${n}`,
    ReceiptHandle: `r-${n}-${receive}`,
    Body: JSON.stringify(records),
    Attributes: { ApproximateReceiveCount: String(receive) },
  };
}

async function ingestBatch(d: Deployment, mode: 'direct' | 'queue', messages: Message[]): Promise<void> {
  const r = (await createIngestHandler(d.env(mode))(sqsEventOf(d.ingestUrl, messages))) as SQSBatchResponse;
  expect(r.batchItemFailures).toEqual([]);
}

async function dataFiles(table: Table): Promise<number> {
  return (await listAll(table.store, `${table.path}/`)).filter((o) => /\/bucket-\d+\/data-/.test(o.key)).length;
}

describe.skipIf(!awsAvailable())('per-message ingest idempotence on moto', () => {
  captureMetrics();
  beforeAll(() => powertoolsEnv());

  it.each(['direct', 'queue'] as const)(
    'lands messages redelivered in other batch compositions once (%s mode)',
    async (mode) => {
      // Prepare: messages 1 and 2 land together (committed, or queued for the group commit)
      const d = await deploy();
      await createOrders(d);
      await ingestBatch(d, mode, [message(1, 1), message(2, 1)]);

      // Act: both come back, split over batches with a new message, as after a lost acknowledgement
      await ingestBatch(d, mode, [message(2, 2), message(3, 1)]);
      const files = await dataFiles(await reopen(d));
      await ingestBatch(d, mode, [message(1, 2)]);
      const filesAfter = await dataFiles(await reopen(d));
      if (mode === 'queue') await drain(d.commitUrl, createCommitHandler(d.env('queue')));

      // Assess: six records in the table's files, each once; the batch of message 1 alone wrote nothing
      const table = await reopen(d);
      expect((await table.snapshots.latest())!.totalRecordCount).toBe(6);
      expect((await table.read()).numRows).toBe(6);
      expect(filesAfter).toBe(files);
    },
  );

  it.each(['direct', 'queue'] as const)('writes nothing for a duplicate inbox event (%s mode)', async (mode) => {
    // Prepare: a file ingested once
    const d = await deploy();
    await createOrders(d);
    const key = 'wh/inbox/shop/orders/a.jsonl';
    const put = await s3.send(
      new PutObjectCommand({
        Bucket: d.bucket,
        Key: key,
        Body: '{"id": 1, "status": "new", "amount": 1}\n{"id": 2, "status": "new", "amount": 2}\n',
      }),
    );
    const ingest = createIngestHandler(d.env(mode));
    const first = (await ingest(objectCreatedEvent(d.bucket, key, put.ETag!))) as IngestFileResult;
    expect(first.rows).toBe(2);
    const files = await dataFiles(await reopen(d));
    // Ingest deletes a landed file; as if that delete had been lost, the same bytes (same etag) are there again
    await s3.send(
      new PutObjectCommand({
        Bucket: d.bucket,
        Key: key,
        Body: '{"id": 1, "status": "new", "amount": 1}\n{"id": 2, "status": "new", "amount": 2}\n',
      }),
    );

    // Act: EventBridge delivers the event again (a retry after a timeout)
    const again = (await ingest(objectCreatedEvent(d.bucket, key, put.ETag!))) as IngestFileResult;
    if (mode === 'queue') await drain(d.commitUrl, createCommitHandler(d.env('queue')));

    // Assess
    expect(again).toMatchObject({ skipped: 'duplicate', rows: 0 });
    const table = await reopen(d);
    expect(await dataFiles(table)).toBe(files);
    expect((await table.snapshots.latest())!.totalRecordCount).toBe(2);
  });
});
