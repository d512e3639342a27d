/**
 * Files dropped for ingestion: under `<warehouse prefix>/inbox/<database>/<table>/` in the
 * warehouse bucket (infra/warehouse.ts `inboxPrefix`), announced by S3 through EventBridge
 * (`Object Created`; JSONL, CSV or Parquet by extension). The object is read at the etag the event
 * names, so a file overwritten since is left to the event of its new version. Invalid records go
 * to the rejects queue; a file that cannot be parsed at all is one reject.
 *
 * Once every row of a file is committed (direct mode) or handed to the group commit (queue mode:
 * its data files are written and registered under `pending/`, its commit message is in the commit
 * queue or its DLQ; the rows no longer depend on the object), the object is deleted at the etag
 * read, so a version written since is left to its own event; so is a duplicate event's object. A
 * file that could not be parsed at all stays for the operator (its reject names it). The inbox
 * lifecycle rule (infra/warehouse.ts, 7 days) is the backstop for what a failed delete leaves.
 */
import { DeleteObjectCommand, GetObjectCommand } from '@aws-sdk/client-s3';
import * as v from 'valibot';
import { InvalidArgumentError, RecordValidationError } from '../errors.js';
import { parseJsonText } from '../json.js';
import {
  type ColumnChunk,
  formatFromFileName,
  type InputFormat,
  parseColumnChunks,
  type RejectedRecord,
} from '../table/input.js';
import { objectCommitIdentifier } from '../table/commit-identifiers.js';
import { landedSources, objectSource } from '../table/ingested-sources.js';
import { landRowChunks, type Landed } from '../table/land-rows.js';
import type { Table } from '../table/table.js';
import { landOptions } from './after-commit.js';
import type { WriterSettings } from './env.js';
import { log } from './telemetry.js';
import { sendRejects } from './rejects.js';
import { parseTableIdentifier } from '../schema/parse.js';
import { s3ErrorName, s3Status } from '../store/s3-errors.js';
import { S3Store } from '../store/s3-store.js';
import type { ObjectStore } from '../store/object-store.js';
import type { ByteSource } from '../format/row-group-reader.js';

/** The bucket and key prefix a table's inbox files are dropped under. */
function inboxOf(store: ObjectStore, table: string): { bucket: string; prefix: string } {
  if (!(store instanceof S3Store)) {
    throw new InvalidArgumentError(`inbox files need an S3 warehouse; VARVE_WAREHOUSE is ${store.uri}`);
  }
  const { database, table: name } = parseTableIdentifier(table);
  return { bucket: store.bucket, prefix: `${store.prefix ? `${store.prefix}/` : ''}inbox/${database}/${name}/` };
}

/** What reading an inbox object found: its body as a stream of bytes (read as it is parsed). */
export type InboxRead =
  | { body: AsyncIterable<Uint8Array>; key: string; size?: number }
  | { missing: 'deleted' | 'superseded' };

/**
 * Reads the object at the event's etag. S3 notifications URL-encode keys; when the key as given
 * does not exist, its decoded form is tried. A 412 means the object was overwritten since the
 * event (its own event follows); a 404 that it was deleted.
 */
async function readInboxObject(store: S3Store, bucket: string, key: string, etag: string): Promise<InboxRead> {
  const candidates = [key];
  if (/[%+]/.test(key)) {
    try {
      candidates.push(decodeURIComponent(key.replace(/\+/g, ' ')));
    } catch {
      // Not a valid encoding: the key is what it says.
    }
  }
  for (const k of candidates) {
    try {
      const r = await store.client.send(
        new GetObjectCommand({ Bucket: bucket, Key: k, IfMatch: `"${etag.replace(/"/g, '')}"` }),
      );
      return { body: (r.Body as AsyncIterable<Uint8Array> | undefined) ?? emptyBody(), key: k, size: r.ContentLength };
    } catch (e) {
      if (s3Status(e) === 412 || s3ErrorName(e) === 'PreconditionFailed') return { missing: 'superseded' };
      if (s3Status(e) !== 404) throw e;
    }
  }
  return { missing: 'deleted' };
}

/** What an inbox file's ingestion did (EventBridge ignores a handler's result; logs and tests read it). */
export interface IngestFileResult {
  key: string;
  /** Why nothing was ingested: the file is outside the inbox, gone, overwritten since the event, or landed already (a duplicate event). */
  skipped?: 'outside-inbox' | 'deleted' | 'superseded' | 'duplicate';
  rows: number;
  rejected: number;
  landed?: Landed;
  /** The inbox object was deleted after its rows landed (false: it stays for the lifecycle rule). */
  deleted?: boolean;
}

