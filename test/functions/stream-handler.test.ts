/**
 * The Lambda handler factory: SQS FIFO events of split messages, processed in order, with the
 * partial batch response of SQS FIFO (a failed record and every later record of its group).
 */
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { InvalidArgumentError } from '../../lib/errors.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { openStore } from '../../lib/store/open-store.js';
import { discover, ensureConsumer } from '../../lib/stream/discovery.js';
import { log } from '../../functions/shared/observability.js';
import { createStreamHandler } from '../../functions/shared/stream-handler.js';
import { MemoryQueue } from '../../lib/stream/memory-queue.js';
import type { QueueMessage } from '../../lib/stream/split-queue.js';
import { put } from '../stream/fixtures.js';
import { captureLogs } from './harness.js';

/** The functions' log lines: an ERROR line fails the test that logged it (harness.ts). */
captureLogs();

function sqsEvent(messages: QueueMessage[]): SQSEvent {
  const records = messages.map(
    (m): SQSRecord => ({
      messageId: m.messageId,
      receiptHandle: m.receiptHandle,
      body: m.body,
      attributes: {
        ApproximateReceiveCount: String(m.receiveCount),
        SentTimestamp: String(m.sentAt),
        SenderId: 'test',
        ApproximateFirstReceiveTimestamp: String(m.sentAt),
        MessageGroupId: m.groupId,
        MessageDeduplicationId: m.messageId,
      },
      messageAttributes: {},
      md5OfBody: '',
      eventSource: 'aws:sqs',
      eventSourceARN: 'arn:aws:sqs:eu-west-1:000000000000:splits.fifo',
      awsRegion: 'eu-west-1',
    }),
  );
  return { Records: records };
}

async function setup(name: string) {
  const warehouse = `memory://handler-${name}`;
  const table = await new FolderCatalog(openStore(warehouse)).createTable('db.t', {
    fields: parseSchemaText('k BIGINT, v STRING'),
    primaryKeys: ['k'],
    options: { bucket: '2' },
  });
  await ensureConsumer(table, 'audit', { mode: 'earliest' });
  const env = { VARVE_WAREHOUSE: warehouse, VARVE_TABLE: 'db.t', VARVE_CONSUMER_ID: 'audit' };
  return { table, env };
}

describe('createStreamHandler', () => {
  afterEach(() => vi.restoreAllMocks());

  it("hands each split's changes to the function in order and reports no failure", async () => {
    // Prepare
    const { table, env } = await setup('ok');
    await put(table, [
      [1, 'a'],
      [2, 'b'],
      [3, 'c'],
      [4, 'd'],
    ]);
    await put(table, [[1, 'A']]);
    const queue = new MemoryQueue();
    await discover(table, queue, 'audit');
    const seen: string[] = [];
    const handler = createStreamHandler(
      (changes) => void seen.push(...changes.map((c) => `${c.snapshot} ${c.kind} ${c.row.k}=${c.row.v}`)),
      env,
    );
    // Act
    const response = await handler(sqsEvent(await queue.receive({ maxMessages: 10 })));
    // Assess
    expect(response).toEqual({ batchItemFailures: [] });
    expect(seen.sort()).toEqual(['1 +I 1=a', '1 +I 2=b', '1 +I 3=c', '1 +I 4=d', '2 +I 1=A']);
  });

  it('fails a record and every later record of its group, and lets other groups through', async () => {
    // Prepare: two snapshots touching both buckets
    const { table, env } = await setup('partial');
    const keys = [1, 2, 3, 4, 5, 6, 7, 8];
    await put(
      table,
      keys.map((k) => [k, 'a'] as [number, string]),
    );
    await put(
      table,
      keys.map((k) => [k, 'b'] as [number, string]),
    );
    const queue = new MemoryQueue();
    await discover(table, queue, 'audit');
    const messages = await queue.receive({ maxMessages: 10 });
    const failing = messages[0].groupId;
    const handler = createStreamHandler((changes) => {
      if (changes.some((c) => c.bucket === Number(failing.split('/').at(-1)))) throw new Error('sink down');
    }, env);
    // The records come from a MemoryQueue, not from the SQS queue their event names: setting the
    // failed records' retry backoff (retry-backoff.ts) must fail, warn, and change nothing else.
    const warn = vi.spyOn(log(), 'warn').mockImplementation(() => {});
    // Act
    const response = await handler(sqsEvent(messages));
    // Assess
    expect(new Set(messages.map((m) => m.groupId)).size).toBe(2);
    const failed = messages.filter((m) => m.groupId === failing).map((m) => m.messageId);
    expect(response.batchItemFailures.map((f) => f.itemIdentifier)).toEqual(failed);
    // One WARN per failed split saying why: the head its own error, the others behind it.
    const why = warn.mock.calls
      .filter((c) => String(c[0]).startsWith('split of snapshot'))
      .map(
        (c) =>
          c[1] as {
            messageId: string;
            reason: string;
            behind?: string;
            error?: string;
            bucket?: number;
            snapshot?: number;
          },
      );
    expect(why.map((w) => w.messageId)).toEqual(failed);
    expect(failed.length).toBeGreaterThan(1);
    expect(why[0]).toMatchObject({
      reason: 'error',
      error: 'Error: sink down',
      bucket: Number(failing.split('/').at(-1)),
      snapshot: 1,
    });
    expect(
      String(warn.mock.calls.find((c) => (c[1] as { messageId?: string })?.messageId === failed[1])![0]),
    ).toContain(`behind failed head ${failed[0]}`);
    for (const w of why.slice(1)) expect(w).toMatchObject({ reason: 'behind', behind: failed[0] });
    expect(warn.mock.calls.filter((c) => !String(c[0]).startsWith('split of snapshot'))).toEqual([
      [
        'the failed messages keep the queue visibility timeout (their backoff could not be set)',
        expect.objectContaining({ messages: failed.length }),
      ],
    ]);
  });

  it('says which environment variables are missing', async () => {
    const handler = createStreamHandler(() => {}, { VARVE_TABLE: 'db.t' });
    await expect(handler({ Records: [] })).rejects.toBeInstanceOf(InvalidArgumentError);
  });
});
