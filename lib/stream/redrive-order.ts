/**
 * Redrive of a table's commit dead-letter queue without turning back time.
 *
 * The rule: per key, the version written last wins, whatever the queues did in between. A batch
 * that failed its receives sits in the commit DLQ while newer batches of the same keys commit; the
 * plain redrive sent it back to the commit queue, where it committed last, with the highest
 * sequence numbers, and its older values won. Here the redrive commits each dead-lettered batch
 * itself, oldest first, and leaves out the rows whose key already has a newer committed version:
 *
 * - **The order token** of a batch is when its writer wrote it: the newest `creationTime` of its
 *   level-0 files, set by the ingest (or any writer) before the commit message was sent. It travels
 *   with the batch in the message, survives the dead-letter move, and is recorded in every APPEND
 *   snapshot's delta manifest with the files.
 * - **Newer versions** of a key are the rows of level-0 files added by APPEND snapshots committed
 *   since the batch was written (a snapshot older than the token cannot hold a file written after
 *   it) whose `creationTime` is later than the batch's token, in the batch's partitions and
 *   buckets. A redriven batch keeps its files' creation times (a rewritten file inherits them), so
 *   batches redriven in one run order among themselves by the same token.
 * - **No commit runs meanwhile.** The commit queue is FIFO with one message group per table, and SQS
 *   hands out no message of a group while one of its messages is in flight: the redrive receives
 *   (holds) the head of the group, or a barrier message it sends when the queue is empty, for the
 *   whole decision and commit, then releases what it held (those were sent after the dead-lettered
 *   batches: committing them afterwards is their order). The commit function polls the same group
 *   and may receive a barrier first: it drops it, and the redrive, finding the group empty again,
 *   sends another (each with its own id). A barrier the redrive could not delete (it crashed)
 *   reaches the commit function after its visibility timeout and is dropped the same way.
 * - **Undecidable** batches stay in the DLQ: when the snapshots since a batch was written have been
 *   expired, the files that could hold newer versions are no longer listed, and the redrive says
 *   so instead of guessing (`ignoreOrder` commits it as written).
 */
import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  type Message,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { randomUUID } from 'node:crypto';
import type * as arrow from 'apache-arrow';
import { InvalidArgumentError, VarveError } from '../errors.js';
import { takeRows, tableToRows } from '../format/columns.js';
import { readDeltaEntries } from '../manifest/scan.js';
import type { CommitBatch, FileChange } from '../snapshot/commit-request.js';
import { commitAppend } from '../table/append-commit.js';
import {
  parseCommitMessage,
  redriveBarrierBody,
  wrongTableInstance,
  type CommitMessage,
} from '../table/commit-message.js';
import { GROUP_COMMIT_USER } from '../table/group-commit.js';
import { openLevel0File } from '../table/level0-file.js';
import { dataFileKey } from '../table/paths.js';
import { releasePending } from '../table/pending-commits.js';
import { readEntry } from '../table/read.js';
import { BATCHES_PROPERTY, batchesProperty, SOURCES_PROPERTY } from '../table/recent-batches.js';
import type { Table } from '../table/table.js';
import { queueId } from './split-message.js';
import { SQS_MAX_BATCH } from './sqs-queue.js';

/** How long the redrive keeps the commit group and the dead letters it works on (s). */
const HOLD_SECONDS = 600;
/** How long it waits for a commit function that holds the group to finish (ms): its timeout and some. */
const GROUP_WAIT_MS = 180_000;

/** What the redrive did with one dead-lettered batch. */
export interface RedrivenBatch {
  messageId: string;
  commitIdentifier: string;
  /** When the batch was written (its order token, ms since the epoch). */
  writtenAt: number;
  outcome: 'committed' | 'already-committed' | 'all-skipped' | 'left' | 'not-a-batch';
  /** Rows committed now. */
  committedRows: number;
  /** Rows left out: their key has a newer committed version. */
  skippedRows: number;
  /** Up to 20 of the skipped keys, as JSON. */
  skippedKeys: string[];
  snapshotId?: number;
  /** Why the batch was left in the DLQ, or went back to the queue as it was. */
  reason?: string;
}

