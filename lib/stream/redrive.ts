/**
 * Redrive: moves the messages of a varve dead-letter queue back to the queue they came from, once
 * what made them fail is fixed. FIFO messages (commit, compaction, split) go back in order with
 * their message group and a new deduplication id (their old one may still be in SQS's 5-minute
 * window, which would drop them silently). The ingest DLQ holds three shapes and each is
 * normalised to what the ingest queue takes:
 *   - an ingest-queue message moved by the redrive policy: its body as it was;
 *   - a Lambda asynchronous-invocation failure record (`requestContext`, `requestPayload`) of an
 *     inbox event: the `Object Created` event in `requestPayload`;
 *   - an EventBridge delivery failure (message attributes ERROR_CODE, RULE_ARN, TARGET_ARN): the
 *     event, which is the body.
 * The ingest function takes an `Object Created` event as a message body and ingests that file.
 *
 * The queues are found by the tags the varve constructs put on them (`varve:table`, `varve:queue`,
 * `varve:consumer`, `varve:dead-letter`), or given by URL.
 */
import {
  DeleteMessageBatchCommand,
  ListQueuesCommand,
  ListQueueTagsCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  type Message,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { VARVE_QUEUE_TAGS } from '../aws-contract.js';
import { InvalidArgumentError } from '../errors.js';
import { parseJsonText } from '../json.js';
import type { RedriveQueue } from './redrive-queues.js';
import { queueId } from './split-message.js';
import { QueueRequestError, SQS_MAX_BATCH } from './sqs-queue.js';

/** The tags the varve constructs put on their queues (declared in lib/aws-contract.ts). */
const QUEUE_TAGS = VARVE_QUEUE_TAGS;

/** The shape of a dead-lettered message. */
export type DeadLetterShape = 'message' | 'lambda-async-failure' | 'eventbridge-failure' | 'unknown';

/** What a redrive did. */
export interface RedriveResult {
  from: string;
  to: string;
  moved: number;
  byShape: Record<DeadLetterShape, number>;
  /** Messages left in the DLQ because their shape cannot go back to the queue (with why). */
  left: Array<{ messageId: string; reason: string }>;
}

/** The body to send back for `m` from the DLQ of `queue`, and the shape it had. */
function normaliseDeadLetter(
  queue: RedriveQueue,
  m: Message,
): { shape: DeadLetterShape; body?: string; reason?: string } {
  const body = m.Body ?? '';
  if (queue !== 'ingest') return { shape: 'message', body };
  if (m.MessageAttributes?.ERROR_CODE || m.MessageAttributes?.RULE_ARN || m.MessageAttributes?.TARGET_ARN)
    return { shape: 'eventbridge-failure', body };
  let parsed: unknown;
  try {
    parsed = parseJsonText(body);
  } catch {
    return { shape: 'message', body }; // not JSON: ingest rejects it with its reason, as it did before
  }
  const p = parsed as { requestContext?: unknown; requestPayload?: unknown };
  if (p && typeof p === 'object' && !Array.isArray(p) && p.requestContext && 'requestPayload' in p) {
    const payload = p.requestPayload as { 'detail-type'?: string } | undefined;
    if (payload?.['detail-type'] === 'Object Created')
      return { shape: 'lambda-async-failure', body: JSON.stringify(payload) };
    return { shape: 'unknown', reason: 'a Lambda failure record whose request is not an S3 Object Created event' };
  }
  return { shape: 'message', body };
}

/** The URLs of every SQS queue of the account and region whose tags `matches` accepts. */
export async function queuesTaggedAs(
  client: SQSClient,
  matches: (tags: Record<string, string>) => boolean,
): Promise<string[]> {
  const found: string[] = [];
  let NextToken: string | undefined;
  do {
    const page = await client.send(new ListQueuesCommand({ NextToken, MaxResults: 1000 }));
    for (const url of page.QueueUrls ?? []) {
      const tags = (await client.send(new ListQueueTagsCommand({ QueueUrl: url }))).Tags ?? {};
      if (matches(tags)) found.push(url);
    }
    NextToken = page.NextToken;
  } while (NextToken);
  return found;
}

/** The URL of the varve queue (`deadLetter`: its DLQ) of `table`, found by its tags. */
export async function findVarveQueue(
  client: SQSClient,
  table: string,
  queue: RedriveQueue,
  opts: { consumer?: string; deadLetter: boolean },
): Promise<string> {
  const found = await queuesTaggedAs(client, (tags) => {
    return (
      tags[QUEUE_TAGS.table] === table &&
      tags[QUEUE_TAGS.queue] === queue &&
      (tags[QUEUE_TAGS.deadLetter] === 'true') === opts.deadLetter &&
      (opts.consumer === undefined || tags[QUEUE_TAGS.consumer] === opts.consumer)
    );
  });
  const what = `the ${queue} ${opts.deadLetter ? 'dead-letter ' : ''}queue of ${table}${opts.consumer ? ` (consumer ${opts.consumer})` : ''}`;
  if (found.length === 0)
    throw new InvalidArgumentError(
      `no SQS queue is tagged as ${what}: deploy with the varve constructs, or pass --dlq-url and --to-url`,
    );
  if (found.length > 1)
    throw new InvalidArgumentError(
      `${found.length} SQS queues are tagged as ${what}: name the consumer with --consumer, or pass --dlq-url and --to-url`,
    );
  return found[0];
}

/** Moves every message of `dlqUrl` back to `toUrl` (see the file comment); a message is deleted from the DLQ only once sent. */
export async function redrive(
  client: SQSClient,
  queue: RedriveQueue,
  dlqUrl: string,
  toUrl: string,
): Promise<RedriveResult> {
  const result: RedriveResult = {
    from: dlqUrl,
    to: toUrl,
    moved: 0,
    byShape: { message: 0, 'lambda-async-failure': 0, 'eventbridge-failure': 0, unknown: 0 },
    left: [],
  };
  const fifo = toUrl.endsWith('.fifo');
  for (;;) {
    const r = await client.send(
      new ReceiveMessageCommand({
        QueueUrl: dlqUrl,
        MaxNumberOfMessages: SQS_MAX_BATCH,
        WaitTimeSeconds: 0,
        VisibilityTimeout: 300,
        MessageSystemAttributeNames: ['All'],
        MessageAttributeNames: ['All'],
      }),
    );
    const messages = r.Messages ?? [];
    if (messages.length === 0) return result;
    const back: Array<{ m: Message; body: string }> = [];
    for (const m of messages) {
      const n = normaliseDeadLetter(queue, m);
      result.byShape[n.shape]++;
      if (n.body === undefined) result.left.push({ messageId: m.MessageId!, reason: n.reason ?? 'unknown shape' });
      else back.push({ m, body: n.body });
    }
    if (back.length === 0) continue; // they stay invisible for this run; receive the next ones
    const sent = await client.send(
      new SendMessageBatchCommand({
        QueueUrl: toUrl,
        Entries: back.map(({ m, body }, i) => ({
          Id: String(i),
          MessageBody: body,
          ...(fifo
            ? {
                MessageGroupId: m.Attributes?.MessageGroupId ?? 'redrive',
                MessageDeduplicationId: queueId(`redrive/${m.MessageId}`),
              }
            : {}),
        })),
      }),
    );
    if (sent.Failed?.length)
      throw new QueueRequestError(
        `SQS refused ${sent.Failed.length} redriven messages (they stay in ${dlqUrl}): ${sent.Failed.map((f) => f.Message).join('; ')}`,
        sent.Failed,
      );
    await client.send(
      new DeleteMessageBatchCommand({
        QueueUrl: dlqUrl,
        Entries: back.map(({ m }, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })),
      }),
    );
    result.moved += back.length;
  }
}
