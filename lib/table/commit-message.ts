/**
 * Commit messages: one writer's prepared batch (file metadata, never rows) handed to the group
 * commit of its table instead of committed by the writer. On AWS they travel on the table's commit
 * FIFO queue (lib/aws/queues.ts: MessageGroupId = the table, so one commit function folds
 * them in order; MessageDeduplicationId = the batch's commit identifier).
 */
import { CorruptMetadataError, InvalidArgumentError } from '../errors.js';
import type { CommitBatch } from '../snapshot/commit.js';

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
}

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

/** Parses a commit message body; throws CorruptMetadataError for anything that is not one. */
export function parseCommitMessage(body: string): CommitMessage {
  let m: Partial<CommitMessage> & { v?: unknown };
  try {
    m = JSON.parse(body) as typeof m;
  } catch (e) {
    throw new CorruptMetadataError(`a commit-queue message is not JSON (${(e as Error).message}): ${body.slice(0, 80)}`, { cause: e });
  }
  const b = m.batch;
  if (
    m.v !== 1 ||
    typeof m.table !== 'string' ||
    typeof m.commitIdentifier !== 'string' ||
    !Number.isInteger(m.schemaId) ||
    !b ||
    !Number.isInteger(b.rowCount) ||
    !Array.isArray(b.newFiles) ||
    !Array.isArray(b.changelogFiles)
  ) {
    throw new CorruptMetadataError(`not a varve commit message (it needs v: 1, table, schemaId, commitIdentifier and batch): ${body.slice(0, 120)}`);
  }
  const sources = Array.isArray(m.sources) && m.sources.every((x) => typeof x === 'string') ? m.sources : undefined;
  return { table: m.table, schemaId: m.schemaId!, commitIdentifier: m.commitIdentifier, batch: b, ...(sources ? { sources } : {}) };
}
