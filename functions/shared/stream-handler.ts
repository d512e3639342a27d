/**
 * Lambda handlers for a consumer's split queue (SQS FIFO event source): each record is one split
 * message, delivered in order through the same code as the in-process reader. Partial batch
 * response with Powertools' FIFO processor and `skipGroupOnError` (fifo-batch.ts): a failed split
 * and every later record of its group are reported, other groups go on. The table and consumer
 * come from VARVE_WAREHOUSE, VARVE_TABLE and VARVE_CONSUMER_ID; the table is opened through the
 * configured catalog (VARVE_CATALOG_TABLE) and kept in the process's table cache (tables.ts).
 */
import { randomUUID } from 'node:crypto';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { InvalidArgumentError, SplitFenceHeldError, SplitFenceLostError } from '../../lib/errors.js';
import { parseSplitMessage } from '../../lib/stream/split-message.js';
import {
  beginSplitAttempt,
  deadLetteredAhead,
  endSplitAttempt,
  markSplitDeadLettered,
  recordSplitFailure,
  SplitBudgetSpentError,
  SPLIT_FAILURE_BUDGET,
  type FailedSplit,
} from '../../lib/stream/split-failures.js';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { sqsClient } from './aws-clients.js';
import type { Table } from '../../lib/table/table.js';
import { checkConsumerId } from '../../lib/snapshot/consumer.js';
import { BatchDelivery, SinkTimeoutError, SplitGapError, type ChangeBatch, type StreamSink } from '../../lib/stream/delivery.js';
import { callbackSink, type Change } from '../../lib/stream/sinks.js';
import { SplitFences } from '../../lib/stream/split-fence.js';
import { splitDeadlines, type SplitDeadlineEnv } from './split-deadline.js';
import { instrumented, log } from './observability.js';
import { processFifoBatch } from './fifo-batch.js';
import { openTable } from './tables.js';

/** A Lambda handler for SQS events. */
export type SqsHandler = (event: SQSEvent, context?: Context) => Promise<SQSBatchResponse>;

/** Where a handler's table and consumer come from. */
export interface StreamHandlerEnv extends SplitDeadlineEnv {
  VARVE_WAREHOUSE?: string;
  VARVE_CATALOG_TABLE?: string;
  VARVE_TABLE?: string;
  VARVE_CONSUMER_ID?: string;
  /** The split dead-letter queue: a split that failed on its own SPLIT_FAILURE_BUDGET times is moved there by the reader. */
  VARVE_SPLIT_DLQ_URL?: string;
}

