/**
 * The ingest Lambda: records from the table's ingest queue (each message one JSON record or an
 * array of them) or a file dropped in its inbox (S3 `Object Created`, functions/shared/inbox.ts).
 * Invalid records go to the rejects queue; valid ones land (lib/table/land-rows.ts), committed at
 * once (VARVE_COMMIT_MODE=direct) or sent to the commit queue (queue).
 */
import type { Context, S3ObjectCreatedNotificationEvent, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { InvalidArgumentError } from '../lib/errors.js';
import { messagesCommitIdentifier } from '../lib/table/commit-identifiers.js';
import { landRows } from '../lib/table/land-rows.js';
import { parseMessageRecords } from '../lib/table/message-records.js';
import { landOptions } from './shared/after-commit.js';
import { writerSettings, type Env } from './shared/env.js';
import { ingestInboxObject, type IngestFileResult } from './shared/inbox.js';
import { log } from './shared/observability.js';
import { backOffFailures } from './shared/retry-backoff.js';
import { sendRejects } from './shared/rejects.js';
import { openTable } from './shared/tables.js';

export type { IngestFileResult };

/** The commit user of every ingest commit of a table: stable, so retries find their commit. */
const INGEST_USER = 'ingest';

/** The ingest handler for the environment `env` (docs/AWS.md, "The environment contract"). */
export function createIngestHandler(env: Env = process.env) {
  return async (event: SQSEvent | S3ObjectCreatedNotificationEvent, _context?: Context): Promise<SQSBatchResponse | IngestFileResult> => {
    const table = await openTable(env, 'ingest');
    const settings = writerSettings(env);
    if ('detail-type' in event && event['detail-type'] === 'Object Created') {
      const { bucket, object } = event.detail;
      const result = await ingestInboxObject(table, bucket.name, object.key, object.etag, { commitUser: INGEST_USER, settings, rejectsQueueUrl: env.VARVE_REJECTS_QUEUE_URL });
      log().info('ingested inbox file', { table: table.name, ...result });
      return result;
    }
    if (!('Records' in event)) {
      throw new InvalidArgumentError(`the ingest function takes SQS record batches or S3 "Object Created" events, not ${JSON.stringify((event as { 'detail-type'?: string })['detail-type'])}`);
    }
    const parsed = await parseMessageRecords(event.Records.map((r) => ({ id: r.messageId, body: r.body })), table.schema);
    // Rejects go first: nothing is written yet, so a failure there retries the whole batch cleanly;
    // after it, messages that were all rejects are done and the ones with rows come back together.
    let [failing, what] = [event.Records.map((r) => r.messageId), 'rejected records could not be sent to the rejects queue'];
    try {
      await sendRejects(env.VARVE_REJECTS_QUEUE_URL, table.name, parsed.rejects.map((r) => ({ source: { messageId: r.id }, line: r.line, reason: r.reason, raw: r.raw })));
      [failing, what] = [parsed.withRows, 'rows could not be written or committed'];
      const landed = await landRows(table, parsed.rows, parsed.kinds, landOptions(table, settings, INGEST_USER, messagesCommitIdentifier('ingest', parsed.withRows)));
      log().info('ingested', { table: table.name, messages: event.Records.length, rejected: parsed.rejects.length, ...landed, snapshot: landed.snapshot?.id });
    } catch (e) {
      log().error(`${what}; the messages will be retried`, { table: table.name, messages: failing.length, error: e as Error });
      return backOffFailures(event.Records, { batchItemFailures: failing.map((id) => ({ itemIdentifier: id })) });
    }
    return { batchItemFailures: [] };
  };
}

/** Lambda entry of the ingest function. */
export const handler = createIngestHandler();
