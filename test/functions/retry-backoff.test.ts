/**
 * Issue 11, failure 3: a failed message comes back after a backoff of seconds, not after the
 * queue's visibility timeout (minutes on a deployment, 60 s on these test queues).
 */
import { randomUUID } from 'node:crypto';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { beforeAll, describe, expect, it } from 'vitest';
import { backoffSeconds } from '../../functions/shared/retry-backoff.js';
import { createStreamHandler } from '../../functions/shared/stream-handler.js';
import { awsAvailable } from '../helpers/aws.js';
import {
  captureMetrics,
  createOrders,
  deploy,
  powertoolsEnv,
  receive,
  sqs,
  sqsEventOf,
  captureLogs,
} from './harness.js';

/** The functions' log lines: an ERROR line fails the test that logged it (harness.ts). */
captureLogs();

describe('the retry backoff', () => {
  it('doubles from 2 seconds with each receive, up to 5 minutes', () => {
    expect([1, 2, 3, 4, 5, 8, 9, 100].map(backoffSeconds)).toEqual([2, 4, 8, 16, 32, 256, 300, 300]);
    expect(backoffSeconds(Number('not a count'))).toBe(2);
  });
});

describe.skipIf(!awsAvailable())('failed messages on moto', () => {
  captureMetrics();
  beforeAll(() => powertoolsEnv());

  it('makes a failed split visible again after its backoff, well before the visibility timeout', async () => {
    // Prepare: a split the handler fails on, received once (the queue's visibility timeout is 60 s)
    const d = await deploy();
    await createOrders(d);
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: d.splitUrl,
        MessageBody: '{"not": "a split"}',
        MessageGroupId: 'shop.orders//0',
        MessageDeduplicationId: randomUUID(),
      }),
    );
    const first = await receive(d.splitUrl, 10);
    expect(first).toHaveLength(1);
    const handler = createStreamHandler(async () => {}, d.env('direct'));

    // Act
    const response = await handler(sqsEventOf(d.splitUrl, first));

    // Assess: reported, and back within a long poll (its backoff is 2 s), received a second time
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: first[0].MessageId }]);
    const again = await receive(d.splitUrl, 10, 15);
    expect(again.map((m) => [m.MessageId, m.Attributes?.ApproximateReceiveCount])).toEqual([[first[0].MessageId, '2']]);
  });
});
