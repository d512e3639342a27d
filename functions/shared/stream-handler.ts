/**
 * Lambda handlers for a consumer's split queue (SQS FIFO event source), the Powertools-shaped
 * adapter of the split-delivery policy (lib/stream/split-policy.ts): parse the event, hand each
 * record to the policy through Powertools' FIFO processor with `skipGroupOnError` (a failed split
 * and every later record of its group are reported, other groups go on), set the failed records'
 * visibility to the policy's retry delays, return `batchItemFailures`. The table and consumer come
 * from VARVE_WAREHOUSE, VARVE_TABLE and VARVE_CONSUMER_ID; the table is opened through the
 * configured catalog (VARVE_CATALOG_TABLE) and kept in the process's table cache (tables.ts).
 */
import { randomUUID } from 'node:crypto';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { InvalidArgumentError } from '../../lib/errors.js';
import { checkConsumerId } from '../../lib/snapshot/consumer.js';
import type { ChangeBatch, StreamSink } from '../../lib/stream/delivery.js';
import { callbackSink, type Change } from '../../lib/stream/sinks.js';
import { SplitFences } from '../../lib/stream/split-fence.js';
import { SplitBatch, type ReceivedSplit, type SplitDeadLetterQueue } from '../../lib/stream/split-policy.js';
import { splitWindow } from '../../lib/stream/split-window.js';
import { sendToDeadLetterQueue } from '../../lib/stream/sqs-queue.js';
import type { Table } from '../../lib/table/table.js';
import { sqsClient } from '../../lib/aws/clients.js';
import { processFifoBatch } from './fifo-batch.js';
import { instrumented, log } from './observability.js';
import { openTable } from '../../lib/aws/tables.js';

/** A Lambda handler for SQS events. */
export type SqsHandler = (event: SQSEvent, context?: Context) => Promise<SQSBatchResponse>;

/** Where a handler's table and consumer come from. */
export interface StreamHandlerEnv {
  VARVE_WAREHOUSE?: string;
  VARVE_CATALOG_TABLE?: string;
  VARVE_TABLE?: string;
  VARVE_CONSUMER_ID?: string;
  /** The split dead-letter queue: a split that failed on its own SPLIT_FAILURE_BUDGET times is moved there by the reader. */
  VARVE_SPLIT_DLQ_URL?: string;
  /** The split queue's visibility timeout in seconds (the StreamConsumer construct sets it). */
  VARVE_SPLIT_VISIBILITY_S?: string;
}

/** A handler delivering each split message of the event to the sink `sinkFor` builds for the table. */
export function createSplitHandler(
  sinkFor: (table: Table) => StreamSink | Promise<StreamSink>,
  env: StreamHandlerEnv = process.env,
): SqsHandler {
  // One sink per opened table: the table cache hands out a new Table when it re-opens it.
  // `current`: the table at the newest schema delivered, so a schema change is announced once.
  // `fences`: this container's split fences on the consumer (held per bucket across containers).
  let cached: { table: Table; current: Table; sink: StreamSink; fences: SplitFences } | undefined;
  return instrumented(async (event: SQSEvent, context?: Context) => {
    const consumerId = consumerIdOf(env);
    const table = await openTable(env as Record<string, string | undefined>, 'stream reader');
    if (cached?.table !== table)
      cached = {
        table,
        current: table,
        sink: await sinkFor(table),
        fences: new SplitFences(table.store, table.path, consumerId),
      };
    const entry = cached;
    const splits = new Map(event.Records.map((r) => [r.messageId, receivedSplitOf(r)]));
    const batch = new SplitBatch(entry.current, {
      consumerId,
      sink: entry.sink,
      window: splitWindow(windowInput(event.Records, context, env)),
      fences: entry.fences,
      holder: `${entry.fences.processHolder}/${context?.awsRequestId ?? randomUUID()}`,
      deadLetterQueue: deadLetterQueueOf(env.VARVE_SPLIT_DLQ_URL),
      noDeadLetterQueue: 'no VARVE_SPLIT_DLQ_URL is set',
      log: log(),
    });
    try {
      return await processFifoBatch(event, (r) => batch.deliver(splits.get(r.messageId)!), context, {
        skipGroupOnError: true,
        retryDelays: (failed) =>
          new Map(batch.retries([...splits.values()], failed).map((r) => [r.messageId, r.delayMs])),
      });
    } finally {
      if (batch.table.schema.id > entry.current.schema.id) entry.current = batch.table;
      // A sink call that outlived its time is waited for (on Lambda the container's timeout ends
      // it, and the call with it); then the fences are released.
      await batch.finish();
    }
  });
}

/**
 * A handler calling `fn` with the changes of each split, in order (rows with their kinds).
 *
 * @example
 * export const handler = createStreamHandler(async (changes) => {
 *   for (const c of changes) console.log(c.kind, c.row);
 * });
 */
export function createStreamHandler(
  fn: (changes: Change[], batch: ChangeBatch) => unknown,
  env: StreamHandlerEnv = process.env,
): SqsHandler {
  const sink = callbackSink(fn);
  return createSplitHandler(() => sink, env);
}

/** A record as the policy takes it. */
function receivedSplitOf(r: SQSRecord): ReceivedSplit {
  const a = r.attributes;
  return {
    messageId: r.messageId,
    groupId: a.MessageGroupId ?? '',
    body: r.body,
    receiveCount: Number(a.ApproximateReceiveCount) || 1,
    dedupId: a.MessageDeduplicationId,
  };
}

/** What the invocation knows of its time: Lambda's remaining time, the queue's visibility, when first receives began. */
function windowInput(records: readonly SQSRecord[], context: Context | undefined, env: StreamHandlerEnv) {
  const now = Date.now();
  const remainingMs =
    typeof context?.getRemainingTimeInMillis === 'function' ? context.getRemainingTimeInMillis() : undefined;
  // A first receive tells when its visibility started; a redelivered one only that it started before now.
  const visibleSince = records.map((r) =>
    r.attributes.ApproximateReceiveCount === '1'
      ? Number(r.attributes.ApproximateFirstReceiveTimestamp) || now
      : undefined,
  );
  return { now, remainingMs, visibilityMs: Number(env.VARVE_SPLIT_VISIBILITY_S) * 1000 || undefined, visibleSince };
}

/** The split dead-letter queue (VARVE_SPLIT_DLQ_URL): a split is sent there with its group and deduplication id, so a redrive brings it back in order. */
function deadLetterQueueOf(url: string | undefined): SplitDeadLetterQueue | undefined {
  if (!url) return undefined;
  // Sent, then reported done: the event source mapping deletes it from the split queue.
  return {
    name: url,
    redrive: '`varve redrive <table> --queue split`',
    move: (s) => sendToDeadLetterQueue(sqsClient(), url, s),
  };
}

function consumerIdOf(env: StreamHandlerEnv): string {
  const missing = (['VARVE_WAREHOUSE', 'VARVE_TABLE', 'VARVE_CONSUMER_ID'] as const).filter((k) => !env[k]);
  if (missing.length > 0) {
    throw new InvalidArgumentError(
      `the stream handler needs ${missing.join(', ')} in its environment (the StreamConsumer construct sets them)`,
    );
  }
  checkConsumerId(env.VARVE_CONSUMER_ID!);
  return env.VARVE_CONSUMER_ID!;
}
