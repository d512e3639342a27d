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
 * The queues are found by the tags the varve constructs put on them (`varve:warehouse`,
 * `varve:table`, `varve:queue`, `varve:consumer`, `varve:dead-letter`), or given by URL.
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

/** Which varve queue to find by its tags. */
interface VarveQueueLookup {
  /** The table's warehouse, `s3://bucket/prefix`: queues tagged with another warehouse are not its (untagged ones, deployed before the tag, may be). */
  warehouse?: string;
  consumer?: string;
  deadLetter: boolean;
}

/** `s3://bucket/prefix` without trailing slashes, so that a flag with one matches the tag. */
function warehouseKey(uri: string): string {
  return uri.replace(/\/+$/, '');
}

/**
 * The URL of the varve queue (`deadLetter`: its DLQ) of `table`, found by its tags: warehouse,
 * table, queue kind and consumer. More than one match is an error that lists them and says how to
 * choose.
 */
export async function findVarveQueue(
  client: SQSClient,
  table: string,
  queue: RedriveQueue,
  opts: VarveQueueLookup,
): Promise<string> {
  const found = await queuesTaggedAs(client, (tags) => {
    const tagged = tags[QUEUE_TAGS.warehouse];
    return (
      tags[QUEUE_TAGS.table] === table &&
      tags[QUEUE_TAGS.queue] === queue &&
      (tags[QUEUE_TAGS.deadLetter] === 'true') === opts.deadLetter &&
      (opts.consumer === undefined || tags[QUEUE_TAGS.consumer] === opts.consumer) &&
      (opts.warehouse === undefined || tagged === undefined || warehouseKey(tagged) === warehouseKey(opts.warehouse))
    );
  });
  const what = `the ${queue} ${opts.deadLetter ? 'dead-letter ' : ''}queue of ${table}${opts.consumer ? ` (consumer ${opts.consumer})` : ''}${opts.warehouse ? ` in warehouse ${opts.warehouse}` : ''}`;
  const urlFlag = opts.deadLetter ? '--dlq-url' : '--to-url';
  if (found.length === 0)
    throw new InvalidArgumentError(
      `no SQS queue is tagged as ${what}: deploy with the varve constructs, or pass --dlq-url and --to-url`,
    );
  if (found.length > 1) {
    const listed = await Promise.all(found.map((url) => describeTaggedQueue(client, url)));
    throw new InvalidArgumentError(
      `${found.length} SQS queues are tagged as ${what}: ${listed.join('; ')}. Choose one: name the warehouse ` +
        '(--warehouse s3://bucket/prefix, as its varve:warehouse tag; queues deployed before that tag have none: deploy again to add it), ' +
        `the consumer (--consumer), or pass the queue itself (${urlFlag} <url>, with --dlq-url and --to-url for both)`,
    );
  }
  return found[0];
}

/** `<url> (warehouse w, consumer c)`, from the queue's tags, for an error that lists queues. */
async function describeTaggedQueue(client: SQSClient, url: string): Promise<string> {
  const tags = (await client.send(new ListQueueTagsCommand({ QueueUrl: url }))).Tags ?? {};
  const warehouse = tags[QUEUE_TAGS.warehouse] ?? 'no varve:warehouse tag';
  const consumer = tags[QUEUE_TAGS.consumer];
  return `${url} (warehouse ${warehouse}${consumer ? `, consumer ${consumer}` : ''})`;
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
