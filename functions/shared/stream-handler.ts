/**
 * Lambda handlers for a consumer's split queue (SQS FIFO event source): each record is one split
 * message, delivered in order through the same code as the in-process reader. Partial batch
 * response with Powertools' FIFO processor and `skipGroupOnError` (fifo-batch.ts): a failed split
 * and every later record of its group are reported, other groups go on. The table and consumer
 * come from VARVE_WAREHOUSE, VARVE_TABLE and VARVE_CONSUMER_ID; the table is opened through the
 * configured catalog (VARVE_CATALOG_TABLE) and kept in the process's table cache (tables.ts).
 */
import { randomUUID } from 'node:crypto';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { InvalidArgumentError, SplitFenceHeldError } from '../../lib/errors.js';
import type { Table } from '../../lib/table/table.js';
import { checkConsumerId } from '../../lib/snapshot/consumer.js';
import { BatchDelivery, type ChangeBatch, type StreamSink } from '../../lib/stream/delivery.js';
import { callbackSink, type Change } from '../../lib/stream/sinks.js';
import { SplitFences } from '../../lib/stream/split-fence.js';
import { splitDeadlines, type SplitDeadlineEnv } from './split-deadline.js';
import { instrumented } from './observability.js';
import { processFifoBatch } from './fifo-batch.js';
import { openTable } from './tables.js';

/** A Lambda handler for SQS events. */
export type SqsHandler = (event: SQSEvent, context?: Context) => Promise<SQSBatchResponse>;

/** Where a handler's table and consumer come from. */
export interface StreamHandlerEnv extends SplitDeadlineEnv {
  VARVE_WAREHOUSE?: string;
  VARVE_CATALOG_TABLE?: string;
  VARVE_TABLE?: string;
  VARVE_CONSUMER_ID?: string;
}

/** A handler delivering each split message of the event to the sink `sinkFor` builds for the table. */
export function createSplitHandler(sinkFor: (table: Table) => StreamSink | Promise<StreamSink>, env: StreamHandlerEnv = process.env): SqsHandler {
  // One sink per opened table: the table cache hands out a new Table when it re-opens it.
  // `current`: the table at the newest schema delivered, so a schema change is announced once.
  // `fences`: this container's split fences on the consumer (held per bucket across containers).
  let cached: { table: Table; current: Table; sink: StreamSink; fences: SplitFences } | undefined;
  return instrumented(async (event: SQSEvent, context?: Context) => {
    const { consumerId } = handlerSettings(env);
    const table = await openTable(env as Record<string, string | undefined>, 'stream reader');
    if (cached?.table !== table) cached = { table, current: table, sink: await sinkFor(table), fences: new SplitFences(table.store, table.path, consumerId) };
    const entry = cached;
    const deadline = splitDeadlines(event.Records, context, env);
    const holder = `${entry.fences.processHolder}/${context?.awsRequestId ?? randomUUID()}`;
    const delivery = new BatchDelivery(entry.current, consumerId, entry.sink, Date.now, {
      sinkDeadline: deadline.sink,
      splits: { fences: entry.fences, holder, until: deadline.hold },
    });
    // Per-bucket groups: a failure holds back its own bucket only.
    // A split whose bucket another invocation holds stays hidden until that hold ends: retried
    // sooner, it would only use up receives (and reach the dead-letter queue) while the holder runs.
    const held = new Map<string, number>();
    const deliver = async (record: SQSRecord) => {
      try {
        return await delivery.deliver(record.body);
      } catch (e) {
        if (e instanceof SplitFenceHeldError) held.set(record.messageId, e.expiresAt);
        throw e;
      }
    };
    try {
      return await processFifoBatch(event, deliver, context, { skipGroupOnError: true, hideUntil: held });
    } finally {
      if (delivery.table.schema.id > entry.current.schema.id) entry.current = delivery.table;
      // A sink call that outlived its time is waited for (on Lambda the container's timeout ends
      // it, and the call with it); then the fences are released.
      await delivery.finish(deadline.ends ? undefined : deadline.hold);
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
export function createStreamHandler(fn: (changes: Change[], batch: ChangeBatch) => unknown, env: StreamHandlerEnv = process.env): SqsHandler {
  const sink = callbackSink(fn);
  return createSplitHandler(() => sink, env);
}

function handlerSettings(env: StreamHandlerEnv): { warehouse: string; table: string; consumerId: string } {
  const missing = (['VARVE_WAREHOUSE', 'VARVE_TABLE', 'VARVE_CONSUMER_ID'] as const).filter((k) => !env[k]);
  if (missing.length > 0) {
    throw new InvalidArgumentError(`the stream handler needs ${missing.join(', ')} in its environment (the StreamConsumer construct sets them)`);
  }
  checkConsumerId(env.VARVE_CONSUMER_ID!);
  return { warehouse: env.VARVE_WAREHOUSE!, table: env.VARVE_TABLE!, consumerId: env.VARVE_CONSUMER_ID! };
}