/** What a commit redrive did. */
export interface CommitRedriveResult {
  from: string;
  to: string;
  batches: RedrivenBatch[];
  /** Messages of the commit queue held while the redrive ran, released afterwards. */
  held: number;
}

/** Options of {@link redriveCommits}. */
export interface CommitRedriveOptions {
  /** Commit every batch as written, newer versions or not (the old redrive). @default false */
  ignoreOrder?: boolean;
  /** How long to wait for the commit group (ms). @default 180 s */
  groupWaitMs?: number;
  /** Pause between looks at a busy group (ms). @default 2000 */
  pollMs?: number;
}

/** A redrive that could not take the table's commit group. */
class CommitGroupBusyError extends VarveError {
  constructor(message: string) {
    super(message, { kind: 'unavailable', retryable: true });
  }
}

/**
 * Commits the batches of `table`'s commit DLQ (`dlqUrl`) oldest first, each without the rows whose
 * key has a newer committed version, while holding the commit queue's (`queueUrl`) message group.
 * A message that is not a commit batch goes back to the commit queue as it was (the commit
 * function then rejects it with its reason).
 */
export async function redriveCommits(
  sqs: SQSClient,
  table: Table,
  dlqUrl: string,
  queueUrl: string,
  opts: CommitRedriveOptions = {},
): Promise<CommitRedriveResult> {
  const letters = await receiveAll(sqs, dlqUrl);
  const result: CommitRedriveResult = { from: dlqUrl, to: queueUrl, batches: [], held: 0 };
  if (letters.length === 0) return result;
  const group = holdCommitGroup(sqs, queueUrl, queueId(table.name), opts);
  const held = await group.take();
  result.held = held.length;
  try {
    for (const m of letters) {
      const done = await redriveOne(sqs, table, m, queueUrl, opts);
      result.batches.push(done);
      if (done.outcome !== 'left')
        await sqs.send(new DeleteMessageCommand({ QueueUrl: dlqUrl, ReceiptHandle: m.ReceiptHandle! }));
    }
  } finally {
    await group.release();
    // Dead letters not handled (an error above, or left on purpose) become visible again.
    const handled = new Set(result.batches.filter((b) => b.outcome !== 'left').map((b) => b.messageId));
    await releaseMessages(
      sqs,
      dlqUrl,
      letters.filter((m) => !handled.has(m.MessageId!)),
    );
  }
  return result;
}

async function redriveOne(
  sqs: SQSClient,
  table: Table,
  m: Message,
  queueUrl: string,
  opts: CommitRedriveOptions,
): Promise<RedrivenBatch> {
  const message = await readDeadLetter(sqs, table, m, queueUrl);
  if ('outcome' in message) return message;
  const files = [...message.batch.newFiles, ...message.batch.changelogFiles];
  const writtenAt = Math.max(0, ...files.map((f) => f.file.creationTime));
  const base = {
    messageId: m.MessageId!,
    commitIdentifier: message.commitIdentifier,
    writtenAt,
    skippedKeys: [] as string[],
  };
  let newer = new Set<string>();
  if (!opts.ignoreOrder) {
    const found = await newerKeys(table, message.batch, writtenAt);
    if (found === 'expired') {
      return {
        ...base,
        outcome: 'left',
        committedRows: 0,
        skippedRows: 0,
        reason: `snapshots committed since the batch was written (${new Date(writtenAt).toISOString()}) have expired: which of its keys have newer versions cannot be told; redrive it with --ignore-order to commit it as written`,
      };
    }
    newer = found;
  }
  const kept = await withoutKeys(table, message.batch, newer);
  if (kept.rows === 0) {
    await deleteFiles(table, files);
    await releasePending(table, [message.commitIdentifier]).catch(() => undefined);
    return { ...base, outcome: 'all-skipped', committedRows: 0, skippedRows: kept.skipped, skippedKeys: kept.keys };
  }
  const committed = await commitKept(table, message, kept.batch);
  // The rewritten files replaced written ones: those are no one's now (a file kept as written is committed).
  if (kept.batch !== message.batch && !committed.alreadyCommitted) {
    const committedNames = new Set([...kept.batch.newFiles, ...kept.batch.changelogFiles].map((f) => f.file.fileName));
    await deleteFiles(
      table,
      files.filter((f) => !committedNames.has(f.file.fileName)),
    );
  }
  await releasePending(table, [message.commitIdentifier]).catch(() => undefined);
  return {
    ...base,
    outcome: committed.alreadyCommitted ? 'already-committed' : 'committed',
    committedRows: committed.alreadyCommitted ? 0 : kept.rows,
    skippedRows: kept.skipped,
    skippedKeys: kept.keys,
    snapshotId: committed.snapshot.id,
  };
}

