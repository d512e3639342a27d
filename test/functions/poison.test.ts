/**
 * Issue 11, failure 2 on moto: a poison message never takes good ones to the dead-letter queue,
 * orphan cleanup never deletes the files of a batch still waiting in a queue, and a replayed
 * commit whose files are gone is refused before it commits.
 */
import { randomUUID } from 'node:crypto';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse } from 'aws-lambda';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { createCommitHandler } from '../../functions/commit.js';
import { createIngestHandler } from '../../functions/ingest.js';
import type { RejectMessage } from '../../lib/aws/rejects.js';
import { removeOrphanFiles } from '../../lib/maintenance/remove-orphans.js';
import { redriveBarrierBody } from '../../lib/table/commit-message.js';
import { listAll } from '../../lib/store/object-store.js';
import { listPending } from '../../lib/table/pending-commits.js';
import { awsAvailable } from '../helpers/aws.js';
import {
  captureMetrics,
  createOrders,
  createQueue,
  deploy,
  drain,
  powertoolsEnv,
  queueArn,
  receive,
  reopen,
  sqs,
  sqsEventOf,
  takeAll,
  uniqueName,
  type Deployment,
  captureLogs,
} from './harness.js';

/** The functions' log lines: an ERROR line no test expects fails it (harness.ts). */
const logs = captureLogs();

const DAY = 86_400_000;

/** One writer's batch of three records, ingested in queue mode (its batch goes to the commit queue). */
async function writeBatch(d: Deployment, env: Record<string, string>, writer: number): Promise<void> {
  const records = [0, 1, 2].map((i) => ({ id: writer * 10 + i, status: `w${writer}`, amount: i }));
  const id = `writer-${writer}`;
  const r = (await createIngestHandler(env)(
    sqsEventOf(d.ingestUrl, [{ MessageId: id, ReceiptHandle: id, Body: JSON.stringify(records), Attributes: {} }]),
  )) as SQSBatchResponse;
  expect(r.batchItemFailures).toEqual([]);
}

async function rowCount(d: Deployment): Promise<number> {
  return (await (await reopen(d)).read()).numRows;
}

