/**
 * The ingest function on moto: SQS record batches and inbox files in, rows landed (direct commit
 * or the commit queue), invalid records in the rejects queue with their reasons, retries landing
 * once, transient failures reported per message.
 */
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import * as arrow from 'apache-arrow';
import { Table as WasmTable, writeParquet } from 'parquet-wasm';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createIngestHandler, type IngestFileResult } from '../../functions/ingest.js';
import type { RejectMessage } from '../../lib/aws/rejects.js';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { readLiveFiles } from '../../lib/manifest/scan.js';
import { listAll } from '../../lib/store/object-store.js';
import type { Table } from '../../lib/table/table.js';
import { awsAvailable } from '../helpers/aws.js';
import {
  captureMetrics,
  createOrders,
  deploy,
  objectCreatedEvent,
  powertoolsEnv,
  receive,
  reopen,
  sendBodies,
  sqsEventOf,
  takeAll,
  type Deployment,
  captureLogs,
} from './harness.js';
import { rowTexts } from '../helpers/tables.js';

/** The functions' log lines: an ERROR line no test expects fails it (harness.ts). */
const logs = captureLogs();

const s3 = new S3Client({ forcePathStyle: true });

/** The rows of the table's latest snapshot as `id:status`, sorted. */
const rowsOf = (table: Table): Promise<string[]> => rowTexts(table, ['id', 'status']);

/** Sends bodies to the ingest queue and receives them back as one event, the way the event source mapping would. */
async function ingestEvent(d: Deployment, bodies: string[]): Promise<SQSEvent> {
  await sendBodies(d.ingestUrl, bodies);
  const messages = [];
  while (messages.length < bodies.length) messages.push(...(await receive(d.ingestUrl, 10)));
  return sqsEventOf(d.ingestUrl, messages);
}

/** Puts a file in the table's inbox and returns its etag. */
async function dropFile(
  d: Deployment,
  name: string,
  body: Uint8Array | string,
): Promise<{ key: string; etag: string }> {
  const key = `wh/inbox/shop/orders/${name}`;
  const r = await s3.send(new PutObjectCommand({ Bucket: d.bucket, Key: key, Body: body }));
  return { key, etag: r.ETag! };
}

/** Data files present under the table's bucket folders. */
async function dataFiles(table: Table): Promise<string[]> {
  return (await listAll(table.store, `${table.path}/bucket-`)).map((o) => o.key);
}

