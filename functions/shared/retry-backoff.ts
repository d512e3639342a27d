/**
 * Fast retries with backoff: Lambda leaves a failed SQS message invisible for the queue's whole
 * visibility timeout (6× the function's timeout: minutes), which stalls a FIFO group — a bucket's
 * splits, a table's commits — for that long after one transient failure. Before returning its
 * batch item failures a handler therefore resets each failed message's visibility: its delay when
 * the caller gives one (a split reader: the split-delivery policy's, lib/stream/split-policy.ts),
 * else an exponential backoff on its receive count: 2, 4, 8, 16, … seconds, at most 5 minutes.
 */
import { ChangeMessageVisibilityBatchCommand, GetQueueUrlCommand } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSRecord } from 'aws-lambda';
import { SQS_MAX_BATCH } from '../../lib/stream/sqs-queue.js';
import { sqsClient } from '../../lib/aws/clients.js';
import { log } from './observability.js';

/** The first retry's delay and the longest one, in seconds. */
const BACKOFF_BASE_SECONDS = 2;
const BACKOFF_MAX_SECONDS = 300;

/** Seconds a message failed on its `receiveCount`-th receive stays invisible. */
export function backoffSeconds(receiveCount: number): number {
  const n = Math.max(1, Math.floor(receiveCount) || 1);
  return Math.min(BACKOFF_MAX_SECONDS, BACKOFF_BASE_SECONDS * 2 ** Math.min(n - 1, 20));
}

/** SQS's longest visibility timeout, in seconds. */
const MAX_VISIBILITY_SECONDS = 12 * 3600;

/** A failed record's visibility in seconds: its delay when given, else its backoff on its receive count. */
function visibilityOf(record: SQSRecord, delayMs: number | undefined): number {
  if (delayMs === undefined) return backoffSeconds(Number(record.attributes.ApproximateReceiveCount));
  return Math.min(MAX_VISIBILITY_SECONDS, Math.max(0, Math.ceil(delayMs / 1000)));
}

const urls = new Map<string, Promise<string>>();

/** The URL of the queue `arn:aws:sqs:<region>:<account>:<name>` (looked up once per container). */
function queueUrlOf(arn: string): Promise<string> {
  let url = urls.get(arn);
  if (!url) {
    const [, , , , account, name] = arn.split(':');
    url = sqsClient()
      .send(new GetQueueUrlCommand({ QueueName: name, QueueOwnerAWSAccountId: account }))
      .then((r) => r.QueueUrl!);
    url.catch(() => urls.delete(arn));
    urls.set(arn, url);
  }
  return url;
}

/**
 * Sets the visibility of every failed record of `response`: its delay in `delaysMs` (by message
 * id), else its backoff on its receive count; best effort (a failure leaves the queue's own timeout).
 */
export async function backOffFailures(
  records: readonly SQSRecord[],
  response: SQSBatchResponse,
  delaysMs?: ReadonlyMap<string, number>,
): Promise<SQSBatchResponse> {
  const failed = new Set(response.batchItemFailures.map((f) => f.itemIdentifier));
  const back = records.filter((r) => failed.has(r.messageId));
  if (back.length === 0) return response;
  try {
    const queueUrl = await queueUrlOf(back[0].eventSourceARN);
    for (let i = 0; i < back.length; i += SQS_MAX_BATCH) {
      const chunk = back.slice(i, i + SQS_MAX_BATCH);
      const r = await sqsClient().send(
        new ChangeMessageVisibilityBatchCommand({
          QueueUrl: queueUrl,
          Entries: chunk.map((m, k) => ({
            Id: String(k),
            ReceiptHandle: m.receiptHandle,
            VisibilityTimeout: visibilityOf(m, delaysMs?.get(m.messageId)),
          })),
        }),
      );
      if (r.Failed?.length)
        log().warn('some failed messages keep the queue visibility timeout', {
          failed: r.Failed.map((f) => f.Message),
        });
    }
  } catch (e) {
    log().warn('the failed messages keep the queue visibility timeout (their backoff could not be set)', {
      messages: back.length,
      error: e as Error,
    });
  }
  return response;
}
