/**
 * The e2e emulator's service faults (e2e/emulator/s3-faults.ts, the throttle handling of
 * e2e/emulator/esm.ts), on moto: the S3 answers are injected into a real S3Store's client as the
 * containers inject them, and a throttled batch is retried as AWS documents for SQS event sources
 * (same batch, same order, within the visibility timeout; then back to the queue).
 */
import { randomUUID } from 'node:crypto';
import { GetQueueAttributesCommand, SendMessageBatchCommand, SQSClient, type Message } from '@aws-sdk/client-sqs';
import { afterEach, describe, expect, it } from 'vitest';
import { EmulatedMapping, type MappingSpec } from '../../e2e/emulator/esm.js';
import type { EmulatedFunction, InvokeResult } from '../../e2e/emulator/lambda.js';
import { installS3Faults, seededDraws, setS3Faults, type S3Injected } from '../../e2e/emulator/s3-faults.js';
import { receiveMessages } from '../../e2e/emulator/sqs-event.js';
import { fromUtf8, utf8 } from '../../lib/store/object-store.js';
import { S3Store } from '../../lib/store/s3-store.js';
import { awsAvailable, freshBucket } from '../helpers/aws.js';
import { createQueue, queueArn } from '../functions/harness.js';

const THROTTLE: InvokeResult = {
  ok: false,
  kind: 'throttle',
  error: { name: 'TooManyRequestsException', message: 'Rate Exceeded.' },
};

/** A function whose invocations answer `results` in turn (the last one repeated), recording each event's message ids. */
function scriptedFunction(results: InvokeResult[]) {
  const seen: string[][] = [];
  const fn = {
    spec: { logicalId: 'Scripted' },
    invoke: async (event: { Records: { messageId: string }[] }) => {
      seen.push(event.Records.map((r) => r.messageId));
      return results[Math.min(seen.length - 1, results.length - 1)];
    },
  };
  return { fn: fn as unknown as EmulatedFunction, seen };
}

async function queueWith(n: number, visibilityTimeout: number): Promise<{ url: string; spec: MappingSpec }> {
  const url = await createQueue(`faults-${randomUUID().slice(0, 8)}`, { VisibilityTimeout: String(visibilityTimeout) });
  const sqs = new SQSClient({});
  await sqs.send(
    new SendMessageBatchCommand({
      QueueUrl: url,
      Entries: Array.from({ length: n }, (_, i) => ({ Id: String(i), MessageBody: `m${i}` })),
    }),
  );
  const spec: MappingSpec = {
    logicalId: 'ScriptedSqsEventSource',
    queueUrl: url,
    queueArn: await queueArn(url),
    fifo: false,
    batchSize: 10,
    windowSeconds: 0,
    reportBatchItemFailures: true,
    visibilityTimeout,
  };
  return { url, spec };
}