/** The dead letter's commit message; a body that is none (or another table's) goes back to the commit queue as it is, and is reported so. */
async function readDeadLetter(
  sqs: SQSClient,
  table: Table,
  m: Message,
  queueUrl: string,
): Promise<CommitMessage | RedrivenBatch> {
  try {
    const message = parseCommitMessage(m.Body ?? '');
    if (message.table !== table.name)
      throw new InvalidArgumentError(`a commit message of ${message.table} in the commit DLQ of ${table.name}`);
    // Written for a table dropped since: the group commit refuses it to the rejects queue.
    const wrong = wrongTableInstance(table, message);
    if (wrong) throw wrong;
    return message;
  } catch (e) {
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: queueUrl,
        MessageBody: m.Body ?? '',
        MessageGroupId: queueId(table.name),
        MessageDeduplicationId: queueId(`redrive/${m.MessageId}`),
      }),
    );
    return {
      messageId: m.MessageId!,
      commitIdentifier: '',
      writtenAt: 0,
      outcome: 'not-a-batch',
      committedRows: 0,
      skippedRows: 0,
      skippedKeys: [],
      reason: (e as Error).message,
    };
  }
}

/** Commits the kept batch under the written batch's identifier, as the group committer would have. */
function commitKept(table: Table, message: CommitMessage, batch: CommitBatch) {
  return commitAppend(table, [batch], {
    commitUser: GROUP_COMMIT_USER,
    commitIdentifier: message.commitIdentifier,
    schemaId: message.schemaId,
    properties: {
      [BATCHES_PROPERTY]: batchesProperty([message.commitIdentifier]),
      ...(message.sources?.length ? { [SOURCES_PROPERTY]: JSON.stringify(message.sources) } : {}),
    },
  });
}

/**
 * The keys (JSON) of `batch`'s buckets that rows written after `writtenAt` gave newer committed
 * versions, from the level-0 files of the APPEND snapshots committed since; 'expired' when such
 * snapshots may have been expired.
 */
async function newerKeys(table: Table, batch: CommitBatch, writtenAt: number): Promise<Set<string> | 'expired'> {
  const buckets = new Set(batch.newFiles.map((f) => `${f.partition}/${f.bucket}`));
  const keys = new Set<string>();
  const ids = await table.snapshots.listIds();
  let reachedOlder = false;
  for (let i = ids.length - 1; i >= 0; i--) {
    const snapshot = await table.snapshots.tryRead(ids[i]);
    if (!snapshot) continue; // expired while we looked
    if (snapshot.timeMillis < writtenAt) {
      reachedOlder = true;
      break;
    }
    if (snapshot.commitKind !== 'APPEND') continue;
    for (const e of await readDeltaEntries(table.store, table.path, snapshot)) {
      if (
        e.kind !== 'ADD' ||
        e.file.level !== 0 ||
        e.file.creationTime <= writtenAt ||
        !buckets.has(`${e.partition}/${e.bucket}`)
      )
        continue;
      for (const k of keysOf(table, await readEntry(table, e))) keys.add(k);
    }
  }
  // Every snapshot is newer than the batch: one just before them may have held newer rows and be gone.
  if (!reachedOlder && ids.length > 0 && ids[0] > 1) return 'expired';
  return keys;
}

