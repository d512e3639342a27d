/**
 * The write path of a deployed writer (ingest, a stream sink into a table): validated rows become
 * level-0 files per bucket; then the writer either commits them itself (direct) or hands the
 * prepared batch — file metadata, never rows — to its table's group commit (`enqueue`: on AWS the
 * commit FIFO queue), which folds many writers' batches into one snapshot.
 */
import type * as arrow from 'apache-arrow';
import { PartiallyLandedError } from '../errors.js';
import type { Row, RowKindByte } from '../schema/types.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import {
  commitAppend,
  commitAppendOnBase,
  deleteBatchFiles,
  type AfterAppend,
  type AppendCommitted,
} from './append-commit.js';
import type { CommitBatch, CommitOptions } from '../snapshot/commit.js';
import { encodeCommitMessage, type CommitMessage } from './commit-message.js';
import { registerPending } from './pending-commits.js';
import { recentBatchesOf } from './recent-batches.js';
import type { Table } from './table.js';

/** How a batch of rows is written and committed. */
export interface LandOptions {
  commitUser: string;
  /** Derived from the input: a retried call commits nothing twice. */
  commitIdentifier: string;
  /** The sources of the rows (`sqs:<message id>`, `s3:<key>@<etag>`), recorded with the commit (SOURCES_PROPERTY). */
  sources?: string[];
  /** Hands the batch to the group commit instead of committing it here. */
  enqueue?: (message: CommitMessage) => Promise<void>;
  /** Direct mode: runs after the commit landed (also when an earlier attempt had made it). */
  afterCommit?: AfterAppend;
  commitOptions?: Partial<CommitOptions>;
}

/** Rows with their kinds, one piece of an input. */
export interface RowChunk {
  rows: Row[];
  kinds: RowKindByte[];
}

/** Rows as Arrow columns: the table's columns and an optional `_VALUE_KIND` (TableWriter.writeArrow). */
export interface ColumnRowChunk {
  table: arrow.Table;
}

/** What landing rows did. */
export interface Landed {
  rows: number;
  /** Data and changelog files written. */
  files: number;
  /** Direct mode: the snapshot holding the rows (also when an earlier attempt had committed them). */
  snapshot?: Snapshot;
  /** Direct mode: an earlier attempt had committed these rows; nothing was committed now. */
  alreadyCommitted?: boolean;
  /** The batch was handed to the group commit. */
  queued?: boolean;
}

/** Writes rows (with their kinds) to level-0 files and commits or enqueues them (see the file comment). */
export async function landRows(table: Table, rows: Row[], kinds: RowKindByte[], opts: LandOptions): Promise<Landed> {
  return landRowChunks(table, [{ rows, kinds }], opts);
}

/**
 * `landRows` over rows that arrive in chunks (a file parsed as it is read): each chunk goes into
 * the writer, whose buffer (`write-buffer-size`) spills or flushes as it fills, so memory holds a
 * chunk and the buffer, not the input. All chunks land as one batch, in one commit; a chunk source
 * that throws leaves nothing committed.
 */