async function depth(url: string): Promise<{ visible: number; inFlight: number }> {
  const a = await new SQSClient({}).send(
    new GetQueueAttributesCommand({
      QueueUrl: url,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return {
    visible: Number(a.Attributes!.ApproximateNumberOfMessages),
    inFlight: Number(a.Attributes!.ApproximateNumberOfMessagesNotVisible),
  };
}

/** Runs one batch through the mapping (its pollers' step after a receive). */
function processBatch(mapping: EmulatedMapping, messages: Message[]): Promise<void> {
  return (mapping as unknown as { process(m: Message[]): Promise<void> }).process(messages);
}

describe('seeded fault draws', () => {
  it('repeat for a seed and differ between seeds', () => {
    const a = seededDraws('7');
    const b = seededDraws('7');
    const c = seededDraws('8');
    const xs = Array.from({ length: 20 }, () => a());
    expect(Array.from({ length: 20 }, () => b())).toEqual(xs);
    expect(Array.from({ length: 20 }, () => c())).not.toEqual(xs);
    for (const x of xs) expect(x >= 0 && x < 1).toBe(true);
  });
});

describe.skipIf(!awsAvailable())('e2e emulator service faults (moto)', () => {
  afterEach(() => setS3Faults(undefined));

  it("injects S3's 409 on conditional requests only and 503 SlowDown on any, counting each; the store answers as on AWS", async () => {
    // Prepare: the containers' middleware, installed in this process, reporting what it injected.
    const injected: { code: S3Injected; command: string }[] = [];
    installS3Faults(import.meta.url, (code, command) => injected.push({ code, command }));
    const store = new S3Store({ bucket: await freshBucket(), prefix: 'faults', conflictBackoffMs: 1 });
    setS3Faults({ conflictRate: 1, slowDownRate: 0, seed: 1 });
    // Act / Assess: an unconditional PUT is never a conflict (its first request gets the seed's
    // first 503, which the SDK retries); a create-only PUT always is, until its retries end.
    await store.put('plain', utf8('a'));
    expect(injected.shift()).toEqual({ code: 'SlowDown', command: 'PutObject' });
    await expect(store.putIfAbsent('guarded', utf8('b'))).rejects.toMatchObject({
      name: 'ConditionalRequestConflictError',
      retryable: true,
    });
    expect(injected.length).toBeGreaterThanOrEqual(2);
    expect(injected.every((i) => i.code === 'ConditionalRequestConflict' && i.command === 'PutObject')).toBe(true);
    // 503 on every request: the SDK's throttling retries, then a retryable StoreUnavailableError.
    injected.length = 0;
    setS3Faults({ conflictRate: 0, slowDownRate: 1, seed: 2 });
    await expect(store.get('plain')).rejects.toMatchObject({ name: 'StoreUnavailableError', retryable: true });
    expect(injected.length).toBeGreaterThanOrEqual(2);
    expect(injected.every((i) => i.code === 'SlowDown' && i.command === 'GetObject')).toBe(true);
    // Faults off: everything reaches moto again, nothing was applied by an injected answer.
    setS3Faults(undefined);
    expect(fromUtf8((await store.get('plain')).body)).toBe('a');
    expect(await store.head('guarded')).toBeUndefined();
  });

  it('retries a throttled batch as it was (same messages, same order) within the visibility timeout, then deletes it', async () => {
    const { url, spec } = await queueWith(3, 30);
    const { fn, seen } = scriptedFunction([THROTTLE, THROTTLE, { ok: true, value: { batchItemFailures: [] } }]);
    const mapping = new EmulatedMapping(spec, fn, 1);
    const batch = await receiveMessages(new SQSClient({}), url, 10);
    expect(batch).toHaveLength(3);
    // Act
    await processBatch(mapping, batch);
    // Assess: three invocations of the one batch, two throttled; nothing dropped back, the queue empty.
    expect(seen).toHaveLength(3);
    for (const ids of seen) expect(ids).toEqual(batch.map((m) => m.MessageId));
    expect(mapping.throttledInvocations).toBe(2);
    expect(mapping.throttleDrops).toBe(0);
    expect(await depth(url)).toEqual({ visible: 0, inFlight: 0 });
    await mapping.stop();
  });

  it('drops a batch still throttled when its visibility timeout runs out: the messages go back to the queue', async () => {
    const { url, spec } = await queueWith(2, 1);
    const { fn, seen } = scriptedFunction([THROTTLE]);
    const mapping = new EmulatedMapping(spec, fn, 1);
    const batch = await receiveMessages(new SQSClient({}), url, 10);
    await processBatch(mapping, batch);
    // Within 1 s: tried at 0, 250 and 750 ms, then dropped (the next wait would pass the timeout).
    expect(seen.length).toBeGreaterThanOrEqual(2);
    expect(mapping.throttleDrops).toBe(1);
    await mapping.stop();
    let back: Message[] = [];
    for (let i = 0; i < 50 && back.length < 2; i++) {
      back = [...back, ...(await receiveMessages(new SQSClient({}), url, 10))];
      if (back.length < 2) await new Promise((r) => setTimeout(r, 200));
    }
    expect(back.map((m) => m.Body).sort()).toEqual(['m0', 'm1']);
  });
});
