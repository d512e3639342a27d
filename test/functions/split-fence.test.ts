/**
 * Split readers in two Lambda containers (issue 10, repro 2 on AWS): SQS FIFO hands a bucket's
 * splits to a second container once their visibility timeout ran out, while the first
 * container's sink call still runs. The split fence keeps one delivery of the bucket at a time:
 * per-key order holds whatever the sink's duration, progress never moves back, and a first call
 * that outlived its time records nothing. Two containers = two module instances of the handler
 * (each with its own in-process state), driven by a real FIFO queue on moto with a 2 s visibility.
 */
import { ChangeMessageVisibilityBatchCommand, DeleteMessageBatchCommand } from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { describe, expect, it, vi } from 'vitest';
import { createStreamHandler as handlerOfContainerA } from '../../functions/shared/stream-handler.js';
import { discover, ensureConsumer } from '../../lib/stream/discovery.js';
import { readBucketProgress } from '../../lib/stream/progress.js';
import { readSplitFence, splitFenceKey } from '../../lib/stream/split-fence.js';
import { SqsSplitQueue } from '../../lib/stream/sqs-queue.js';
import type { Change } from '../../lib/stream/sinks.js';
import {
  captureMetrics,
  createOrders,
  createQueue,
  deploy,
  powertoolsEnv,
  receive,
  sqs,
  sqsEventOf,
  uniqueName,
  captureLogs,
} from './harness.js';

/** The functions' log lines: an ERROR line fails the test that logged it (harness.ts). */
captureLogs();

// The handlers' EMF metric lines stay off the test output.
captureMetrics();

powertoolsEnv();

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A Lambda context whose remaining time counts down from `ms`. */
function contextFor(ms: number): Context {
  const deadline = Date.now() + ms;
  return {
    awsRequestId: uniqueName('req'),
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
  } as unknown as Context;
}

type Handler = (e: SQSEvent, c?: Context) => Promise<SQSBatchResponse>;

/** What the sink received, in the order its calls ended: `<container>:<snapshot>:<status>`. */
interface Landed {
  container: string;
  snapshot: number;
  status: string;
}

async function setup(env: Record<string, string> = {}) {
  const d = await deploy();
  const table = await createOrders(d, { bucket: '1' });
  // The reader's split queue, with a visibility timeout shorter than the slow sink call.
  const splitUrl = await createQueue(`${uniqueName('splits')}.fifo`, {
    VisibilityTimeout: '2',
    DeduplicationScope: 'messageGroup',
    FifoThroughputLimit: 'perMessageGroupId',
  });
  await ensureConsumer(table, d.consumerId, { mode: 'earliest' });
  for (const status of ['a', 'b', 'c']) await table.write([{ id: 1n, status, amount: 1 }]);
  await discover(table, new SqsSplitQueue({ queueUrl: splitUrl }), d.consumerId);
  const landed: Landed[] = [];
  const sink = (container: string, slowFirstMs: number) => {
    let calls = 0;
    return async (changes: Change[]) => {
      if (calls++ === 0 && slowFirstMs > 0) await sleep(slowFirstMs);
      for (const c of changes) landed.push({ container, snapshot: c.snapshot, status: String(c.row.status) });
    };
  };
  return { d, table, splitUrl, landed, sink, env: { ...d.env('direct'), ...env } };
}

/** The handler module of another container: a fresh instance with its own in-process state. */
async function handlerOfContainerB(): Promise<typeof handlerOfContainerA> {
  vi.resetModules();
  return (await import('../../functions/shared/stream-handler.js')).createStreamHandler;
}

/** One receive of the queue handled by `handler`, as the event source mapping does it (failed records released at once). */
async function pollWith(url: string, handler: Handler, ctx: Context): Promise<SQSBatchResponse | undefined> {
  const messages = await receive(url, 10);
  if (messages.length === 0) return undefined;
  const response = await handler(sqsEventOf(url, messages), ctx);
  const failed = new Set(response.batchItemFailures.map((f) => f.itemIdentifier));
  const done = messages.filter((m) => !failed.has(m.MessageId!));
  const back = messages.filter((m) => failed.has(m.MessageId!));
  if (done.length)
    await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: url,
        Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })),
      }),
    );
  if (back.length)
    await sqs.send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: url,
        Entries: back.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle!, VisibilityTimeout: 0 })),
      }),
    );
  return response;
}