export async function landRowChunks(
  table: Table,
  chunks: Iterable<RowChunk | ColumnRowChunk> | AsyncIterable<RowChunk | ColumnRowChunk>,
  opts: LandOptions,
): Promise<Landed> {
  const writer = table.newWriter({ commitUser: opts.commitUser });
  let rowCount = 0;
  let batch;
  try {
    for await (const chunk of chunks) {
      if ('table' in chunk) {
        if (chunk.table.numRows === 0) continue;
        await writer.writeArrow(chunk.table);
        rowCount += chunk.table.numRows;
        continue;
      }
      if (chunk.rows.length === 0) continue;
      await writer.write(chunk.rows, chunk.kinds);
      rowCount += chunk.rows.length;
    }
    if (rowCount === 0) return { rows: 0, files: 0 };
    batch = await writer.prepareCommit();
  } finally {
    await writer.close();
  }
  const files = batch.newFiles.length + batch.changelogFiles.length;
  if (files === 0) return { rows: rowCount, files: 0 };

  if (opts.enqueue) {
    const message: CommitMessage = {
      table: table.name,
      schemaId: table.schema.id,
      commitIdentifier: opts.commitIdentifier,
      batch,
      ...(opts.sources?.length ? { sources: opts.sources } : {}),
      ...(table.schema.tableUuid !== undefined ? { tableUuid: table.schema.tableUuid } : {}),
    };
    // Registered before it is sent: however long the message waits (a dead-letter queue
    // included), orphan cleanup keeps these files until the group commit has committed them. With
    // the message, for a redelivery of the input to send it should this writer stop before it does.
    await registerPending(table, opts.commitIdentifier, batch, {
      sources: opts.sources,
      message: encodeCommitMessage(message),
    });
    await opts.enqueue(message);
    return { rows: rowCount, files, queued: true };
  }

  const committed = await commitDirect(table, batch, opts).catch(async (e: unknown) => {
    // Some sources landed in another batch: these files will never be committed.
    if (e instanceof PartiallyLandedError) await deleteBatchFiles(table, [batch]);
    throw e;
  });
  // A retry of a call that had committed: the files just written are referenced by nothing.
  if (committed.alreadyCommitted || committed.nothingLeft) await deleteBatchFiles(table, [batch]);
  // Run again on a retry too: the first attempt may have failed right after its commit.
  await opts.afterCommit?.(committed);
  const alreadyCommitted = committed.alreadyCommitted || committed.nothingLeft === true;
  return { rows: rowCount, files, snapshot: committed.snapshot, alreadyCommitted };
}

/**
 * The direct commit of one batch. With sources, the commit reads the table's deduplication window
 * (ingested-sources.ts; once per process) and is planned on its base as the group commit's is: a batch whose every source landed meanwhile (another committer's, found
 * after a lost race) commits nothing, one only some of whose sources did throws
 * PartiallyLandedError (its caller, which still holds the input, lands the others again:
 * ingest-messages.ts), and the snapshot carries the window's checkpoint, so that a cold container
 * reads the window from it (window-checkpoint.ts) instead of snapshot by snapshot.
 */
async function commitDirect(table: Table, batch: CommitBatch, opts: LandOptions): Promise<AppendCommitted> {
  const spec = {
    commitUser: opts.commitUser,
    commitIdentifier: opts.commitIdentifier,
    commitOptions: opts.commitOptions,
  };
  const sources = opts.sources ?? [];
  if (sources.length === 0) return commitAppend(table, [batch], spec);
  const recent = recentBatchesOf(table);
  let landed = new Map<string, number | undefined>();
  const committed = await commitAppendOnBase(
    table,
    async (base) => {
      // A message delivered twice at once reaches two invocations unseen by the ingest's check
      // (which looks only at redelivered messages): the window is read here in any case, down
      // from the base (read already, through the committer's cache: no request of its own).
      await recent.readThrough(base?.id);
      landed = new Map();
      for (const s of sources) if (recent.snapshotOf(s) !== undefined) landed.set(s, recent.snapshotOf(s));
      if (landed.size > 0) return { batches: [] };
      return { batches: [batch], properties: recent.commitProperties(sources) };
    },
    spec,
  );
  if (committed.nothingLeft && landed.size > 0 && landed.size < sources.length && !committed.alreadyCommitted) {
    throw new PartiallyLandedError(
      opts.commitIdentifier,
      landed,
      sources.filter((s) => !landed.has(s)),
    );
  }
  if (!committed.nothingLeft) {
    recent.note(committed.snapshot);
    return committed;
  }
  // Landed by another commit: the result names its snapshot, as a retry's names its own.
  const holder = await table.commitSnapshots.tryRead(recent.snapshotOf(sources[0]) ?? committed.snapshot.id);
  return { ...committed, snapshot: holder ?? committed.snapshot };
}