/**
 * Deletes the inbox object at `etag` (If-Match): a version overwritten since stays for its own
 * event; one gone already is fine. Best effort: the inbox lifecycle rule removes what stays.
 */
export async function deleteInboxObject(store: S3Store, bucket: string, key: string, etag: string): Promise<boolean> {
  try {
    await store.client.send(
      new DeleteObjectCommand({ Bucket: bucket, Key: key, IfMatch: `"${etag.replace(/"/g, '')}"` }),
    );
    return true;
  } catch (e) {
    if (s3Status(e) === 404) return true;
    const superseded = s3Status(e) === 412 || s3ErrorName(e) === 'PreconditionFailed';
    log().warn(
      superseded
        ? 'inbox file overwritten since it was read: left to its own event'
        : 'inbox file not deleted; the inbox lifecycle rule removes it',
      { bucket, key, etag, error: e as Error },
    );
    return false;
  }
}

/** Where an inbox file's rows and rejects go. */
export interface InboxTargets {
  commitUser: string;
  settings: WriterSettings;
  rejectsQueueUrl?: string;
}

/** Ingests the inbox object `bucket/key` at `etag` into `table`; thrown errors make Lambda retry the event. */
export async function ingestInboxObject(
  table: Table,
  bucket: string,
  key: string,
  etag: string,
  to: InboxTargets,
): Promise<IngestFileResult> {
  const inbox = inboxOf(table.store, table.name);
  if (bucket !== inbox.bucket || !key.startsWith(inbox.prefix)) {
    log().warn('an Object Created event outside the table inbox was ignored', {
      table: table.name,
      bucket,
      key,
      inbox: inbox.prefix,
    });
    return { key, skipped: 'outside-inbox', rows: 0, rejected: 0 };
  }
  const format = formatFromFileName(key);
  if (!format) {
    const reason = `${key} has no extension varve reads; name inbox files *.jsonl (or .ndjson, .json), *.csv or *.parquet`;
    await sendRejects(to.rejectsQueueUrl, table.name, [{ source: { bucket, key, etag }, line: 0, reason, raw: key }]);
    return { key, rows: 0, rejected: 1 };
  }
  const read = await readInboxObject(table.store as S3Store, bucket, key, etag);
  if ('missing' in read) {
    log().warn(`inbox file ${read.missing} before it was read`, { table: table.name, key, etag });
    return { key, skipped: read.missing, rows: 0, rejected: 0 };
  }
  // The key as stored (an event's key may be URL-encoded): rejects and the identifier name it.
  const source = { bucket, key: read.key, etag };
  const sourceId = objectSource(read.key, etag);
  const land = landOptions(table, to.settings, to.commitUser, objectCommitIdentifier(read.key, etag), [sourceId]);
  if (
    (await landedSources(table, [sourceId], { queued: to.settings.mode === 'queue', resend: land.enqueue })).size > 0
  ) {
    log().info('a duplicate event of an inbox file that has landed already was ignored', {
      table: table.name,
      key: read.key,
      etag,
    });
    // Its first ingestion may have stopped between landing and the delete.
    return {
      key,
      skipped: 'duplicate',
      rows: 0,
      rejected: 0,
      deleted: await deleteInboxObject(table.store as S3Store, bucket, read.key, etag),
    };
  }
  const parsed = parsedInboxChunks(table, bucket, read, etag, format);
  let landed: Landed;
  try {
    // The identifier (key and etag) keeps a retried event to one commit.
    landed = await landRowChunks(table, parsed.chunks, land);
  } catch (e) {
    if (!parsed.isParseError(e)) throw e;
    const reason = `${key} cannot be read as ${format}: ${(e as Error).message}`;
    await sendRejects(to.rejectsQueueUrl, table.name, [
      { source, line: e instanceof RecordValidationError ? (e.line ?? 0) : 0, reason, raw: key },
    ]);
    return { key, rows: 0, rejected: 1 };
  }
  // After the commit (or hand-off): a retried event re-sends its rejects at worst, never loses them.
  const { rejected } = parsed;
  await sendRejects(
    to.rejectsQueueUrl,
    table.name,
    rejected.map((r) => ({ source, line: r.line, reason: r.reason, raw: r.raw })),
  );
  // Every row committed or queued, every invalid one in the rejects queue with its text.
  const deleted = await deleteInboxObject(table.store as S3Store, bucket, read.key, etag);
  return { key, rows: landed.rows, rejected: rejected.length, landed, deleted };
}

