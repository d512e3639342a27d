/**
 * The split-reader Lambda of a consumer with a built-in sink (VARVE_SINK): `table:<db.table>`
 * writes the changes into another varve table of the warehouse (with VARVE_SINK_COMMIT_MODE and
 * the target's queues), `eventbridge:<bus>` puts one `Row Changed` event per change. Delivery,
 * ordering and the FIFO partial-batch rules are functions/shared/stream-handler.ts's: a failed split and every
 * later split of its bucket in the batch are reported, other buckets go on. For a sink of your
 * own, deploy `createStreamHandler(async changes => …)` instead of this function.
 */
import type { SqsHandler } from './shared/stream-handler.js';
import { createSplitHandler } from './shared/stream-handler.js';
import { writerSettings, type Env } from '../lib/aws/env.js';
import { awsTableSink, eventBridgeSink, parseSinkSpec } from '../lib/aws/sinks.js';
import { openTable } from '../lib/aws/tables.js';

/** The reader handler for the environment `env` (VARVE_SINK chooses the sink). */
export function createReadHandler(env: Env = process.env): SqsHandler {
  return createSplitHandler(async () => {
    const spec = parseSinkSpec(env.VARVE_SINK);
    if (spec.kind === 'eventbridge') return eventBridgeSink(spec.bus);
    return awsTableSink(await openTable(env, 'read', spec.table), writerSettings(env, 'VARVE_SINK_'));
  }, env);
}

/** Lambda entry of the reader function with a built-in sink. */
export const handler = createReadHandler();
