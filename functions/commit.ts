/**
 * The group-commit Lambda: consumes the table's commit FIFO queue (one message group per table,
 * so one invocation at a time, in order) and folds every writer batch of the invocation into one
 * APPEND snapshot (lib/table/group-commit.ts), then puts `Snapshot Committed` on the bus and
 * enqueues compaction jobs. A message that can never be committed (not a commit message of this
 * table, or a batch whose files are gone) goes to the rejects queue with its reason, so it never
 * holds back the messages behind it (a `varve redrive` barrier message is dropped); any other failure reports the first message not committed
 * and every later one (Powertools' FIFO processor), to be retried in order.
 */
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { CorruptMetadataError } from '../lib/errors.js';
import { isRedriveBarrier, parseCommitMessage } from '../lib/table/commit-message.js';
import { GroupCommit, type QueuedCommit } from '../lib/table/group-commit.js';
import { afterAppend } from '../lib/aws/after-commit.js';
import type { Env } from '../lib/aws/env.js';
import { processFifoBatch } from './shared/fifo-batch.js';
import { thenExport } from '../lib/aws/glue.js';
import { instrumented, log } from './shared/observability.js';
import { sendRejects } from '../lib/aws/rejects.js';
import { commitCachesOf, messageTableUuids, newestSeenSchema, openTable, tableNameOf } from '../lib/aws/tables.js';
export { GROUP_COMMIT_USER } from '../lib/table/group-commit.js';

/** The commit handler for the environment `env` (VARVE_REJECTS_QUEUE_URL, VARVE_COMPACT_QUEUE_URL, VARVE_EVENT_BUS_NAME). */
export function createCommitHandler(env: Env = process.env) {
  return async (event: SQSEvent, context?: Context): Promise<SQSBatchResponse> => {
    const tableName = tableNameOf(env, 'commit');
    const queued: QueuedCommit[] = [];
    const invalid = new Map<string, Error>();
    const barriers = new Set<string>();
    for (const { messageId: id, body } of event.Records) {
      if (isRedriveBarrier(body)) {
        barriers.add(id);
        continue;
      }
      try {
        const message = parseCommitMessage(body);
        if (message.table !== tableName)
          throw new CorruptMetadataError(
            `a commit message for ${message.table} reached the commit queue of ${tableName}; each table needs its own commit queue`,
          );
        queued.push({ id, message });
      } catch (e) {
        invalid.set(id, e as Error);
      }
    }
    // A cold container opens the table at the schema its newest writer found (tables.ts openAtSeenSchema);
    // a warm one opens it again when a message names another table UUID (dropped and created again).
    const messages = queued.map((q) => q.message);
    const table = await openTable(env, 'commit', undefined, newestSeenSchema(messages), messageTableUuids(messages));
    const group = new GroupCommit(table, queued, {
      afterCommit: afterAppend(table, {
        compactQueueUrl: env.VARVE_COMPACT_QUEUE_URL,
        eventBusName: env.VARVE_EVENT_BUS_NAME,
      }),
      commitOptions: commitCachesOf(table),
    });
    return thenExport(
      env,
      table,
      processFifoBatch(
        event,
        async ({ messageId: id, body }) => {
          if (barriers.has(id)) {
            // `varve redrive` sent it to hold the group and will send another: nothing to commit.
            log().info('dropped a redrive barrier message', { table: table.name, messageId: id });
            return;
          }
          try {
            const outcome = invalid.has(id) ? undefined : await group.settle(id);
            const refused = invalid.get(id) ?? outcome?.refused.get(id);
            if (refused) {
              log().error('a commit-queue message can never be committed; it goes to the rejects queue', {
                table: table.name,
                messageId: id,
                error: refused,
              });
              await sendRejects(env.VARVE_REJECTS_QUEUE_URL, table.name, [
                { source: { messageId: id }, line: 0, reason: refused.message, raw: body },
              ]);
            } else if (outcome?.ids[0] === id)
              log().info('group commit', {
                table: table.name,
                batches: outcome.ids.length,
                skipped: outcome.skipped,
                snapshotId: outcome.committed?.snapshot.id,
              });
          } catch (e) {
            log().error('a commit-queue message was not committed; it and every later one will be retried in order', {
              table: table.name,
              messageId: id,
              error: e as Error,
            });
            throw e;
          }
        },
        context,
      ),
    );
  };
}

/** Lambda entry of the commit function. */
export const handler = instrumented(createCommitHandler());
