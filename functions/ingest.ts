/**
 * The ingest Lambda: records from the table's ingest queue (each message body is one JSON record
 * or a JSON array of records) or a file dropped in the table's inbox (S3 → EventBridge `Object
 * Created`; JSONL, CSV or Parquet by extension). Records are validated against the schema; the
 * invalid ones go to the rejects queue with their reason, the valid ones land: level-0 files per
 * bucket, committed at once (VARVE_COMMIT_MODE=direct) or sent to the commit queue (queue).
 *
 * A retried invocation commits nothing twice: the commit identifier is the hash of the sorted
 * message ids of the records it carries, or of the file's key and etag. Messages whose rows could
 * not be landed for a transient reason are returned as SQS batch item failures.
 */
import type { Context, S3ObjectCreatedNotificationEvent, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { InvalidArgumentError, RecordValidationError } from '../lib/errors.js';
import { formatFromFileName, parseRecords } from '../lib/table/input.js';
import type { S3Store } from '../lib/store/s3-store.js';
import { writerSettings, type Env } from './shared/env.js';
import { messagesCommitIdentifier, objectCommitIdentifier } from './shared/identifiers.js';
import { inboxOf, readInboxObject } from './shared/inbox.js';
import { landRows, type Landed } from './shared/land-rows.js';
import { log } from './shared/observability.js';
import { sendRejects, type Reject } from './shared/rejects.js';
import { openTable } from './shared/tables.js';

/** What an inbox file's ingestion did (EventBridge ignores a handler's result; logs and tests read it). */
export interface IngestFileResult {
  key: string;
  /** Why nothing was read: the file is outside the inbox, gone, or overwritten since the event. */
  skipped?: 'outside-inbox' | 'deleted' | 'superseded';
  rows: number;
  rejected: number;
  landed?: Landed;
}

/** The commit user of every ingest commit of a table: stable, so retries find their commit. */
const INGEST_USER = 'ingest';

/** The ingest handler for the environment `env` (docs/AWS.md, "The environment contract"). */
export function createIngestHandler(env: Env = process.env) {
  return async (event: SQSEvent | S3ObjectCreatedNotificationEvent, _context?: Context): Promise<SQSBatchResponse | IngestFileResult> => {
    if ('Records' in event) return ingestMessages(env, event);
    if (event['detail-type'] === 'Object Created') return ingestFile(env, event);
    throw new InvalidArgumentError(
      `the ingest function takes SQS record batches or S3 "Object Created" events, not ${JSON.stringify((event as { 'detail-type'?: string })['detail-type'])}`,
    );
  };
}

/** Lambda entry of the ingest function. */
export const handler = createIngestHandler();

/** The JSON records of a message body: one record or an array of them. */
function recordsOf(body: string): { records: unknown[] } | { error: string } {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch (e) {
    return { error: `the message body is not JSON (${(e as Error).message}); send one JSON record or a JSON array of records` };
  }
  return { records: Array.isArray(value) ? value : [value] };
}

async function ingestMessages(env: Env, event: SQSEvent): Promise<SQSBatchResponse> {
  const table = await openTable(env, 'ingest');
  const settings = writerSettings(env);
  // One JSONL text for the whole batch (JSON.stringify never emits a newline): line i belongs to
  // message owner[i - 1], so a rejected line names its message.
  const lines: string[] = [];
  const owner: number[] = [];
  const rejects: Reject[] = [];
  event.Records.forEach((record, m) => {
    const parsed = recordsOf(record.body);
    if ('error' in parsed) {
      rejects.push({ source: { messageId: record.messageId }, line: 0, reason: parsed.error, raw: record.body });
      return;
    }
    for (const r of parsed.records) {
      lines.push(JSON.stringify(r));
      owner.push(m);
    }
  });
  const firstLine = new Map<number, number>();
  owner.forEach((m, i) => firstLine.has(m) || firstLine.set(m, i));
  const { rows, kinds, rejected } = await parseRecords(lines.join('\n'), 'jsonl', table.schema, { skipInvalid: true });
  const rowsOf = new Array<number>(event.Records.length).fill(0);
  owner.forEach((m) => rowsOf[m]++);
  for (const r of rejected) {
    const m = owner[r.line - 1];
    rowsOf[m]--;
    rejects.push({ source: { messageId: event.Records[m].messageId }, line: r.line - firstLine.get(m)!, reason: r.reason, raw: r.raw });
  }
  const withRows = event.Records.filter((_, m) => rowsOf[m] > 0);
  const fail = (records: typeof event.Records, e: unknown, what: string): SQSBatchResponse => {
    log().error(`${what}; the messages will be retried`, { table: table.name, messages: records.length, error: e as Error });
    return { batchItemFailures: records.map((r) => ({ itemIdentifier: r.messageId })) };
  };

  // Rejects go first: nothing is written yet, so a failure here retries the whole batch cleanly.
  try {
    await sendRejects(env.VARVE_REJECTS_QUEUE_URL, table.name, rejects);
  } catch (e) {
    return fail(event.Records, e, 'rejected records could not be sent to the rejects queue');
  }
  if (rejects.length > 0) log().warn('records rejected', { table: table.name, rejected: rejects.length, accepted: rows.length });
  try {
    const landed = await landRows(table, rows, kinds, {
      commitUser: INGEST_USER,
      commitIdentifier: messagesCommitIdentifier('ingest', withRows.map((r) => r.messageId)),
      settings,
    });
    log().info('ingested', { table: table.name, messages: event.Records.length, ...summary(landed) });
  } catch (e) {
    // Messages that were all rejects are done; the ones with rows come back together.
    return fail(withRows, e, 'rows could not be written or committed');
  }
  return { batchItemFailures: [] };
}

async function ingestFile(env: Env, event: S3ObjectCreatedNotificationEvent): Promise<IngestFileResult> {
  const table = await openTable(env, 'ingest');
  const settings = writerSettings(env);
  const { bucket, key, etag } = { bucket: event.detail.bucket.name, key: event.detail.object.key, etag: event.detail.object.etag };
  const inbox = inboxOf(table.store, table.name);
  if (bucket !== inbox.bucket || !key.startsWith(inbox.prefix)) {
    log().warn('an Object Created event outside the table inbox was ignored', { table: table.name, bucket, key, inbox: inbox.prefix });
    return { key, skipped: 'outside-inbox', rows: 0, rejected: 0 };
  }
  const format = formatFromFileName(key);
  if (!format) {
    const reason = `${key} has no extension varve reads; name inbox files *.jsonl (or .ndjson, .json), *.csv or *.parquet`;
    await sendRejects(env.VARVE_REJECTS_QUEUE_URL, table.name, [{ source: { bucket, key, etag }, line: 0, reason, raw: key }]);
    return { key, rows: 0, rejected: 1 };
  }
  const read = await readInboxObject(table.store as S3Store, bucket, key, etag);
  if ('missing' in read) {
    log().warn(`inbox file ${read.missing} before it was read`, { table: table.name, key, etag });
    return { key, skipped: read.missing, rows: 0, rejected: 0 };
  }
  // The key as stored (an event's key may be URL-encoded): rejects and the identifier name it.
  const source = { bucket, key: read.key, etag };
  let parsed;
  try {
    parsed = await parseRecords(read.body, format, table.schema, { skipInvalid: true });
  } catch (e) {
    // Parsing works on bytes already read, so it fails the same way every time (malformed CSV,
    // not Parquet, a Parquet column of a type the table cannot take): the file is the reject.
    const reason = `${key} cannot be read as ${format}: ${(e as Error).message}`;
    await sendRejects(env.VARVE_REJECTS_QUEUE_URL, table.name, [{ source, line: e instanceof RecordValidationError ? (e.line ?? 0) : 0, reason, raw: key }]);
    return { key, rows: 0, rejected: 1 };
  }
  await sendRejects(
    env.VARVE_REJECTS_QUEUE_URL,
    table.name,
    parsed.rejected.map((r) => ({ source, line: r.line, reason: r.reason, raw: r.raw })),
  );
  // Thrown errors make Lambda retry the event (then its DLQ): the identifier keeps it to one commit.
  const landed = await landRows(table, parsed.rows, parsed.kinds, {
    commitUser: INGEST_USER,
    commitIdentifier: objectCommitIdentifier(read.key, etag),
    settings,
  });
  log().info('ingested inbox file', { table: table.name, key, rejected: parsed.rejected.length, ...summary(landed) });
  return { key, rows: parsed.rows.length, rejected: parsed.rejected.length, landed };
}

function summary(l: Landed): Record<string, unknown> {
  return { rows: l.rows, files: l.files, snapshotId: l.snapshot?.id, alreadyCommitted: l.alreadyCommitted, queued: l.queued };
}
