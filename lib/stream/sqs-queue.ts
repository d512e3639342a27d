/**
 * The SplitQueue on Amazon SQS FIFO (or moto / LocalStack through AWS_ENDPOINT_URL). Sends go in
 * SendMessageBatch calls of at most 10 entries with explicit deduplication ids (content-based
 * deduplication stays off); a message is released with ChangeMessageVisibility, so a failed split
 * comes back first in its group instead of waiting for its visibility to expire (moto, in
 * particular, redelivers expired groups out of order: reference/aws-semantics.md §5.1).
 */
import {
  ChangeMessageVisibilityCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SQSClient,
  type BatchResultErrorEntry,
  type Message,
} from '@aws-sdk/client-sqs';
import * as v from 'valibot';
import { InvalidArgumentError, VarveError } from '../errors.js';
import { parseJsonFile } from '../json.js';
import {
  MAX_QUEUE_ID_LENGTH,
  type QueueDepth,
  type QueueMessage,
  type ReceiveOptions,
  type SendRequest,
  type SendResult,
  type SplitQueue,
} from './split-queue.js';
import { decorateAwsClient } from '../store/client-decorator.js';

/** SQS's limit on the entries of one batch call. */
export const SQS_MAX_BATCH = 10;
/**
 * Payload bytes per SendMessageBatch call. SQS accepts 1 MiB since 2025; the classic 256 KiB
 * keeps every endpoint (older emulators, older regions' docs) happy at the cost of a few calls.
 */
const MAX_BATCH_BYTES = 256 * 1024;
/** SQS long polling waits at most 20 s per call. */
const MAX_WAIT_SECONDS = 20;
/** SQS visibility timeouts are 0..12 h. */
const MAX_VISIBILITY_SECONDS = 43_200;
/** Error codes meaning "this receipt is no longer yours": the message was deleted or received again. */
const STALE_RECEIPT = new Set(['ReceiptHandleIsInvalid', 'MessageNotInflight', 'InvalidParameterValue']);

/** An SQS batch call that SQS answered with failed entries; names each failure. */
export class QueueRequestError extends VarveError {
  constructor(
    message: string,
    readonly failures: BatchResultErrorEntry[],
  ) {
    // A sender fault (a malformed entry) will fail again; anything else may heal.
    super(message, { kind: 'unavailable', retryable: failures.every((f) => !f.SenderFault) });
  }
}

/** Options of an SqsSplitQueue. */
export interface SqsSplitQueueOptions {
  /** The FIFO queue's URL (e.g. VARVE_SPLIT_QUEUE_URL). */
  queueUrl: string;
  /** @default a client configured from the environment */
  client?: SQSClient;
}

/** The SQS client varve uses when none is given: region, credentials and endpoint from the environment. */
export function defaultSqsClient(): SQSClient {
  return decorateAwsClient(new SQSClient({}));
}

/** A SplitQueue on an SQS FIFO queue (see the file comment). */
export class SqsSplitQueue implements SplitQueue {
  readonly queueUrl: string;
  readonly client: SQSClient;
  private deadLetterUrl?: Promise<string | undefined>;

  constructor(opts: SqsSplitQueueOptions) {
    if (!opts.queueUrl || !/\.fifo$/.test(opts.queueUrl)) {
      throw new InvalidArgumentError(
        `split queue URL ${JSON.stringify(opts.queueUrl)} is not an SQS FIFO queue URL; splits need a queue whose name ends in .fifo (VARVE_SPLIT_QUEUE_URL)`,
      );
    }
    this.queueUrl = opts.queueUrl;
    this.client = opts.client ?? defaultSqsClient();
  }

