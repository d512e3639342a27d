/**
 * Lambda handlers for a consumer's split queue (SQS FIFO event source): each record is one split
 * message, delivered in order through the same code as the in-process reader. Partial batch
 * response with Powertools' SqsFifoPartialProcessor and `skipGroupOnError`: a failed split and
 * every later record of its group are reported, other groups go on. The table and consumer come
 * from VARVE_WAREHOUSE, VARVE_TABLE and VARVE_CONSUMER_ID.
 */
import { processPartialResponse, SqsFifoPartialProcessorAsync } from '@aws-lambda-powertools/batch';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { InvalidArgumentError } from '../../lib/errors.js';
import { openStore } from '../../lib/store/open-store.js';
import type { Table } from '../../lib/table/table.js';
import { checkConsumerId } from '../../lib/snapshot/consumer.js';
import { BatchDelivery, type ChangeBatch, type StreamSink } from '../../lib/stream/delivery.js';
import { callbackSink, type Change } from '../../lib/stream/sinks.js';

/** A Lambda handler for SQS events. */
export type SqsHandler = (event: SQSEvent, context?: Context) => Promise<SQSBatchResponse>;

/** Where a handler's table and consumer come from. */
export interface StreamHandlerEnv {
  VARVE_WAREHOUSE?: string;
  VARVE_TABLE?: string;
  VARVE_CONSUMER_ID?: string;
}

/** How long a warm container keeps its opened table (a schema change is picked up after this). */
const TABLE_CACHE_MS = 60_000;

/** A handler delivering each split message of the event to the sink `sinkFor` builds for the table. */
export function createSplitHandler(sinkFor: (table: Table) => StreamSink | Promise<StreamSink>, env: StreamHandlerEnv = process.env): SqsHandler {
  let cached: { table: Table; sink: StreamSink; at: number } | undefined;
  return async (event, context) => {
    const { warehouse, table: name, consumerId } = handlerSettings(env);
    if (!cached || Date.now() - cached.at > TABLE_CACHE_MS) {
      const table = await new FolderCatalog(openStore(warehouse)).getTable(name);
      cached = { table, sink: await sinkFor(table), at: Date.now() };
    }
    const delivery = new BatchDelivery(cached.table, consumerId, cached.sink);
    const processor = new SqsFifoPartialProcessorAsync();
    return processPartialResponse(
      event,
      async (record: SQSRecord) => {
        await delivery.deliver(record.body);
      },
      processor,
      // Per-bucket groups: a failure holds back its own bucket only. An all-failed batch is
      // reported like any other, not thrown, so every record keeps its own receive count.
      { context, skipGroupOnError: true, throwOnFullBatchFailure: false },
    );
  };
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
