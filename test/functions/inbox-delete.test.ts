/**
 * Ingest deletes an inbox file once its rows landed, on moto: after the commit in direct mode,
 * after the hand-off to the group commit in queue mode (the rows then live in registered data
 * files and a queued message), on a duplicate event of a landed file whose first delete was lost;
 * never a version written since it was read (If-Match), nor a file it could not parse.
 */
import { HeadObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { beforeAll, describe, expect, it } from 'vitest';
import { createCommitHandler } from '../../functions/commit.js';
import { createIngestHandler, type IngestFileResult } from '../../functions/ingest.js';
import { deleteInboxObject } from '../../lib/aws/inbox.js';
import type { S3Store } from '../../lib/store/s3-store.js';
import { awsAvailable } from '../helpers/aws.js';
import {
  captureMetrics,
  createOrders,
  deploy,
  drain,
  objectCreatedEvent,
  powertoolsEnv,
  reopen,
  type Deployment,
  captureLogs,
} from './harness.js';

/** The functions' log lines: an ERROR line fails the test that logged it (harness.ts). */
captureLogs();

// The handlers' EMF metric lines stay off the test output.
captureMetrics();

const s3 = new S3Client({ forcePathStyle: true });

async function dropFile(d: Deployment, name: string, body: string): Promise<{ key: string; etag: string }> {
  const key = `wh/inbox/shop/orders/${name}`;
  const r = await s3.send(new PutObjectCommand({ Bucket: d.bucket, Key: key, Body: body }));
  return { key, etag: r.ETag! };
}

async function exists(d: Deployment, key: string): Promise<boolean> {
  try {
    await s3.send(new HeadObjectCommand({ Bucket: d.bucket, Key: key }));
    return true;
  } catch {
    return false;
  }
}

async function rowsOf(d: Deployment): Promise<string[]> {
  return (await (await reopen(d)).read())
    .toArray()
    .map((r) => `${String(r.id)}:${String(r.status)}`)
    .sort();
}

describe.skipIf(!awsAvailable())('inbox files deleted after their rows landed (moto)', () => {
  beforeAll(() => powertoolsEnv());

  it('deletes the file after the commit (direct mode) and after the hand-off to the group commit (queue mode)', async () => {
    // Prepare
    const d = await deploy();
    await createOrders(d);
    const direct = await dropFile(d, 'direct.jsonl', '{"id": 1, "status": "d", "amount": 1}\n{"id": "bad"}\n');
    const queued = await dropFile(d, 'queued.jsonl', '{"id": 2, "status": "q", "amount": 2}\n');

    // Act
    const r1 = (await createIngestHandler(d.env('direct'))(
      objectCreatedEvent(d.bucket, direct.key, direct.etag),
    )) as IngestFileResult;
    const r2 = (await createIngestHandler(d.env('queue'))(
      objectCreatedEvent(d.bucket, queued.key, queued.etag),
    )) as IngestFileResult;
    const queuedGoneBeforeCommit = !(await exists(d, queued.key));
    await drain(d.commitUrl, createCommitHandler(d.env('queue')));

    // Assess
    expect(r1).toMatchObject({ rows: 1, rejected: 1, deleted: true });
    expect(r1.landed?.snapshot).toBeDefined();
    expect(r2).toMatchObject({ rows: 1, deleted: true, landed: { queued: true } });
    expect(await exists(d, direct.key)).toBe(false);
    expect(queuedGoneBeforeCommit).toBe(true);
    expect(await rowsOf(d)).toEqual(['1:d', '2:q']);
  });

  it('deletes a landed file on its duplicate event, keeps a file it cannot parse and a version written since it was read', async () => {
    // Prepare
    const d = await deploy();
    const table = await createOrders(d);
    const ingest = createIngestHandler(d.env('direct'));
    const body = '{"id": 3, "status": "x", "amount": 3}\n';
    const file = await dropFile(d, 'again.jsonl', body);
    await ingest(objectCreatedEvent(d.bucket, file.key, file.etag));
    // The first ingestion's delete was lost: the same bytes (same etag) are there again
    const again = await dropFile(d, 'again.jsonl', body);
    const broken = await dropFile(d, 'broken.csv', 'id,status,amount\n"unterminated');
    const old = await dropFile(d, 'v.jsonl', '{"id": 4, "status": "old", "amount": 4}\n');
    await dropFile(d, 'v.jsonl', '{"id": 4, "status": "new", "amount": 4}\n');

    // Act
    const dup = (await ingest(objectCreatedEvent(d.bucket, again.key, again.etag))) as IngestFileResult;
    const bad = (await ingest(objectCreatedEvent(d.bucket, broken.key, broken.etag))) as IngestFileResult;
    const staleDelete = await deleteInboxObject(table.store as S3Store, d.bucket, old.key, old.etag);

    // Assess
    expect(again.etag).toBe(file.etag);
    expect(dup).toMatchObject({ skipped: 'duplicate', deleted: true });
    expect(await exists(d, again.key)).toBe(false);
    expect(bad).toMatchObject({ rejected: 1 });
    expect(bad.deleted).toBeUndefined();
    expect(await exists(d, broken.key)).toBe(true);
    expect(staleDelete).toBe(false);
    expect(await exists(d, old.key)).toBe(true);
    expect(await rowsOf(d)).toEqual(['3:x']);
  });
});