/** The batch without the rows whose key is in `skip`: itself when none is, else rewritten files. */
async function withoutKeys(
  table: Table,
  batch: CommitBatch,
  skip: Set<string>,
): Promise<{ batch: CommitBatch; rows: number; skipped: number; keys: string[] }> {
  const rowsOf = (files: FileChange[]) => files.reduce((n, f) => n + f.file.rowCount, 0);
  if (skip.size === 0) return { batch, rows: rowsOf(batch.newFiles), skipped: 0, keys: [] };
  const skippedKeys = new Set<string>();
  let skipped = 0;
  const rewrite = async (files: FileChange[]): Promise<FileChange[]> => {
    const out: FileChange[] = [];
    for (const f of files) {
      const data = await readEntry(table, f);
      const keys = keysOf(table, data);
      const keep: number[] = [];
      keys.forEach((k, i) => {
        if (skip.has(k)) {
          skippedKeys.add(k);
          if (f.file.level === 0 && batch.newFiles.includes(f)) skipped++;
        } else keep.push(i);
      });
      if (keep.length === keys.length) {
        out.push(f);
        continue;
      }
      if (keep.length === 0) continue;
      const sink = await openLevel0File(
        table,
        { partition: f.partition, bucket: f.bucket, totalBuckets: f.totalBuckets },
        batch.newFiles.includes(f) ? 'data' : 'changelog',
      );
      await sink.add(takeRows(data, Uint32Array.from(keep)));
      const written = await sink.finish();
      // The order token of the batch stays that of its writer.
      out.push({ ...written, file: { ...written.file, creationTime: f.file.creationTime } });
    }
    return out;
  };
  const newFiles = await rewrite(batch.newFiles);
  const changelogFiles = await rewrite(batch.changelogFiles);
  // rowCount keeps the batch's sequence range (the kept rows keep their relative sequence numbers).
  return {
    batch: { rowCount: batch.rowCount, newFiles, changelogFiles },
    rows: rowsOf(newFiles),
    skipped,
    keys: [...skippedKeys].slice(0, 20),
  };
}

/** The primary key of every row of a data file, as JSON. */
function keysOf(table: Table, data: arrow.Table): string[] {
  const names = table.keyFields.map((f) => f.name);
  // BIGINT keys print as numbers while they are exact, else as decimal strings.
  const plain = (v: unknown) => (typeof v === 'bigint' ? (Number.isSafeInteger(Number(v)) ? Number(v) : String(v)) : v);
  return tableToRows(data, table.keyFields).map((r) => JSON.stringify(names.map((n) => plain(r[n]))));
}

async function deleteFiles(table: Table, files: FileChange[]): Promise<void> {
  for (const f of files) await table.store.delete(dataFileKey(table.path, f.partition, f.bucket, f.file.fileName));
}

/** Whether the queue holds no message, visible or in flight (SQS's approximate counts). */
async function queueIsEmpty(sqs: SQSClient, url: string): Promise<boolean> {
  const a = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: url,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  const visible = Number(a.Attributes?.ApproximateNumberOfMessages ?? 0);
  const inFlight = Number(a.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0);
  return visible === 0 && inFlight === 0;
}