describe.skipIf(!awsAvailable())('poison messages and queued files on moto', () => {
  captureMetrics();
  beforeAll(() => powertoolsEnv());

  it('sends a poison commit message to the rejects queue and commits the good batches behind it, leaving the DLQ empty', async () => {
    // Prepare: a commit queue with a DLQ after 2 receives, as deployed (maxReceiveCount), poison at its head
    const d = await deploy();
    await createOrders(d);
    const dlqUrl = await createQueue(`${uniqueName('commit-dlq')}.fifo`);
    const commitUrl = await createQueue(`${uniqueName('commit')}.fifo`, {
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: await queueArn(dlqUrl), maxReceiveCount: '2' }),
    });
    const env = d.env('queue', { VARVE_COMMIT_QUEUE_URL: commitUrl });
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: commitUrl,
        MessageBody: '{"not": "a commit"}',
        MessageGroupId: 'shop.orders',
        MessageDeduplicationId: randomUUID(),
      }),
    );
    await writeBatch(d, env, 1);
    await writeBatch(d, env, 2);

    // Act
    const polls = await drain(commitUrl, createCommitHandler(env), 10, 6);

    // Assess
    expect(polls.flatMap((p) => p.response.batchItemFailures)).toEqual([]);
    expect(await receive(dlqUrl, 10)).toEqual([]);
    expect(await rowCount(d)).toBe(6);
    const rejects = (await takeAll(d.rejectsUrl)).map((b) => JSON.parse(b) as RejectMessage);
    expect(rejects).toHaveLength(1);
    expect(rejects[0]).toMatchObject({ table: 'shop.orders', line: 0, record: '{"not": "a commit"}' });
    expect(rejects[0].reason).toMatch(/a commit-queue message is not one varve sent \(v is missing\)/);
    expect(logs.matching(/^ERROR /)).toHaveLength(1);
    logs.expectOnly(
      /^ERROR a commit-queue message can never be committed; it goes to the rejects queue: a commit-queue message is not one varve sent \(v is missing\)/,
    );
  });

  it('drops a redrive barrier message without a reject and commits the batches behind it', async () => {
    // Prepare: a barrier `varve redrive` sent to hold the group, received by the commit function first
    const d = await deploy();
    await createOrders(d);
    const commitUrl = await createQueue(`${uniqueName('commit')}.fifo`);
    const env = d.env('queue', { VARVE_COMMIT_QUEUE_URL: commitUrl });
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: commitUrl,
        MessageBody: redriveBarrierBody(`varve-redrive-barrier-${randomUUID()}-0`),
        MessageGroupId: 'shop.orders',
        MessageDeduplicationId: randomUUID(),
      }),
    );
    await writeBatch(d, env, 1);

    // Act
    const polls = await drain(commitUrl, createCommitHandler(env), 10, 6);

    // Assess: the barrier is gone (deleted as processed), nothing rejected, the batch committed
    expect(polls.flatMap((p) => p.response.batchItemFailures)).toEqual([]);
    expect(await takeAll(d.rejectsUrl)).toEqual([]);
    expect(await rowCount(d)).toBe(3);
    expect(await receive(commitUrl, 10)).toEqual([]);
  });

  it('keeps the files of a batch waiting in the commit queue from orphan cleanup until its registration outlives the DLQ', async () => {
    // Prepare: a batch on the commit queue (its files referenced by no snapshot yet)
    const d = await deploy();
    await createOrders(d);
    const env = d.env('queue');
    await writeBatch(d, env, 1);
    const table = await reopen(d);
    const dataFiles = async () =>
      (await listAll(table.store, `${table.path}/`)).filter((o) => /\/bucket-\d+\/data-/.test(o.key)).length;
    const written = await dataFiles();
    expect(written).toBeGreaterThan(0);

    // Act: orphan cleanup with no safety window at all, as if the message had waited in the DLQ for days
    const early = await removeOrphanFiles(table, { olderThanMs: 0, now: Date.now() + 13 * DAY });

    // Assess: nothing of the batch deleted; it commits and reads whole; its registration is released
    expect(early.orphans.filter((o) => o.kind === 'data')).toEqual([]);
    expect(await dataFiles()).toBe(written);
    await drain(d.commitUrl, createCommitHandler(env));
    expect(await rowCount(d)).toBe(3);
    expect(await listPending(table)).toEqual([]);
  });

  it('deletes an expired registration with its files, and then refuses the replayed commit before it commits', async () => {
    // Prepare: a batch on the commit queue whose registration is older than orphan-files.pending-time-retained (15 d)
    const d = await deploy();
    await createOrders(d);
    const env = d.env('queue');
    await writeBatch(d, env, 1);
    const table = await reopen(d);
    const late = await removeOrphanFiles(table, { olderThanMs: 0, now: Date.now() + 16 * DAY });
    expect(late.orphans.map((o) => o.kind).sort()).toContain('pending');
    expect(late.orphans.some((o) => o.kind === 'data')).toBe(true);
    await writeBatch(d, env, 2); // a good batch behind the replayed one

    // Act: the replayed commit message reaches the commit function, 16 days after it was written
    // (the commit checks the files of a batch that old: group-commit.ts filesMayBeGone)
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 16 * DAY });
    const polls = await drain(d.commitUrl, createCommitHandler(env)).finally(() => vi.useRealTimers());

    // Assess: refused with a clear reason, the good batch committed, and the table reads
    expect(polls.flatMap((p) => p.response.batchItemFailures)).toEqual([]);
    const after = await reopen(d);
    expect(await after.snapshots.latestId()).toBe(1);
    expect((await after.read()).toArray().map((r) => String(r.status))).toEqual(['w2', 'w2', 'w2']);
    const rejects = (await takeAll(d.rejectsUrl)).map((b) => JSON.parse(b) as RejectMessage);
    expect(rejects).toHaveLength(1);
    expect(rejects[0].reason).toMatch(/no longer exist.*refused so that no snapshot references missing files/);
    expect(logs.matching(/^ERROR /)).toHaveLength(1);
    logs.expectOnly(
      /^ERROR a commit-queue message can never be committed; it goes to the rejects queue: the batch \S+ lists \d+ file\(s\) that no longer exist/,
    );
  });

  it('isolates one bad writer batch of a commit invocation: the good batches around it commit, the bad one alone goes to the rejects queue', async () => {
    // Prepare: three writers' batches taken from the commit queue as one invocation batch; the
    // middle one (its files all present) carries metadata no commit accepts (totalBuckets 0), so
    // the run's one snapshot fails and the group commit must fall back to batch by batch.
    const d = await deploy();
    await createOrders(d);
    const dlqUrl = await createQueue(`${uniqueName('commit-dlq')}.fifo`);
    const commitUrl = await createQueue(`${uniqueName('commit')}.fifo`, {
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: await queueArn(dlqUrl), maxReceiveCount: '2' }),
    });
    const env = d.env('queue', { VARVE_COMMIT_QUEUE_URL: commitUrl });
    for (const w of [1, 2, 3]) await writeBatch(d, env, w);
    const messages = await receive(commitUrl, 10);
    expect(messages).toHaveLength(3);
    const bad = JSON.parse(messages[1].Body!) as { batch: { newFiles: { totalBuckets: number }[] } };
    expect(bad.batch.newFiles.length).toBeGreaterThan(0);
    for (const f of bad.batch.newFiles) f.totalBuckets = 0;
    messages[1].Body = JSON.stringify(bad);

    // Act: one invocation with the three batches, as the event source mapping delivers them
    const response = (await createCommitHandler(env)(sqsEventOf(commitUrl, messages))) as SQSBatchResponse;

    // Assess: nothing retried (so nothing can reach the DLQ), the good writers' rows read, only
    // the bad batch rejected, naming its message and why
    expect(response.batchItemFailures).toEqual([]);
    const rows = (await (await reopen(d)).read())
      .toArray()
      .map((r) => String(r.status))
      .sort();
    expect(rows).toEqual(['w1', 'w1', 'w1', 'w3', 'w3', 'w3']);
    const rejects = (await takeAll(d.rejectsUrl)).map((b) => JSON.parse(b) as RejectMessage);
    expect(rejects).toHaveLength(1);
    expect(rejects[0].source).toEqual({ messageId: messages[1].MessageId });
    expect(rejects[0].reason).toMatch(/totalBuckets 0 must be an integer ≥ 1/);
    expect(await receive(dlqUrl, 10)).toEqual([]);
    expect(logs.matching(/^ERROR /)).toHaveLength(1);
    logs.expectOnly(
      /^ERROR a commit-queue message can never be committed; it goes to the rejects queue: invalid commit request: .*totalBuckets 0 must be an integer ≥ 1/,
    );
  });
});
