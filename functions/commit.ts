/**
 * The group-commit Lambda: consumes the table's commit FIFO queue (one message group per table,
 * so one invocation at a time, in order) and folds every writer batch of the invocation into one
 * APPEND snapshot (lib/table/group-commit.ts), then puts `Snapshot Committed` on the bus and
 * enqueues compaction jobs for the buckets that need one. A failure reports the first message not
 * committed and every later one (Powertools' FIFO processor).
 */
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { CorruptMetadataError } from '../lib/errors.js';
import { parseCommitMessage } from '../lib/table/commit-message.js';
import { GroupCommit, type QueuedCommit } from '../lib/table/group-commit.js';
import type { Table } from '../lib/table/table.js';
import { afterAppend } from './shared/after-commit.js';
import type { Env } from './shared/env.js';
import { processFifoBatch } from './shared/fifo-batch.js';
import { log } from './shared/observability.js';
import { commitCachesOf, openTable } from './shared/tables.js';
export { GROUP_COMMIT_USER } from '../lib/table/group-commit.js';

/** The commit handler for the environment `env` (VARVE_COMPACT_QUEUE_URL, VARVE_EVENT_BUS_NAME optional). */
export function createCommitHandler(env: Env = process.env) {
  return async (event: SQSEvent, context?: Context): Promise<SQSBatchResponse> => {
    const table = await openTable(env, 'commit');
    const queued = parseUntilPoison(table, event.Records);
    const group = new GroupCommit(table, queued, {
      afterCommit: afterAppend(table, { compactQueueUrl: env.VARVE_COMPACT_QUEUE_URL, eventBusName: env.VARVE_EVENT_BUS_NAME }),
      commitOptions: commitCachesOf(table),
    });
    return processFifoBatch(event, async (record) => {
      try {
        const { ids, committed, skipped } = await group.settle(record.messageId);
        if (ids[0] === record.messageId) log().info('group commit', { table: table.name, batches: ids.length, skipped, snapshotId: committed?.snapshot.id });
      } catch (e) {
        log().error('a commit-queue message was not committed; it and every later one will be retried in order', { table: table.name, messageId: record.messageId, error: e as Error });
        throw e;
      }
    }, context);
  };
}

/** Lambda entry of the commit function. */
export const handler = createCommitHandler();
/** The commit messages up to the first record that is not one for this table. */
function parseUntilPoison(table: Table, records: SQSRecord[]): QueuedCommit[] {
  const queued: QueuedCommit[] = [];
  for (const record of records) {
    try {
      const message = parseCommitMessage(record.body);
      if (message.table !== table.name) {
        throw new CorruptMetadataError(`a commit message for ${message.table} reached the commit queue of ${table.name}; each table needs its own commit queue`);
      }
      queued.push({ id: record.messageId, message });
    } catch (e) {
      log().error('a commit-queue message cannot be committed', { table: table.name, messageId: record.messageId, error: e as Error });
      break;
    }
  }
  return queued;
}
