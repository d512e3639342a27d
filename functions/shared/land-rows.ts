/**
 * The write path of a function (ingest, a reader's table sink): validated rows become level-0
 * files per bucket; then the writer either commits them itself (direct mode) or sends the
 * prepared batch — file metadata, never rows — to the table's commit FIFO queue, where the commit
 * function folds many writers' batches into one snapshot (queue mode, the group commit).
 */
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import type { Snapshot } from '../../lib/snapshot/snapshot.js';
import type { Row, RowKindByte } from '../../lib/schema/types.js';
import type { Table } from '../../lib/table/table.js';
import { sqsClient } from './aws-clients.js';
import { afterCommit, commitAppend, deleteBatchFiles, touchedBy } from './commit-append.js';
import { encodeCommitMessage } from './commit-message.js';
import type { WriterSettings } from './env.js';

/** How a batch of rows is written and committed. */
export interface LandOptions {
  commitUser: string;
  /** Derived from the input: a retried call commits nothing twice. */
  commitIdentifier: string;
  settings: WriterSettings;
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
  /** Queue mode: the batch is on the commit queue. */
  queued?: boolean;
}

/** Writes rows (with their kinds) to level-0 files and commits or enqueues them (see the file comment). */
export async function landRows(table: Table, rows: Row[], kinds: RowKindByte[], opts: LandOptions): Promise<Landed> {
  if (rows.length === 0) return { rows: 0, files: 0 };
  const writer = table.newWriter({ commitUser: opts.commitUser });
  let batch;
  try {
    await writer.write(rows, kinds);
    batch = await writer.prepareCommit();
  } finally {
    await writer.close();
  }
  const files = batch.newFiles.length + batch.changelogFiles.length;
  if (files === 0) return { rows: rows.length, files: 0 };

  if (opts.settings.mode === 'queue') {
    const m = encodeCommitMessage({ table: table.name, schemaId: table.schema.id, commitIdentifier: opts.commitIdentifier, batch });
    await sqsClient().send(
      new SendMessageCommand({ QueueUrl: opts.settings.commitQueueUrl, MessageBody: m.body, MessageGroupId: m.groupId, MessageDeduplicationId: m.dedupId }),
    );
    return { rows: rows.length, files, queued: true };
  }

  const result = await commitAppend(table, [batch], { commitUser: opts.commitUser, commitIdentifier: opts.commitIdentifier });
  // A retry of a call that had committed: the files just written are referenced by nothing.
  if (result.alreadyCommitted) await deleteBatchFiles(table, [batch]);
  // Announced again on a retry too: the first attempt may have failed right after its commit.
  await afterCommit(table, result.snapshot, touchedBy([batch]), opts.settings);
  return { rows: rows.length, files, snapshot: result.snapshot, alreadyCommitted: result.alreadyCommitted };
}