describe.skipIf(!awsAvailable())('the ingest function on moto', () => {
  const metrics = captureMetrics();
  beforeAll(() => powertoolsEnv());
  beforeEach(() => metrics.clear());

  it('sends invalid records to the rejects queue with their reasons while the valid ones land', async () => {
    // Prepare
    const d = await deploy();
    await createOrders(d);
    const ingest = createIngestHandler(d.env('direct'));
    const event = await ingestEvent(d, [
      JSON.stringify({ id: 1, status: 'new', amount: 1.5 }),
      '{"id": 2, "status": "new", ', // not JSON at all
      JSON.stringify([
        { id: 3, status: 'new', amount: 3 },
        { id: 4, status: 'new', amount: 'four' },
        { status: 'no key' },
      ]),
      JSON.stringify({ id: 5, status: 'new', amount: 5, colour: 'red' }),
    ]);

    // Act
    const response = (await ingest(event)) as SQSBatchResponse;

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect(await rowsOf(await reopen(d))).toEqual(['1:new', '3:new']);
    const rejects = (await takeAll(d.rejectsUrl)).map((b) => JSON.parse(b) as RejectMessage);
    const byId = new Map(rejects.map((r) => [r.id, r]));
    const [, second, third, fourth] = event.Records.map((r) => r.messageId);
    expect([...byId.keys()].sort()).toEqual([`${second}#0`, `${third}#2`, `${third}#3`, `${fourth}#1`].sort());
    expect(byId.get(`${second}#0`)!.reason).toMatch(/not JSON/);
    expect(byId.get(`${third}#2`)).toMatchObject({ table: 'shop.orders', source: { messageId: third }, line: 2 });
    expect(byId.get(`${third}#2`)!.reason).toMatch(/amount/);
    expect(byId.get(`${third}#3`)!.reason).toMatch(/id/);
    expect(byId.get(`${fourth}#1`)!.reason).toMatch(/colour/);
    expect(JSON.parse(byId.get(`${fourth}#1`)!.record)).toEqual({ id: 5, status: 'new', amount: 5, colour: 'red' });
  });

  it('commits a retried invocation once in direct mode, leaving no stray files', async () => {
    // Prepare
    const d = await deploy();
    await createOrders(d);
    const ingest = createIngestHandler(d.env('direct'));
    const event = await ingestEvent(d, [
      JSON.stringify([
        { id: 1, status: 'a', amount: 1 },
        { id: 2, status: 'b', amount: 2 },
      ]),
    ]);

    // Act: the same batch twice, as after a timeout that hid the first attempt's success
    await ingest(event);
    await ingest({ Records: [...event.Records].reverse() });

    // Assess
    const table = await reopen(d);
    expect(await table.snapshots.latestId()).toBe(1);
    expect(await rowsOf(table)).toEqual(['1:a', '2:b']);
    const latest = (await table.snapshots.latest())!;
    expect(latest.totalRecordCount).toBe(2);
    const live = await readLiveFiles(table.store, table.path, latest);
    expect((await dataFiles(table)).sort()).toEqual(
      live.map((e) => `${table.path}/bucket-${e.bucket}/${e.file.fileName}`).sort(),
    );
    // CommitLatencyMs once (the retry created nothing), CommitConflicts for both, dimension table.
    expect(metrics.points.filter((p) => p.name === 'CommitLatencyMs')).toHaveLength(1);
    expect(metrics.points.find((p) => p.name === 'CommitConflicts')).toMatchObject({
      value: 0,
      dimensions: { service: 'varve', table: 'shop.orders' },
    });
  });

  it('sends the prepared batch to the commit queue in queue mode, once for a retried invocation', async () => {
    // Prepare
    const d = await deploy();
    await createOrders(d);
    const ingest = createIngestHandler(d.env('queue'));
    const event = await ingestEvent(d, [JSON.stringify({ id: 9, status: 'q', amount: 9 })]);

    // Act
    await ingest(event);
    await ingest(event);

    // Assess: nothing committed yet; one commit message (deduplicated on the commit identifier)
    const table = await reopen(d);
    expect(await table.snapshots.latestId()).toBeUndefined();
    const queued = await receive(d.commitUrl, 10);
    expect(queued).toHaveLength(1);
    const m = JSON.parse(queued[0].Body!);
    expect(m).toMatchObject({ v: 1, table: 'shop.orders', schemaId: 0, batch: { rowCount: 1 } });
    expect(m.batch.newFiles).toHaveLength(1);
    expect(m.batch.newFiles[0].file).not.toHaveProperty('rows');
    expect(queued[0].Attributes).toMatchObject({
      MessageGroupId: 'shop.orders',
      MessageDeduplicationId: m.commitIdentifier,
    });
  });

  it('reports the messages with rows as batch item failures when landing fails, and not the all-rejected ones', async () => {
    // Prepare: a commit queue that does not exist makes the hand-off fail
    const d = await deploy();
    await createOrders(d);
    const env = d.env('queue', {
      VARVE_COMMIT_QUEUE_URL: `${d.commitUrl.replace(/commit-[^/]*$/, 'missing-queue.fifo')}`,
    });
    const event = await ingestEvent(d, [
      JSON.stringify({ id: 1, status: 'a', amount: 1 }),
      JSON.stringify({ nope: true }),
      JSON.stringify({ id: 2, status: 'b', amount: 2 }),
    ]);

    // Act
    const response = (await createIngestHandler(env)(event)) as SQSBatchResponse;

    // Assess
    const [first, second, third] = event.Records.map((r) => r.messageId);
    expect(response.batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual([first, third].sort());
    expect(response.batchItemFailures.map((f) => f.itemIdentifier)).not.toContain(second);
    expect(await takeAll(d.rejectsUrl)).toHaveLength(1);
    expect(logs.matching(/^ERROR /)).toHaveLength(1);
    logs.expectOnly(
      /^ERROR the rows of some messages did not land; they will be retried: The specified queue does not exist/,
    );
  });

  it('ingests JSONL, CSV and Parquet inbox files by extension, rejecting bad rows and landing each file once', async () => {
    // Prepare
    const d = await deploy();
    await createOrders(d);
    const ingest = createIngestHandler(d.env('direct'));
    const jsonl = await dropFile(
      d,
      '2024/orders-1.jsonl',
      '{"id": 1, "status": "j", "amount": 1}\n{"id": "x"}\n{"id": 2, "status": "j", "amount": 2}\n',
    );
    const csv = await dropFile(d, 'orders 2.csv', 'id,status,amount\n3,c,3.5\n4,c,not-a-number\n5,c,5\n');
    const parquet = await dropFile(
      d,
      'orders-3.parquet',
      writeParquet(
        WasmTable.fromIPCStream(
          arrow.tableToIPC(
            new arrow.Table({
              id: arrow.vectorFromArray([6n, 7n], new arrow.Int64()),
              status: arrow.vectorFromArray(['p', 'p'], new arrow.Utf8()),
              amount: arrow.vectorFromArray([6, 7], new arrow.Float64()),
            }),
            'stream',
          ),
        ),
      ),
    );
    const event = (f: { key: string; etag: string }) => objectCreatedEvent(d.bucket, f.key, f.etag);

    // Act: S3 → EventBridge delivers at least once: the CSV event twice, its key URL-encoded once
    const results: IngestFileResult[] = [];
    for (const e of [
      event(jsonl),
      event(csv),
      event(parquet),
      objectCreatedEvent(d.bucket, csv.key.replace(' ', '+'), csv.etag),
    ]) {
      results.push((await ingest(e)) as IngestFileResult);
    }

    // Assess
    expect(results.map((r) => [r.rows, r.rejected])).toEqual([
      [2, 1],
      [2, 1],
      [2, 0],
      [0, 0],
    ]);
    expect(results[3].skipped).toBe('deleted'); // deleted once its rows landed: nothing read into files again
    const table = await reopen(d);
    expect(await table.snapshots.latestId()).toBe(3);
    expect(await rowsOf(table)).toEqual(['1:j', '2:j', '3:c', '5:c', '6:p', '7:p']);
    const rejects = (await takeAll(d.rejectsUrl)).map((b) => JSON.parse(b) as RejectMessage);
    expect(rejects.map((r) => [r.source, r.line])).toContainEqual([
      { bucket: d.bucket, key: jsonl.key, etag: jsonl.etag.replace(/"/g, '') },
      2,
    ]);
    expect(rejects.filter((r) => 'key' in r.source && r.source.key === csv.key).map((r) => r.line)).toEqual([3]);
  });

  it('skips files outside the inbox, files overwritten since their event, and rejects unknown extensions', async () => {
    // Prepare
    const d = await deploy();
    await createOrders(d);
    const ingest = createIngestHandler(d.env('direct'));
    const old = await dropFile(d, 'a.jsonl', '{"id": 1, "status": "old", "amount": 1}\n');
    await dropFile(d, 'a.jsonl', '{"id": 1, "status": "new", "amount": 1}\n');
    const txt = await dropFile(d, 'notes.txt', 'hello');
    const garbage = await dropFile(d, 'broken.parquet', 'not a parquet file');

    // Act
    const outside = (await ingest(
      objectCreatedEvent(d.bucket, 'wh/inbox/shop/other/a.jsonl', old.etag),
    )) as IngestFileResult;
    const stale = (await ingest(objectCreatedEvent(d.bucket, old.key, old.etag))) as IngestFileResult;
    const unknown = (await ingest(objectCreatedEvent(d.bucket, txt.key, txt.etag))) as IngestFileResult;
    const broken = (await ingest(objectCreatedEvent(d.bucket, garbage.key, garbage.etag))) as IngestFileResult;

    // Assess
    expect([outside.skipped, stale.skipped, unknown.rejected, broken.rejected]).toEqual([
      'outside-inbox',
      'superseded',
      1,
      1,
    ]);
    expect(await (await reopen(d)).snapshots.latestId()).toBeUndefined();
    const rejects = (await takeAll(d.rejectsUrl)).map((b) => JSON.parse(b) as RejectMessage);
    const reasonOf = (key: string) => rejects.find((r) => 'key' in r.source && r.source.key === key)?.reason;
    expect(reasonOf(txt.key)).toMatch(/\.jsonl.*\.csv.*\.parquet/);
    expect(reasonOf(garbage.key)).toMatch(/cannot be read as parquet/);
  });
});