  async send(requests: SendRequest[]): Promise<SendResult[]> {
    const results: SendResult[] = [];
    // Chunks go one after another: per-group order is send order, and a chunk that fails stops
    // the rest, so nothing of a group is sent after a message of it that was not.
    for (const chunk of sendChunks(requests)) {
      const r = await this.client.send(
        new SendMessageBatchCommand({
          QueueUrl: this.queueUrl,
          Entries: chunk.map((req, i) => ({
            Id: String(i),
            MessageBody: req.body,
            MessageGroupId: checkId('group id', req.groupId),
            MessageDeduplicationId: checkId('deduplication id', req.dedupId),
          })),
        }),
      );
      if (r.Failed && r.Failed.length > 0) {
        throw new QueueRequestError(
          `SQS refused ${r.Failed.length} of ${chunk.length} split messages (${r.Failed.map((f) => `${f.Code}: ${f.Message}`).join('; ')}); ` +
            'discovery sends them again on its next run under the same deduplication ids',
          r.Failed,
        );
      }
      const byId = new Map((r.Successful ?? []).map((s) => [s.Id, s.MessageId ?? '']));
      // SQS accepts a duplicate like a new message and does not say so: `duplicate` stays false.
      chunk.forEach((_, i) => results.push({ messageId: byId.get(String(i)) ?? '', duplicate: false }));
    }
    return results;
  }

  async receive(opts: ReceiveOptions = {}): Promise<QueueMessage[]> {
    const r = await this.client.send(
      new ReceiveMessageCommand({
        QueueUrl: this.queueUrl,
        MaxNumberOfMessages: Math.max(1, Math.min(SQS_MAX_BATCH, opts.maxMessages ?? SQS_MAX_BATCH)),
        WaitTimeSeconds: Math.min(MAX_WAIT_SECONDS, Math.ceil((opts.waitMs ?? 0) / 1000)),
        VisibilityTimeout: opts.visibilityMs === undefined ? undefined : visibilitySeconds(opts.visibilityMs),
        MessageSystemAttributeNames: [
          'ApproximateReceiveCount',
          'SentTimestamp',
          'MessageGroupId',
          'MessageDeduplicationId',
        ],
      }),
    );
    return (r.Messages ?? []).map(queueMessageOf);
  }

  async ack(receiptHandles: string[]): Promise<void> {
    for (let i = 0; i < receiptHandles.length; i += SQS_MAX_BATCH) {
      const chunk = receiptHandles.slice(i, i + SQS_MAX_BATCH);
      const r = await this.client.send(
        new DeleteMessageBatchCommand({
          QueueUrl: this.queueUrl,
          Entries: chunk.map((h, k) => ({ Id: String(k), ReceiptHandle: h })),
        }),
      );
      // A stale receipt deletes nothing (the message came back and belongs to its new receiver).
      const failed = (r.Failed ?? []).filter((f) => !STALE_RECEIPT.has(f.Code ?? ''));
      if (failed.length > 0) {
        throw new QueueRequestError(
          `SQS did not delete ${failed.length} split messages (${failed.map((f) => `${f.Code}: ${f.Message}`).join('; ')}); they will be redelivered and skipped as duplicates`,
          failed,
        );
      }
    }
  }