/** Container A takes the first receive (its sink's first call is slow); container B polls until everything is delivered. */
async function race(s: Awaited<ReturnType<typeof setup>>, slowMs: number, ctxMs: number) {
  const handlerA = handlerOfContainerA(s.sink('A', slowMs), s.env) as Handler;
  const handlerB = (await handlerOfContainerB())(s.sink('B', 0), s.env) as Handler;
  const first = await receive(s.splitUrl, 10);
  expect(first).toHaveLength(3);
  const a = handlerA(sqsEventOf(s.splitUrl, first), contextFor(ctxMs));
  let aDone = false;
  void a.then(() => (aDone = true));
  const progress: number[] = [];
  const fenceTokens: number[] = [];
  let polls = 0;
  // B polls as another container's mapping would; the messages come back when their visibility lapses.
  for (let i = 0; i < 200; i++) {
    const p = await readBucketProgress(s.table.store, s.table.path, s.d.consumerId, '', 0);
    if (p) progress.push(p.snapshot);
    if (p) fenceTokens.push(p.splitFence ?? -1);
    if (aDone && p?.snapshot === 3) break;
    if ((await pollWith(s.splitUrl, handlerB, contextFor(ctxMs))) !== undefined) polls++;
    else await sleep(250);
  }
  return { responseA: await a, progress, fenceTokens, polls };
}

describe('split readers in two containers', () => {
  it('a redelivery waits for the first delivery still in its sink: no split lands out of order, progress never moves back', {
    timeout: 180_000,
  }, async () => {
    // Prepare: the first sink call takes 5 s, the visibility 2 s; the invocation has 60 s
    const s = await setup();
    // Act
    const { progress, fenceTokens, polls } = await race(s, 5000, 60_000);
    // Assess: B received the redelivered splits while A was still in its sink...
    expect(polls).toBeGreaterThan(0);
    // ...and every split landed once, in snapshot order (per-key order), none of them from B before A's
    expect(s.landed.map((l) => `${l.snapshot}:${l.status}`)).toEqual(['1:a', '2:b', '3:c']);
    expect(progress).toEqual([...progress].sort((x, y) => x - y));
    expect(progress.at(-1)).toBe(3);
    // Every progress write carries the fence token of its hold, never a smaller one after a larger.
    expect(fenceTokens.filter((t) => t >= 0)).toEqual([...fenceTokens.filter((t) => t >= 0)].sort((x, y) => x - y));
    const fence = await readSplitFence(s.table.store, splitFenceKey(s.table.path, s.d.consumerId, '', 0));
    expect(fence?.fence.expiresAt).toBe(0); // released
  });

  it('bounds the sink call by the visibility: a first call that outlives it records nothing, and lands before the redelivery', {
    timeout: 180_000,
  }, async () => {
    // Prepare: the reader knows the queue's visibility (2 s); its first sink call takes 5 s
    const s = await setup({ VARVE_SPLIT_VISIBILITY_S: '2' });
    // Act
    const { responseA, progress } = await race(s, 5000, 60_000);
    // Assess: A's first split failed at its deadline (with the rest of its group)...
    expect(responseA.batchItemFailures).toHaveLength(3);
    // ...its call, still running, ended before B delivered anything: A's late split 1, then B's 1, 2, 3
    // (On a busy machine A may run out of time before its sink is called at all, and B may deliver
    // a split twice when its own call runs out of time: whole splits, in order, either way.)
    const order = s.landed.map((l) => `${l.container}${l.snapshot}`);
    expect(order.filter((o) => o.startsWith('A'))).toEqual(order[0] === 'A1' ? ['A1'] : []);
    expect(new Set(order.filter((o) => o.startsWith('B')))).toEqual(new Set(['B1', 'B2', 'B3']));
    expect(s.landed.map((l) => l.snapshot)).toEqual(s.landed.map((l) => l.snapshot).sort((x, y) => x - y));
    expect(progress).toEqual([...progress].sort((x, y) => x - y));
    expect(progress.at(-1)).toBe(3);
  });
});