/** A handler delivering each split message of the event to the sink `sinkFor` builds for the table. */
export function createSplitHandler(sinkFor: (table: Table) => StreamSink | Promise<StreamSink>, env: StreamHandlerEnv = process.env): SqsHandler {
  // One sink per opened table: the table cache hands out a new Table when it re-opens it.
  // `current`: the table at the newest schema delivered, so a schema change is announced once.
  // `fences`: this container's split fences on the consumer (held per bucket across containers).
  let cached: { table: Table; current: Table; sink: StreamSink; fences: SplitFences } | undefined;
  return instrumented(async (event: SQSEvent, context?: Context) => {
    const { consumerId } = handlerSettings(env);
    const table = await openTable(env as Record<string, string | undefined>, 'stream reader');
    if (cached?.table !== table) cached = { table, current: table, sink: await sinkFor(table), fences: new SplitFences(table.store, table.path, consumerId) };
    const entry = cached;
    const deadline = splitDeadlines(event.Records, context, env);
    const holder = `${entry.fences.processHolder}/${context?.awsRequestId ?? randomUUID()}`;
    const delivery = new BatchDelivery(entry.current, consumerId, entry.sink, Date.now, {
      sinkDeadline: deadline.sink,
      splits: { fences: entry.fences, holder, until: deadline.hold },
    });
    // Per-bucket groups: a failure holds back its own bucket only.
    // A split whose bucket another invocation holds stays hidden until that hold ends: retried
    // sooner, it would only use up receives (and reach the dead-letter queue) while the holder runs.
    const held = new Map<string, number>();
    const ownErrors = new Map<string, unknown>();
    // A split's own failures (durable, split-failures.ts): its backoff and its retry budget follow
    // them, not SQS's receive count, which also counts the times it waited behind a failed split.
    const attempts = new Map<string, number>();
    // Splits received again note their attempt (split-failures.ts): an invocation that died in one is counted.
    const begun = new Set<string>();
    const begin = async (record: SQSRecord, m: FailedSplit, received: number) => {
      let r: { failures: number; died?: string };
      try {
        r = await beginSplitAttempt(entry.table.store, entry.table.path, consumerId, m, received);
      } catch (err) {
        log().warn("the split's attempt could not be noted: should this invocation die in it, that is not counted", { messageId: record.messageId, error: err as Error });
        return;
      }
      begun.add(record.messageId);
      if (r.died === undefined) return;
      attempts.set(record.messageId, r.failures);
      log().warn(`an invocation died in the split of snapshot ${m.snapshotId} bucket ${m.bucket}: ${r.died} (own failure ${r.failures}/${SPLIT_FAILURE_BUDGET})`, { messageId: record.messageId, receiveCount: received });
      if (r.failures >= SPLIT_FAILURE_BUDGET) throw new SplitBudgetSpentError(r.died, r.failures);
    };
    const deliver = async (record: SQSRecord) => {
      const received = Number(record.attributes.ApproximateReceiveCount) || 1;
      try {
        return await delivery.deliver(record.body, received > 1 ? (m) => begin(record, m, received) : undefined);
      } catch (e) {
        ownErrors.set(record.messageId, e);
        if (e instanceof SplitFenceHeldError) {
          held.set(record.messageId, e.expiresAt);
          throw e;
        }
        // Time another split's sink used is not this split's failure: retried soon, uncounted.
        if (e instanceof SinkTimeoutError && !e.own) {
          attempts.set(record.messageId, 1);
          if (begun.has(record.messageId)) await endAttempt(entry.table, consumerId, record);
          throw e;
        }
        // Behind a split this reader dead-lettered, a split can only fail on the gap: it follows at once.
        const ahead = e instanceof SplitGapError ? await deadLetteredSplitAhead(entry.table, consumerId, record, e) : undefined;
        if (ahead !== undefined) {
          if (!(await deadLetter(env, record, `behind the dead-lettered split of snapshot ${ahead}`, e))) throw e;
          return 'dead-lettered';
        }
        // Invocations that died in it were counted when its attempt was noted.
        const failures = e instanceof SplitBudgetSpentError ? e.failures : await countOwnFailure(entry.table, consumerId, record, e);
        attempts.set(record.messageId, failures);
        if (failures < SPLIT_FAILURE_BUDGET) throw e;
        if (!(await deadLetter(env, record, `after failing on its own ${failures} times`, e))) throw e;
        await markDeadLettered(entry.table, consumerId, record, failures, e);
        return 'dead-lettered';
      }
    };
    try {
      const response = await processFifoBatch(event, deliver, context, { skipGroupOnError: true, hideUntil: held, attempts, followersWithHead: true });
      logFailedSplits(event.Records, response.batchItemFailures.map((f) => f.itemIdentifier), ownErrors, attempts);
      return response;
    } finally {
      if (delivery.table.schema.id > entry.current.schema.id) entry.current = delivery.table;
      // A sink call that outlived its time is waited for (on Lambda the container's timeout ends
      // it, and the call with it); then the fences are released.
      await delivery.finish(deadline.ends ? undefined : deadline.hold);
    }
  });
}
/**
 * A handler calling `fn` with the changes of each split, in order (rows with their kinds).
 *
 * @example
 * export const handler = createStreamHandler(async (changes) => {
 *   for (const c of changes) console.log(c.kind, c.row);
 * });
 */
export function createStreamHandler(fn: (changes: Change[], batch: ChangeBatch) => unknown, env: StreamHandlerEnv = process.env): SqsHandler {
  const sink = callbackSink(fn);
  return createSplitHandler(() => sink, env);
}

/**
 * Counts a split's own failure durably; returns its own failures so far. When the count cannot be
 * kept (an unreadable body, the store failing), the receive count stands in for it.
 */
