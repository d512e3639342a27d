/**
 * The ingest Lambda: records from the table's ingest queue (each message one JSON record or an
 * array of them) or a file dropped in its inbox (S3 `Object Created`, lib/aws/inbox.ts).
 * Invalid records go to the rejects queue; valid ones land (lib/table/ingest-messages.ts) once
 * per message or file, however they are redelivered: committed at once (VARVE_COMMIT_MODE=direct)
 * or sent to the commit queue (queue). Messages whose rows did not land come back after a backoff.
 */
import type { Context, S3ObjectCreatedNotificationEvent, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { InvalidArgumentError } from '../lib/errors.js';
import { ingestMessages } from '../lib/table/ingest-messages.js';
import { landOptions } from '../lib/aws/after-commit.js';
import { writerSettings, type Env } from '../lib/aws/env.js';
import { exportAndRegister } from '../lib/aws/glue.js';
import { inboxEventOf, ingestInboxObject, type IngestFileResult } from '../lib/aws/inbox.js';
import { instrumented, log } from './shared/observability.js';
import { sendRejects } from '../lib/aws/rejects.js';
import { backOffFailures } from './shared/retry-backoff.js';
import { openTable } from '../lib/aws/tables.js';

export type { IngestFileResult };

/** The commit user of every ingest commit of a table: stable, so retries find their commit. */
const INGEST_USER = 'ingest';

/** The ingest handler for the environment `env` (docs/AWS.md, "The environment contract"). */
export function createIngestHandler(env: Env = process.env) {
  return async (
    event: SQSEvent | S3ObjectCreatedNotificationEvent,
    _context?: Context,
  ): Promise<SQSBatchResponse | IngestFileResult> => {
    const table = await openTable(env, 'ingest');
    const settings = writerSettings(env);
    const ingestFile = async (f: { bucket: string; key: string; etag: string }) => {
      const result = await ingestInboxObject(table, f.bucket, f.key, f.etag, {
        commitUser: INGEST_USER,
        settings,
        rejectsQueueUrl: env.VARVE_REJECTS_QUEUE_URL,
      });
      log().info('ingested inbox file', { table: table.name, ...result });
      await exportAndRegister(env, table);
      return result;
    };
    if ('detail-type' in event && event['detail-type'] === 'Object Created')
      return ingestFile({
        bucket: event.detail.bucket.name,
        key: event.detail.object.key,
        etag: event.detail.object.etag,
      });
    if (!('Records' in event))
      throw new InvalidArgumentError(
        `the ingest function takes SQS record batches or S3 "Object Created" events, not ${JSON.stringify((event as { 'detail-type'?: string })['detail-type'])}`,
      );
    // Inbox events redriven from the DLQ arrive as message bodies: each is its file's ingestion.
    const files = event.Records.filter((r) => inboxEventOf(r.body));
    const fileFailures = (
      await Promise.all(
        files.map((r) =>
          ingestFile(inboxEventOf(r.body)!).then(
            () => [],
            (e: Error) => (
              log().error('an inbox event will be retried', { table: table.name, error: e }), [r.messageId]
            ),
          ),
        ),
      )
    ).flat();
    const records = event.Records.filter((r) => !files.includes(r));
    const messages = records.map((r) => ({
      id: r.messageId,
      body: r.body,
      redelivered: Number(r.attributes.ApproximateReceiveCount) > 1,
    }));
    const result = await ingestMessages(table, messages, {
      land: (identifier, sources) => landOptions(table, settings, INGEST_USER, identifier, sources),
      reject: (rejects) =>
        sendRejects(
          env.VARVE_REJECTS_QUEUE_URL,
          table.name,
          rejects.map((r) => ({ source: { messageId: r.id }, line: r.line, reason: r.reason, raw: r.raw })),
        ),
      queued: settings.mode === 'queue',
    });
    const { failed, error, landed, ...counts } = result;
    if (failed.length > 0)
      log().error('the rows of some messages did not land; they will be retried', {
        table: table.name,
        failed: failed.length,
        error: error as Error,
      });
    else
      log().info('ingested', {
        table: table.name,
        messages: messages.length,
        ...counts,
        duplicates: counts.duplicates.length,
        ...landed,
        snapshot: landed?.snapshot?.id,
      });
    await exportAndRegister(env, table);
    return backOffFailures(event.Records, {
      batchItemFailures: [...fileFailures, ...failed].map((id) => ({ itemIdentifier: id })),
    });
  };
}

/** Lambda entry of the ingest function. */
export const handler = instrumented(createIngestHandler());