/** Every message of a (dead-letter) queue, oldest first, kept invisible for the redrive. */
async function receiveAll(sqs: SQSClient, url: string): Promise<Message[]> {
  const out: Message[] = [];
  for (;;) {
    const r = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: url,
        MaxNumberOfMessages: SQS_MAX_BATCH,
        WaitTimeSeconds: 0,
        VisibilityTimeout: HOLD_SECONDS,
        MessageSystemAttributeNames: ['All'],
      }),
    );
    const messages = r.Messages ?? [];
    if (messages.length === 0) return out;
    out.push(...messages);
  }
}

async function releaseMessages(sqs: SQSClient, url: string, messages: Message[]): Promise<void> {
  for (let i = 0; i < messages.length; i += SQS_MAX_BATCH) {
    const chunk = messages.slice(i, i + SQS_MAX_BATCH);
    await sqs.send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: url,
        Entries: chunk.map((m, k) => ({ Id: String(k), ReceiptHandle: m.ReceiptHandle!, VisibilityTimeout: 0 })),
      }),
    );
  }
}

/**
 * The commit queue's message group, held: `take` receives the head of the group (waiting while a
 * commit function holds it; sending a barrier message when the queue is empty) and keeps it in
 * flight, so SQS hands no message of the group to the commit function; `release` makes the held
 * messages visible again, in their order, and deletes the barriers it holds.
 *
 * The commit function long-polls the same queue, so it may receive a barrier before the redrive
 * does (and drops it): whenever the queue is found empty again, a new barrier (a new id, so FIFO
 * deduplication does not swallow it) is sent. A barrier left behind reaches the commit function
 * and is dropped there.
 */
function holdCommitGroup(sqs: SQSClient, url: string, groupId: string, opts: CommitRedriveOptions) {
  const barrierPrefix = `varve-redrive-barrier-${randomUUID()}`;
  let barriersSent = 0;
  let held: Message[] = [];
  const isBarrier = (m: Message) => (m.Body ?? '').includes(barrierPrefix);
  const waitMs = opts.groupWaitMs ?? GROUP_WAIT_MS;
  return {
    async take(): Promise<Message[]> {
      const until = Date.now() + waitMs;
      for (;;) {
        const r = await sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: url,
            MaxNumberOfMessages: SQS_MAX_BATCH,
            WaitTimeSeconds: 1,
            VisibilityTimeout: HOLD_SECONDS,
            MessageSystemAttributeNames: ['All'],
          }),
        );
        const mine = (r.Messages ?? []).filter((m) => m.Attributes?.MessageGroupId === groupId);
        const others = (r.Messages ?? []).filter((m) => m.Attributes?.MessageGroupId !== groupId);
        if (others.length > 0) await releaseMessages(sqs, url, others);
        if (mine.length > 0) {
          held = mine;
          return mine.filter((m) => !isBarrier(m));
        }
        if (Date.now() > until)
          throw new CommitGroupBusyError(
            `the commit queue's group ${groupId} stayed busy for ${Math.round(waitMs / 1000)} s ` +
              `(a commit function holds it; ${barriersSent} barrier message(s) sent): redrive again`,
          );
        if (await queueIsEmpty(sqs, url)) {
          // Nothing to hold (or a commit function took the last barrier and dropped it): a message
          // of our own takes the group.
          const id = `${barrierPrefix}-${barriersSent++}`;
          await sqs.send(
            new SendMessageCommand({
              QueueUrl: url,
              MessageBody: redriveBarrierBody(id),
              MessageGroupId: groupId,
              MessageDeduplicationId: queueId(id),
            }),
          );
          continue;
        }
        await new Promise((r) => setTimeout(r, opts.pollMs ?? 2000));
      }
    },
    async release(): Promise<void> {
      const barrier = held.filter(isBarrier);
      await releaseMessages(
        sqs,
        url,
        held.filter((m) => !isBarrier(m)),
      );
      if (barrier.length > 0)
        await sqs.send(
          new DeleteMessageBatchCommand({
            QueueUrl: url,
            Entries: barrier.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })),
          }),
        );
      held = [];
    },
  };
}