async function countOwnFailure(table: Table, consumerId: string, record: SQSRecord, e: unknown): Promise<number> {
  const received = Number(record.attributes.ApproximateReceiveCount) || 1;
  try {
    const m = parseSplitMessage(record.body);
    return await recordSplitFailure(table.store, table.path, consumerId, m, `${(e as Error)?.name ?? 'Error'}: ${(e as Error)?.message ?? String(e)}`);
  } catch (err) {
    log().warn('the own failures of a split could not be counted; its receive count stands in', { messageId: record.messageId, error: err as Error });
    return received;
  }
}

/** The snapshot of the dead-lettered split a split with a gap waits on, or undefined (the gap has another cause, or the record cannot be read). */
async function deadLetteredSplitAhead(table: Table, consumerId: string, record: SQSRecord, e: SplitGapError): Promise<number | undefined> {
  try {
    return (await deadLetteredAhead(table.store, table.path, consumerId, parseSplitMessage(record.body), e.delivered))?.snapshot;
  } catch (err) {
    log().warn('whether a dead-lettered split is ahead of this one could not be read; the gap counts as its own failure', { messageId: record.messageId, error: err as Error });
    return undefined;
  }
}

/** Ends the split's noted attempt without a count (a failure that was not its own). */
async function endAttempt(table: Table, consumerId: string, record: SQSRecord): Promise<void> {
  try {
    await endSplitAttempt(table.store, table.path, consumerId, parseSplitMessage(record.body));
  } catch (err) {
    log().warn("the split's noted attempt could not be ended: its next receive counts it as an invocation that died", { messageId: record.messageId, error: err as Error });
  }
}

/** Marks the split dead-lettered in its failure record, so the splits of its bucket behind it follow it at once. */
async function markDeadLettered(table: Table, consumerId: string, record: SQSRecord, failures: number, e: unknown): Promise<void> {
  try {
    await markSplitDeadLettered(table.store, table.path, consumerId, parseSplitMessage(record.body), failures, `${(e as Error)?.name ?? 'Error'}: ${(e as Error)?.message ?? String(e)}`);
  } catch (err) {
    log().warn('the dead-lettered split could not be marked; the splits behind it each use up their own budget on the gap before following it', { messageId: record.messageId, error: err as Error });
  }
}

/**
 * Moves a split that failed on its own {@link SPLIT_FAILURE_BUDGET} times (or waits behind one that did) to the split
 * dead-letter queue (VARVE_SPLIT_DLQ_URL), loudly, with its message group and deduplication id,
 * so `varve redrive --queue split` brings it back in order. False without a dead-letter queue or
 * when the send fails: the split then stays failed (and SQS's maxReceiveCount moves it later).
 */
async function deadLetter(env: StreamHandlerEnv, record: SQSRecord, why: string, e: unknown): Promise<boolean> {
  const url = env.VARVE_SPLIT_DLQ_URL;
  let where = '';
  try {
    const m = parseSplitMessage(record.body);
    where = ` (snapshot ${m.snapshotId}, bucket ${m.partition ? `${m.partition}/` : ''}${m.bucket})`;
  } catch {
    // An unreadable body is moved as it is.
  }
  if (!url) {
    log().error(`split ${record.messageId}${where} cannot go on (${why}) and no VARVE_SPLIT_DLQ_URL is set: it stays failed until the queue's maxReceiveCount moves it`, { error: e as Error });
    return false;
  }
  try {
    await sqsClient().send(
      new SendMessageCommand({
        QueueUrl: url,
        MessageBody: record.body,
        MessageGroupId: record.attributes.MessageGroupId,
        MessageDeduplicationId: record.attributes.MessageDeduplicationId ?? record.messageId,
      }),
    );
  } catch (err) {
    log().error(`split ${record.messageId}${where} cannot go on (${why}), and moving it to the dead-letter queue failed: it stays failed`, { error: err as Error });
    return false;
  }
  log().error(
    `split ${record.messageId}${where} MOVED TO THE DEAD-LETTER QUEUE ${why} (last: ${(e as Error)?.name ?? 'Error'}: ${(e as Error)?.message ?? String(e)}); ` +
      'its bucket stops at it: fix the cause, then `varve redrive <table> --queue split`',
    { messageId: record.messageId, deadLetterQueue: url },
  );
  return true;
}