  async release(receiptHandle: string, delayMs = 0): Promise<void> {
    try {
      await this.client.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl: this.queueUrl,
          ReceiptHandle: receiptHandle,
          VisibilityTimeout: visibilitySeconds(delayMs),
        }),
      );
    } catch (e) {
      if (!STALE_RECEIPT.has((e as Error).name)) throw e;
    }
  }

  async deadLetter(message: QueueMessage): Promise<void> {
    const dlq = await (this.deadLetterUrl ??= this.findDeadLetterQueue());
    if (!dlq)
      throw new InvalidArgumentError(
        `split queue ${this.queueUrl} has no dead-letter queue (RedrivePolicy); message ${message.messageId} stays in it`,
      );
    await sendToDeadLetterQueue(this.client, dlq, message);
    await this.ack([message.receiptHandle]);
  }

  async depth(): Promise<QueueDepth> {
    const attrs = await this.attributes(this.queueUrl, [
      'ApproximateNumberOfMessages',
      'ApproximateNumberOfMessagesNotVisible',
    ]);
    const dlq = await (this.deadLetterUrl ??= this.findDeadLetterQueue());
    const dead = dlq ? await this.attributes(dlq, ['ApproximateNumberOfMessages']) : {};
    return {
      visible: Number(attrs.ApproximateNumberOfMessages ?? 0),
      inFlight: Number(attrs.ApproximateNumberOfMessagesNotVisible ?? 0),
      deadLettered: Number(dead.ApproximateNumberOfMessages ?? 0),
    };
  }

  private async attributes(
    url: string,
    names: Array<'ApproximateNumberOfMessages' | 'ApproximateNumberOfMessagesNotVisible' | 'RedrivePolicy'>,
  ): Promise<Record<string, string>> {
    const r = await this.client.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: names }));
    return r.Attributes ?? {};
  }

  /** The URL of the queue's dead-letter queue, from its redrive policy (undefined when it has none). */
  private async findDeadLetterQueue(): Promise<string | undefined> {
    const policy = (await this.attributes(this.queueUrl, ['RedrivePolicy'])).RedrivePolicy;
    if (!policy) return undefined;
    const arn = parseJsonFile(policy, RedrivePolicySchema, `the RedrivePolicy attribute of ${this.queueUrl}`, {
      fix: 'set the redrive policy of the queue again',
    }).deadLetterTargetArn;
    // arn:aws:sqs:<region>:<account>:<name>
    const parts = arn?.split(':') ?? [];
    if (parts.length < 6) return undefined;
    const r = await this.client.send(new GetQueueUrlCommand({ QueueName: parts[5], QueueOwnerAWSAccountId: parts[4] }));
    return r.QueueUrl;
  }
}

/**
 * Sends a received message to the FIFO dead-letter queue `url` with its group and deduplication
 * id, so that a redrive brings it back in order (the caller then deletes it from its queue).
 */
export async function sendToDeadLetterQueue(
  client: SQSClient,
  url: string,
  m: Pick<QueueMessage, 'messageId' | 'groupId' | 'body' | 'dedupId'>,
): Promise<void> {
  await client.send(
    new SendMessageCommand({
      QueueUrl: url,
      MessageBody: m.body,
      MessageGroupId: m.groupId,
      MessageDeduplicationId: m.dedupId ?? m.messageId,
    }),
  );
}

/** SQS's RedrivePolicy queue attribute (JSON text). */
const RedrivePolicySchema = v.looseObject({ deadLetterTargetArn: v.optional(v.string()) });

/** A received SQS message as a QueueMessage (the receive count comes from its attributes). */
function queueMessageOf(m: Message): QueueMessage {
  const a = m.Attributes ?? {};
  return {
    messageId: m.MessageId ?? '',
    receiptHandle: m.ReceiptHandle ?? '',
    groupId: a.MessageGroupId ?? '',
    body: m.Body ?? '',
    receiveCount: Number(a.ApproximateReceiveCount ?? 1),
    sentAt: Number(a.SentTimestamp ?? 0),
    ...(a.MessageDeduplicationId ? { dedupId: a.MessageDeduplicationId } : {}),
  };
}

/** Requests cut into SendMessageBatch calls: at most 10 entries and MAX_BATCH_BYTES of bodies each. */
function sendChunks(requests: SendRequest[]): SendRequest[][] {
  const chunks: SendRequest[][] = [];
  let current: SendRequest[] = [];
  let bytes = 0;
  for (const req of requests) {
    const size = Buffer.byteLength(req.body);
    if (current.length > 0 && (current.length === SQS_MAX_BATCH || bytes + size > MAX_BATCH_BYTES)) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(req);
    bytes += size;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

function visibilitySeconds(ms: number): number {
  return Math.max(0, Math.min(MAX_VISIBILITY_SECONDS, Math.ceil(ms / 1000)));
}

function checkId(what: string, id: string): string {
  if (id.length === 0 || id.length > MAX_QUEUE_ID_LENGTH) {
    throw new InvalidArgumentError(
      `a message ${what} must have 1..${MAX_QUEUE_ID_LENGTH} characters, got ${id.length}: "${id.slice(0, 40)}…"`,
    );
  }
  return id;
}
