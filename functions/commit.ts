/**
 * The group-commit Lambda: consumes the table's commit FIFO queue (one message group per table,
 * so one invocation at a time, in order) and folds every writer batch of the invocation into ONE
 * APPEND snapshot — one commit per second per table is S3's practical ceiling, so batching, not
 * racing, is how ingestion scales. Then it puts `Snapshot Committed` on the bus and enqueues
 * compaction jobs for the buckets that need one.
 *
 * Idempotent twice over: the commit identifier is the hash of the invocation's message ids (a
 * retried invocation finds its snapshot), and each batch's own identifier is recorded in the
 * snapshot, so a batch seen again in another invocation is not committed again.
 *
 * FIFO partial-batch rules: a failure reports the first message not committed and every later one.
 */
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { CorruptMetadataError } from '../lib/errors.js';
import type { Table } from '../lib/table/table.js';
import { afterCommit, commitAppend, touchedBy } from './shared/commit-append.js';
import { parseCommitMessage, type CommitMessage } from './shared/commit-message.js';
import type { Env, WriterSettings } from './shared/env.js';
import { messagesCommitIdentifier } from './shared/identifiers.js';
import { log } from './shared/observability.js';
import { BATCHES_PROPERTY, batchesProperty, recentBatchesOf, type RecentBatches } from './shared/recent-batches.js';
import { openTable } from './shared/tables.js';

/** The commit user of the group commit: one per table, stable across invocations. */
export const GROUP_COMMIT_USER = 'group-commit';

interface Queued {
  record: SQSRecord;
  message: CommitMessage;
}

/** The commit handler for the environment `env` (VARVE_COMPACT_QUEUE_URL, VARVE_EVENT_BUS_NAME optional). */
export function createCommitHandler(env: Env = process.env) {
  return async (event: SQSEvent, _context?: Context): Promise<SQSBatchResponse> => {
    const table = await openTable(env, 'commit');
    const settings: WriterSettings = { mode: 'direct', compactQueueUrl: env.VARVE_COMPACT_QUEUE_URL, eventBusName: env.VARVE_EVENT_BUS_NAME };
    const { queued, poisonAt } = parseAll(table, event.Records);
    let failedAt = poisonAt;
    const recent = recentBatchesOf(table);
    let start = 0;
    for (const run of schemaRuns(queued)) {
      try {
        await commitRun(table, run, settings, recent);
      } catch (e) {
        log().error('group commit failed; its batches and every later one will be retried in order', { table: table.name, batches: run.length, error: e as Error });
        failedAt = start;
        break;
      }
      start += run.length;
    }
    return { batchItemFailures: event.Records.slice(failedAt).map((r) => ({ itemIdentifier: r.messageId })) };
  };
}

/** Lambda entry of the commit function. */
export const handler = createCommitHandler();

/** The messages up to the first one that is not a commit message of this table (which, and all after it, fail). */
function parseAll(table: Table, records: SQSRecord[]): { queued: Queued[]; poisonAt: number } {
  const queued: Queued[] = [];
  for (let i = 0; i < records.length; i++) {
    try {
      const message = parseCommitMessage(records[i].body);
      if (message.table !== table.name) {
        throw new CorruptMetadataError(`a commit message for ${message.table} reached the commit queue of ${table.name}; each table needs its own commit queue`);
      }
      queued.push({ record: records[i], message });
    } catch (e) {
      // After maxReceiveCount tries SQS moves it to the dead-letter queue, which unblocks the table.
      log().error('a commit-queue message cannot be committed', { table: table.name, messageId: records[i].messageId, error: e as Error });
      return { queued, poisonAt: i };
    }
  }
  return { queued, poisonAt: records.length };
}

/** Consecutive messages written with the same schema: each run is one snapshot (almost always one run). */
function schemaRuns(queued: Queued[]): Queued[][] {
  const runs: Queued[][] = [];
  for (const q of queued) {
    const last = runs[runs.length - 1];
    if (last && last[0].message.schemaId === q.message.schemaId) last.push(q);
    else runs.push([q]);
  }
  return runs;
}

async function commitRun(table: Table, run: Queued[], settings: WriterSettings, recent: RecentBatches): Promise<void> {
  await recent.refresh();
  const seen = new Set<string>();
  const fresh = run.filter(({ message: m }) => {
    // Committed before (a retry) or twice in this run (a re-send SQS did not deduplicate).
    if (recent.snapshotOf(m.commitIdentifier) !== undefined || seen.has(m.commitIdentifier)) return false;
    seen.add(m.commitIdentifier);
    return true;
  });
  if (fresh.length < run.length) {
    log().info('batches already committed were skipped', { table: table.name, skipped: run.length - fresh.length });
  }
  if (fresh.length === 0) return;
  const batches = fresh.map((q) => q.message.batch);
  const result = await commitAppend(table, batches, {
    commitUser: GROUP_COMMIT_USER,
    commitIdentifier: messagesCommitIdentifier('commit', run.map((q) => q.record.messageId)),
    schemaId: run[0].message.schemaId,
    properties: { [BATCHES_PROPERTY]: batchesProperty(fresh.map((q) => q.message.commitIdentifier)) },
  });
  recent.note(result.snapshot);
  log().info('group commit', {
    table: table.name,
    batches: batches.length,
    snapshotId: result.snapshot.id,
    alreadyCommitted: result.alreadyCommitted,
  });
  await afterCommit(table, result.snapshot, touchedBy(batches), settings);
}
