/**
 * SqsSplitQueue against moto's SQS FIFO: per-group order across batch calls, one receiver per
 * group, deduplication, release with ChangeMessageVisibility, receive counts, acknowledgement
 * (stale receipts ignored), depth with the dead-letter queue, and lib/stream's discovery and
 * reader running over it.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../lib/errors.js';
import { discover } from '../../lib/stream/discovery.js';
import { SplitReader } from '../../lib/stream/reader.js';
import { LogLines } from '../helpers/log-lines.js';
import { SqsSplitQueue } from '../../lib/stream/sqs-queue.js';
import type { SendRequest } from '../../lib/stream/split-queue.js';
import { awsAvailable, freshBucket } from '../helpers/aws.js';
import { createQueue, queueArn } from '../functions/harness.js';
import { makeTable, put, RecordingSink, replay } from './fixtures.js';
import { S3Store } from '../../lib/store/s3-store.js';

/** A fresh FIFO queue (optionally with a FIFO dead-letter queue after `maxReceiveCount` receives). */
async function freshQueue(maxReceiveCount?: number): Promise<SqsSplitQueue> {
  const name = `splits-${randomUUID().slice(0, 8)}`;
  let attrs: Record<string, string> = {};
  if (maxReceiveCount !== undefined) {
    const dlq = await createQueue(`${name}-dlq.fifo`);
    attrs = { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: await queueArn(dlq), maxReceiveCount }) };
  }
  return new SqsSplitQueue({ queueUrl: await createQueue(`${name}.fifo`, attrs) });
}

function requests(group: string, n: number, prefix = group): SendRequest[] {
  return Array.from({ length: n }, (_, i) => ({ groupId: group, dedupId: `${prefix}-${i}`, body: `${group}:${i}` }));
}

describe.skipIf(!awsAvailable())('SqsSplitQueue on moto', () => {
  it('keeps each group in send order across batch calls, one receiver per group at a time', async () => {
    // Prepare: 25 messages in two groups: three SendMessageBatch calls
    const queue = await freshQueue();
    const sent = await queue.send([...requests('a', 13), ...requests('b', 12)]);

    // Act: receive everything, acknowledging as we go
    const order: string[] = [];
    let inFlightTwiceInOneGroup = false;
    for (let i = 0; i < 20 && order.length < 25; i++) {
      const got = await queue.receive({ maxMessages: 10 });
      // While a group has messages in flight, a second receive gets none of that group.
      const again = await queue.receive({ maxMessages: 10 });
      if (again.some((m) => got.some((g) => g.groupId === m.groupId))) inFlightTwiceInOneGroup = true;
      order.push(...got.map((m) => m.body), ...again.map((m) => m.body));
      await queue.ack([...got, ...again].map((m) => m.receiptHandle));
    }

    // Assess
    expect(sent).toHaveLength(25);
    expect(sent.every((s) => s.messageId !== '' && !s.duplicate)).toBe(true);
    expect(order.filter((b) => b.startsWith('a:'))).toEqual(requests('a', 13).map((r) => r.body));
    expect(order.filter((b) => b.startsWith('b:'))).toEqual(requests('b', 12).map((r) => r.body));
    expect(inFlightTwiceInOneGroup).toBe(false);
    expect(await queue.depth()).toEqual({ visible: 0, inFlight: 0, deadLettered: 0 });
  });

  it('drops a re-send with a deduplication id still in the queue', async () => {
    // Prepare
    const queue = await freshQueue();
    await queue.send(requests('g', 2));

    // Act
    await queue.send(requests('g', 2));

    // Assess
    const got = await queue.receive({ maxMessages: 10 });
    expect(got.map((m) => m.body)).toEqual(['g:0', 'g:1']);
  });

  it('releases a message at once, first in its group, with a higher receive count; a stale receipt is ignored', async () => {
    // Prepare
    const queue = await freshQueue();
    await queue.send(requests('g', 3));
    const [first, second, third] = await queue.receive({ maxMessages: 10 });
    await queue.ack([first.receiptHandle]);

    // Act: release what follows the "failed" second message, in order
    await queue.release(second.receiptHandle);
    await queue.release(third.receiptHandle);
    const again = await queue.receive({ maxMessages: 10 });

    // Assess
    expect(again.map((m) => [m.body, m.receiveCount])).toEqual([
      ['g:1', 2],
      ['g:2', 2],
    ]);
    expect(again[0].receiptHandle).not.toBe(second.receiptHandle);
    expect(again[0].sentAt).toBeGreaterThan(0);
    await queue.ack([first.receiptHandle]); // deleted already: nothing happens
    await queue.release('not-a-receipt-handle');
    await queue.ack(again.map((m) => m.receiptHandle));
    expect(await queue.depth()).toMatchObject({ visible: 0, inFlight: 0 });
  });

  it('counts visible, in-flight and dead-lettered messages', async () => {
    // Prepare: a dead-letter queue after one receive
    const queue = await freshQueue(1);
    await queue.send([...requests('x', 1), ...requests('y', 2)]);
    const [x] = await queue.receive({ maxMessages: 1 });

    // Act
    const during = await queue.depth();
    await queue.release(x.receiptHandle);
    await queue.receive({ maxMessages: 10 }); // x has used its one receive: SQS moves it to the DLQ
    const after = await queue.depth();

    // Assess
    expect(during).toEqual({ visible: 2, inFlight: 1, deadLettered: 0 });
    expect(after.deadLettered).toBe(1);
  });

  it('refuses a queue URL that is not a FIFO queue', () => {
    expect(() => new SqsSplitQueue({ queueUrl: 'http://127.0.0.1:1/123456789012/splits' })).toThrow(
      InvalidArgumentError,
    );
  });

  it('carries a table stream from discovery to a reader, every key in order', async () => {
    // Prepare: a table on S3 with two buckets and a few commits
    const store = new S3Store({ bucket: await freshBucket('varve-sqs'), prefix: 'wh' });
    const table = await makeTable({ bucket: '2' }, { store });
    await put(table, [
      [1, 'a'],
      [2, 'b'],
      [3, 'c'],
    ]);
    const queue = await freshQueue();
    const sink = new RecordingSink();
    const log = new LogLines();
    const reader = new SplitReader({ table, consumerId: 'c', queue, sink, log: log.add });
    await discover(table, queue, 'c', { mode: 'earliest' });
    await put(table, [
      [1, 'A'],
      [4, 'd'],
    ]);
    await put(table, [[2, null]], { delete: true });

    // Act
    await discover(table, queue, 'c');
    for (let i = 0; i < 10; i++) if ((await reader.poll()).received === 0) break;

    // Assess
    expect(replay(sink.changes)).toEqual(
      new Map([
        ['/1', 'A'],
        ['/3', 'c'],
        ['/4', 'd'],
      ]),
    );
    expect((await discover(table, queue, 'c')).nextSnapshot).toBe(4);
    log.expectOnly();
  });
});
