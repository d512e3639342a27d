/**
 * Commit messages: one writer's prepared batch (file metadata, never rows) handed to the group
 * commit of its table instead of committed by the writer. On AWS they travel on the table's commit
 * FIFO queue (lib/aws/queues.ts: MessageGroupId = the table, so one commit function folds
 * them in order; MessageDeduplicationId = the batch's commit identifier).
 */
import * as v from 'valibot';
import { InvalidArgumentError, TableNotFoundError } from '../errors.js';
import { jsonInt, jsonObject, parseJsonMessage, parseJsonText, type JsonSchema } from '../json.js';
import { parseDataFileMeta } from '../manifest/metadata-json.js';
import type { CommitBatch } from '../snapshot/commit.js';
import type { Table } from './table.js';

/** One writer's batch, addressed to a table's commit function. */
export interface CommitMessage {
  /** `database.table`. */
  table: string;
  /** The schema the batch's files were written with. */
  schemaId: number;
  /** Derived from the writer's input; the commit function also skips a batch it finds already committed. */
  commitIdentifier: string;
  batch: CommitBatch;
  /** The sources whose rows the batch holds (`sqs:<message id>`, `s3:<key>@<etag>`), when the writer knows them. */
  sources?: string[];
  /**
   * When the writer's lookup that found `schemaId` the table's newest schema started (epoch ms),
   * when the writer knows it (a function's, lib/aws/tables.ts): a cold commit function opens the
   * table at that schema while the lookup is younger than a warm container's table cache.
   */
  schemaSeenAt?: number;
  /**
   * The UUID of the table the batch was written for (its schema-0's `tableUuid`), when it has one:
   * a table dropped and created again at the same location has another, and the group commit
   * refuses a batch of the dropped one (its files went with it: wrongTableInstance).
   */
  tableUuid?: string;
}

const fileChanges = v.array(
  v.looseObject({
    partition: v.string(),
    bucket: jsonInt,
    totalBuckets: jsonInt,
    file: v.pipe(
      jsonObject,
      v.transform((f) => parseDataFileMeta(f, 'a commit-queue message')),
    ),
  }),
);

/** A commit message as sent (`v: 1`); `sources`, `schemaSeenAt` and `tableUuid` are absent in messages of older writers. */
const CommitMessageSchema: JsonSchema<CommitMessage> = v.looseObject({
  v: v.literal(1),
  table: v.string(),
  schemaId: jsonInt,
  commitIdentifier: v.string(),
  batch: v.looseObject({ rowCount: jsonInt, newFiles: fileChanges, changelogFiles: fileChanges }),
  sources: v.optional(v.array(v.string())),
  schemaSeenAt: v.optional(jsonInt),
  tableUuid: v.optional(v.string()),
});

/** SQS's message size limit (1 MiB since 2025), less room for the envelope. */
export const MAX_COMMIT_MESSAGE_BYTES = 1_000_000;

/** The body of a commit message; throws InvalidArgumentError when it is larger than a queue message holds. */
export function encodeCommitMessage(m: CommitMessage): string {
  const body = JSON.stringify({ v: 1, ...m });
  if (Buffer.byteLength(body) > MAX_COMMIT_MESSAGE_BYTES) {
    throw new InvalidArgumentError(
      `the batch for ${m.table} lists ${m.batch.newFiles.length + m.batch.changelogFiles.length} files, ` +
        `${Buffer.byteLength(body)} bytes of metadata: more than one commit-queue message holds (${MAX_COMMIT_MESSAGE_BYTES}); ` +
        'lower the ingest batch size so that a batch touches fewer buckets, or use direct commit mode',
    );
  }
  return body;
}

const RedriveBarrierSchema = v.object({ varveRedriveBarrier: v.string() });

/**
 * The body of a barrier message: `varve redrive` (lib/stream/redrive-order.ts) sends one to the
 * table's commit group when the group is empty and holds it, so that no commit runs while it
 * decides. A commit function that receives a barrier first (it polls the same group) drops it.
 */
export function redriveBarrierBody(id: string): string {
  return JSON.stringify({ varveRedriveBarrier: id });
}

/** Whether a commit-queue message body is a redrive barrier (to drop, not to commit or reject). */
export function isRedriveBarrier(body: string): boolean {
  try {
    return v.is(RedriveBarrierSchema, parseJsonText(body));
  } catch {
    return false;
  }
}

/** Parses a commit message body; throws CorruptMetadataError for anything that is not one. */
export function parseCommitMessage(body: string): CommitMessage {
  const m = parseJsonMessage(body, CommitMessageSchema, 'commit-queue message');
  const b = m.batch;
  const batch: CommitBatch = { rowCount: b.rowCount, newFiles: b.newFiles, changelogFiles: b.changelogFiles };
  return {
    table: m.table,
    schemaId: m.schemaId,
    commitIdentifier: m.commitIdentifier,
    batch,
    ...(m.sources ? { sources: m.sources } : {}),
    ...(m.schemaSeenAt !== undefined ? { schemaSeenAt: m.schemaSeenAt } : {}),
    ...(m.tableUuid !== undefined ? { tableUuid: m.tableUuid } : {}),
  };
}

/**
 * Why commit message `m` can never be committed into `table` (as opened by its committer): it
 * was written for another table at the same location, dropped since (another `tableUuid`), whose
 * files the drop deleted. Undefined when it is this table's, or when either side has no UUID
 * (an older writer's message, a table created before UUIDs): nothing tells them apart then.
 */
export function wrongTableInstance(table: Table, m: CommitMessage): TableNotFoundError | undefined {
  const now = table.schema.tableUuid;
  if (m.tableUuid === undefined || now === undefined || m.tableUuid === now) return undefined;
  const files = [...m.batch.newFiles, ...m.batch.changelogFiles].map((c) => c.file.fileName);
  const shown = files.length > 5 ? [...files.slice(0, 5), `and ${files.length - 5} more`] : files;
  return new TableNotFoundError(
    m.table,
    `batch ${m.commitIdentifier} was written for table ${m.table} with UUID ${m.tableUuid}, which was dropped; ` +
      `the table now at ${table.path} is another one (UUID ${now}). Its ${files.length} files (${shown.join(', ')}) ` +
      'went with the dropped table: nothing was committed. Ingest its sources again if they belong in the new table',
  );
}