/** Why a split was reported failed: its own error, or the failed split ahead of it in its group. */
export interface SplitFailureReason {
  messageId: string;
  receiveCount: number;
  /** 'error' (its own: sink, read, gap), 'fence' (another invocation holds its bucket), 'deadline' (no time left / sink too slow), 'behind' (a failed head of its group). */
  reason: 'error' | 'fence' | 'deadline' | 'behind';
  error?: string;
  /** The failed split of its group this one waits behind (reason 'behind'). */
  behind?: string;
  /** Its own failures so far (reason 'error' / 'deadline'; none for a deadline other splits' sink calls used up). */
  ownFailures?: number;
  snapshot?: number;
  partition?: string;
  bucket?: number;
}

/** The reason of each failed record of a batch, in batch order. */
export function splitFailureReasons(
  records: readonly SQSRecord[],
  failedIds: readonly string[],
  ownErrors: ReadonlyMap<string, unknown>,
  attempts: ReadonlyMap<string, number> = new Map(),
): SplitFailureReason[] {
  const failed = new Set(failedIds);
  const heads = new Map<string, string>();
  const out: SplitFailureReason[] = [];
  for (const r of records) {
    if (!failed.has(r.messageId)) continue;
    const group = r.attributes.MessageGroupId ?? '';
    const where: Partial<SplitFailureReason> = {};
    try {
      const m = parseSplitMessage(r.body);
      Object.assign(where, { snapshot: m.snapshotId, partition: m.partition, bucket: m.bucket });
    } catch {
      // An unreadable body is its own error (reported below).
    }
    const base = { messageId: r.messageId, receiveCount: Number(r.attributes.ApproximateReceiveCount) || 1, ...where };
    if (ownErrors.has(r.messageId)) {
      const e = ownErrors.get(r.messageId) as Error;
      const reason = e instanceof SplitFenceHeldError ? 'fence' : e instanceof SinkTimeoutError || e instanceof SplitFenceLostError ? 'deadline' : 'error';
      // A deadline another split's sink call used up is not counted (its attempt only sets the backoff).
      const own = e instanceof SinkTimeoutError && !e.own ? undefined : attempts.get(r.messageId);
      out.push({ ...base, reason, error: `${e?.name ?? 'Error'}: ${e?.message ?? String(e)}`, ...(own !== undefined ? { ownFailures: own } : {}) });
      if (!heads.has(group)) heads.set(group, r.messageId);
    } else {
      out.push({ ...base, reason: 'behind', behind: heads.get(group) ?? 'unknown' });
    }
  }
  return out;
}

/** One WARN line per failed split, saying why it failed: the next failure is diagnosable from the logs alone. */
function logFailedSplits(records: readonly SQSRecord[], failedIds: readonly string[], ownErrors: ReadonlyMap<string, unknown>, attempts: ReadonlyMap<string, number>): void {
  for (const f of splitFailureReasons(records, failedIds, ownErrors, attempts)) {
    const own = f.ownFailures !== undefined ? `, own failure ${f.ownFailures}/${SPLIT_FAILURE_BUDGET}` : '';
    const what = f.reason === 'behind' ? `behind failed head ${f.behind}` : f.reason === 'fence' ? `its bucket's fence is held (${f.error})` : f.reason === 'deadline' ? `the deadline (${f.error}${own})` : `its own error (${f.error}${own})`;
    log().warn(`split of snapshot ${f.snapshot ?? '?'} bucket ${f.partition ? `${f.partition}/` : ''}${f.bucket ?? '?'} failed on receive ${f.receiveCount}: ${what}`, { ...f });
  }
}

function handlerSettings(env: StreamHandlerEnv): { warehouse: string; table: string; consumerId: string } {
  const missing = (['VARVE_WAREHOUSE', 'VARVE_TABLE', 'VARVE_CONSUMER_ID'] as const).filter((k) => !env[k]);
  if (missing.length > 0) {
    throw new InvalidArgumentError(`the stream handler needs ${missing.join(', ')} in its environment (the StreamConsumer construct sets them)`);
  }
  checkConsumerId(env.VARVE_CONSUMER_ID!);
  return { warehouse: env.VARVE_WAREHOUSE!, table: env.VARVE_TABLE!, consumerId: env.VARVE_CONSUMER_ID! };
}
