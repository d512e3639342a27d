/**
 * The scheduled expiry function on moto: a lagging consumer holds expiry back until it catches up;
 * a consumer idle past `consumer.expiration-time` is removed and stops holding; orphan files older
 * than the window go.
 */
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterFloor } from '../helpers/expiry-clock.js';
import type { SQSBatchResponse } from 'aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import { createDiscoverHandler } from '../../functions/discover.js';
import { createExpireHandler } from '../../functions/expire.js';
import { createIngestHandler } from '../../functions/ingest.js';
import { readConsumer } from '../../lib/snapshot/consumer.js';
import { createStreamHandler } from '../../functions/shared/stream-handler.js';
import type { Change } from '../../lib/stream/sinks.js';
import { awsAvailable } from '../helpers/aws.js';
import {
  captureMetrics,
  createOrders,
  deploy,
  drain,
  powertoolsEnv,
  reopen,
  scheduledEvent,
  sqsEventOf,
  type Deployment,
  captureLogs,
} from './harness.js';

/** The functions' log lines: an ERROR line fails the test that logged it (harness.ts). */
captureLogs();

/** Commits `ids` rounds in direct mode: round r upserts key r. */
async function commitRounds(d: Deployment, rounds: number[]): Promise<void> {
  const ingest = createIngestHandler(d.env('direct'));
  for (const r of rounds) {
    const event = sqsEventOf(d.ingestUrl, [
      {
        MessageId: `m-${r}`,
        ReceiptHandle: `r-${r}`,
        Body: JSON.stringify({ id: r, status: `s${r}`, amount: r }),
        Attributes: {},
      },
    ]);
    expect(((await ingest(event)) as SQSBatchResponse).batchItemFailures).toEqual([]);
  }
}

/** At most two snapshots, however young (the time window alone would keep them all for an hour). */
const RETAIN_TWO = { 'snapshot.num-retained.min': '1', 'snapshot.num-retained.max': '2' };

describe.skipIf(!awsAvailable())('the expiry function on moto', () => {
  captureMetrics();
  beforeAll(() => powertoolsEnv());

  it('keeps every snapshot a lagging consumer still needs, and expires them once it has caught up', async () => {
    // Prepare: the consumer starts at snapshot 1 and reads nothing while four more commits land
    const d = await deploy();
    await createOrders(d, RETAIN_TWO);
    const env = d.env('direct');
    const discover = createDiscoverHandler(env);
    const expire = createExpireHandler(env);
    await commitRounds(d, [1]);
    await discover(scheduledEvent());
    await commitRounds(d, [2, 3, 4, 5]);

    // Act 1: expiry while the consumer lags
    const held = await expire(scheduledEvent());

    // Assess 1
    expect(held).toMatchObject({ expiredSnapshots: [], earliest: 1, heldByConsumer: { id: 'audit', nextSnapshot: 1 } });

    // Act 2: the consumer catches up (discovery plans, readers deliver, discovery folds), then expiry
    const seen: Change[] = [];
    await discover(scheduledEvent());
    await drain(
      d.splitUrl,
      createStreamHandler(async (changes) => void seen.push(...changes), env),
    );
    await discover(scheduledEvent());
    const after = await afterFloor(() => expire(scheduledEvent()));

    // Assess 2: everything was delivered before anything expired; two snapshots are left
    expect(seen.map((c) => Number(c.row.id)).sort()).toEqual([1, 2, 3, 4, 5]);
    expect(after).toMatchObject({ expiredSnapshots: [1, 2, 3], earliest: 4, expiredConsumers: [] });
    const table = await reopen(d);
    expect((await readConsumer(table.store, table.path, 'audit'))?.nextSnapshot).toBe(6);
    expect((await table.read()).numRows).toBe(5);
  });

  it('removes a consumer idle past consumer.expiration-time, then expires what it held; the daily scan deletes old orphan files no journal names', async () => {
    // Prepare
    const d = await deploy();
    await createOrders(d, { ...RETAIN_TWO, 'consumer.expiration-time': '1 ms', 'orphan-files.older-than': '1 ms' });
    const env = d.env('direct');
    await commitRounds(d, [1]);
    await createDiscoverHandler(env)(scheduledEvent());
    await commitRounds(d, [2, 3, 4]);
    const orphanKey = 'wh/shop.db/orders/bucket-0/data-orphan.parquet';
    await new S3Client({ forcePathStyle: true }).send(
      new PutObjectCommand({ Bucket: d.bucket, Key: orphanKey, Body: 'left by a crashed writer' }),
    );
    await new Promise((r) => setTimeout(r, 20));

    // Act: the frequent run (journal only), then the daily safety-net run
    const result = await afterFloor(() => createExpireHandler(env)(scheduledEvent()));
    const table = await reopen(d);
    const afterJournal = await table.store.head('shop.db/orders/bucket-0/data-orphan.parquet');
    const scan = await createExpireHandler(env)({ orphanScan: true });

    // Assess
    expect(result).toMatchObject({
      expiredConsumers: ['audit'],
      expiredSnapshots: [1, 2],
      earliest: 3,
      orphanMode: 'journal',
      orphanKeysListed: 0,
    });
    expect(afterJournal).toBeDefined();
    expect(scan).toMatchObject({ orphanMode: 'scan', orphanScanComplete: true });
    expect(scan.orphansDeleted).toBeGreaterThanOrEqual(1);
    expect(await table.store.head('shop.db/orders/bucket-0/data-orphan.parquet')).toBeUndefined();
    expect(await readConsumer(table.store, table.path, 'audit')).toBeUndefined();
    expect((await table.read()).numRows).toBe(4);
  });
});