/** An inbox file's rows as column chunks, its invalid rows collected as they pass, and whether an error is the file's own. */
interface ParsedInbox {
  chunks: AsyncIterable<ColumnChunk>;
  rejected: RejectedRecord[];
  /** The parser threw `e` on the file's content (not a read error of the store, not the writer's). */
  isParseError(e: unknown): boolean;
}

/**
 * The file streams through the parser into the writer chunk by chunk: memory holds a chunk and
 * the write buffer, not the file. A read error of the body is the store's (Lambda retries the
 * event); a parse error is the file's and fails the same way every time (malformed CSV, not
 * Parquet, a Parquet column of a type the table cannot take): the file is the reject, and the
 * files written so far are never committed (orphan cleanup removes them).
 */
function parsedInboxChunks(
  table: Table,
  bucket: string,
  read: Extract<InboxRead, { body: unknown }>,
  etag: string,
  format: InputFormat,
): ParsedInbox {
  let readError: { error: unknown } | undefined;
  const body = (async function* () {
    try {
      yield* read.body;
    } catch (e) {
      readError = { error: e };
      throw e;
    }
  })();
  // Parquet is read by range (the footer, then row group by row group), at the etag read: memory
  // holds a row group, not the file. A failed ranged GET is a read error, as a failed body is.
  const input =
    format === 'parquet' && read.size !== undefined
      ? rangedInboxObject(
          table.store as S3Store,
          bucket,
          read.key,
          etag,
          read.size,
          read.body,
          (e) => (readError = { error: e }),
        )
      : body;
  const rejected: RejectedRecord[] = [];
  let parseError: { error: unknown } | undefined;
  const chunks = (async function* () {
    try {
      for await (const chunk of parseColumnChunks(input, format, table.schema, { skipInvalid: true })) {
        for (const r of chunk.rejected) rejected.push(r);
        yield chunk;
      }
    } catch (e) {
      // Only what the parser itself threw; the writer's errors (a store failure) stay retryable.
      if (readError === undefined) parseError = { error: e };
      throw e;
    }
  })();
  return { chunks, rejected, isParseError: (e) => parseError !== undefined && parseError.error === e };
}

async function* emptyBody(): AsyncGenerator<Uint8Array> {}

/** The inbox object as a ranged source (GETs with Range and If-Match); the open body is closed unread. */
function rangedInboxObject(
  store: S3Store,
  bucket: string,
  key: string,
  etag: string,
  size: number,
  body: AsyncIterable<Uint8Array>,
  onError: (e: unknown) => void,
): ByteSource {
  (body as { destroy?: () => void }).destroy?.();
  return {
    size,
    name: key,
    async read(start, end) {
      if (end <= start) return new Uint8Array(0);
      try {
        const r = await store.client.send(
          new GetObjectCommand({
            Bucket: bucket,
            Key: key,
            Range: `bytes=${start}-${end - 1}`,
            IfMatch: `"${etag.replace(/"/g, '')}"`,
          }),
        );
        return r.Body ? await r.Body.transformToByteArray() : new Uint8Array(0);
      } catch (e) {
        onError(e);
        throw e;
      }
    },
  };
}

/** An EventBridge `Object Created` event of S3, as far as the inbox reads it. */
const ObjectCreatedEventSchema = v.looseObject({
  'detail-type': v.literal('Object Created'),
  detail: v.looseObject({
    bucket: v.looseObject({ name: v.string() }),
    object: v.looseObject({ key: v.string(), etag: v.optional(v.unknown()) }),
  }),
});

/** The `Object Created` event a message body holds (an inbox event moved back from the ingest DLQ by `varve redrive`), if it is one. */
export function inboxEventOf(body: string): { bucket: string; key: string; etag: string } | undefined {
  if (!body.includes('Object Created')) return undefined;
  let value: unknown;
  try {
    value = parseJsonText(body);
  } catch {
    return undefined;
  }
  const r = v.safeParse(ObjectCreatedEventSchema, value);
  if (!r.success) return undefined;
  const { bucket, object } = r.output.detail;
  return { bucket: bucket.name, key: object.key, etag: typeof object.etag === 'string' ? object.etag : '' };
}
