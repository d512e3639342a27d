/**
 * The split-delivery policy: one set of rules for every reader of a consumer's split messages. The
 * local runtime's reader (reader.ts) and the Lambda handler (functions/shared/stream-handler.ts)
 * only adapt it to their queue: they hand it each received message in group order and apply the
 * retries it returns. Per batch of received messages:
 *
 * - Fencing. Each bucket is held with a split fence (split-fence.ts) before its split is read, until
 *   the batch's window ends (split-window.ts); a reader group holding a consumer lease (lease.ts,
 *   the local runtime) is also fenced by its token. A bucket's progress refuses older tokens of
 *   both, so a fenced-off reader moves nothing.
 * - Order. A message group's splits are delivered in order; the first failure fails its split and
 *   every later split of its group in the batch (SQS FIFO's partial-batch rule); other groups go on.
 * - Failure budget. A split's OWN failures are counted durably (split-failures.ts): its sink or its
 *   read failed, its own sink call used up the deadline, its predecessor is missing, a reader died
 *   in it. Not counted: waiting behind a failed split of its group, a bucket another reader holds,
 *   a deadline other splits' sink calls used up, a reader group fenced off by a lease takeover.
 * - Dead-lettering. At the budget (SPLIT_FAILURE_BUDGET own failures) the reader moves the split to
 *   the dead-letter queue itself, loudly; the splits of its bucket behind it, which can only fail on
 *   the gap it left, follow it at once. The queue's own maxReceiveCount is a backstop far above it.
 *   With no dead-letter queue configured, a split past its budget stays in its queue and is retried
 *   forever after its backoff, each failure said in one ERROR line (never counted as a reader that died).
 * - Backoff. A failed split comes back after an exponential backoff on its own failures, the splits
 *   that failed behind it with it (a FIFO group stays locked while any of its messages is hidden);
 *   a split whose bucket another reader holds when that hold ends; a fenced-off reader's at once.
 */
import { ConsumerLeaseLostError, SplitFenceHeldError, SplitFenceLostError, TableNotFoundError } from '../errors.js';
import type { Table } from '../table/table.js';
import { BatchDelivery, SinkTimeoutError, SplitGapError, type DeliveryOutcome, type StreamSink } from './delivery.js';
import type { ConsumerLeaseHandle } from './lease.js';
import {
  beginSplitAttempt,
  deadLetteredAhead,
  endSplitAttempt,
  markSplitDeadLettered,
  recordSplitFailure,
  SplitBudgetSpentError,
  SPLIT_FAILURE_BUDGET,
  splitFailuresKey,
  type FailedSplit,
} from './split-failures.js';
import type { SplitFences } from './split-fence.js';
import { parseSplitMessage } from './split-message.js';
import type { SplitWindow } from './split-window.js';
import { checkOpenedTable } from './table-identity.js';

/** A received split message, as every queue hands one over. */
export interface ReceivedSplit {
  messageId: string;
  groupId: string;
  body: string;
  /** How many times the queue has handed it over, this time included. */
  receiveCount: number;
  /** The deduplication id it was sent with, when the queue tells (kept when it is dead-lettered). */
  dedupId?: string;
}

/** Where the policy reports: structured lines (a Powertools logger fits, a line printer adapts). */
export interface SplitLog {
  warn(message: string, fields: Record<string, unknown>): void;
  error(message: string, fields: Record<string, unknown>): void;
}

/** The dead-letter queue a reader moves splits to. */
export interface SplitDeadLetterQueue {
  /** Names it in log lines. */
  name: string;
  /** What brings its messages back, for the log line (e.g. "`varve redrive <table> --queue split`"). */
  redrive: string;
  /** Moves the split there (and out of its queue); throws when that failed. */
  move(split: ReceivedSplit): Promise<void>;
}

/** An exponential backoff: `baseMs` after the first failure, doubling per failure, at most `maxMs`. */
export interface Backoff {
  baseMs: number;
  maxMs: number;
}

/**
 * The backoff of every split reader, local and Lambda alike: a failed split comes back after 2, 4,
 * 8, 16 … s on its own failures, at most 5 minutes (SQS visibility is set in seconds). The budget's
 * 5 own failures thus span about 30 s, so a sink outage of a few seconds delays its splits and
 * dead-letters none.
 */
export const SPLIT_BACKOFF: Readonly<Backoff> = { baseMs: 2000, maxMs: 300_000 };

/** Options of a SplitBatch. */
export interface SplitBatchOptions {
  consumerId: string;
  sink: StreamSink;
  /** The batch's deadlines. */
  window: SplitWindow;
  /** The split fences of this reader on the consumer, and who holds them in this batch. */
  fences: SplitFences;
  holder: string;
  /** The reader group's lease on the consumer id, when it holds one. */
  lease?: ConsumerLeaseHandle;
  /** A limit on each sink call besides the window's deadline. */
  sinkTimeoutMs?: number;
  /** Where spent splits go; without one they stay failed and the queue's maxReceiveCount moves them. */
  deadLetterQueue?: SplitDeadLetterQueue;
  /** Why there is no dead-letter queue, for the log line. */
  noDeadLetterQueue?: string;
  /** Own failures a split may have. @default SPLIT_FAILURE_BUDGET */
  budget?: number;
  /** @default SPLIT_BACKOFF */
  backoff?: Backoff;
  log: SplitLog;
  now?: () => number;
}

/** What became of a split that did not fail. */
export type SplitOutcome = DeliveryOutcome | 'dead-lettered';

/** When a failed split comes back. */
export interface SplitRetry {
  messageId: string;
  delayMs: number;
}

/** Why a split was reported failed: its own error, or the failed split ahead of it in its group. */
export interface SplitFailureReason {
  messageId: string;
  receiveCount: number;
  /**
   * 'error' (its own: sink, read, gap), 'fence' (another reader holds its bucket), 'deadline' (no
   * time left / sink too slow), 'lease' (this reader group was fenced off), 'behind' (a failed head of its group).
   */
  reason: 'error' | 'fence' | 'deadline' | 'lease' | 'behind';
  error?: string;
  /** The failed split of its group this one waits behind (reason 'behind'). */
  behind?: string;
  /** Its own failures so far (none for a deadline other splits' sink calls used up). */
  ownFailures?: number;
  snapshot?: number;
  partition?: string;
  bucket?: number;
}

/** One batch of received split messages under the policy (see the file comment). */
export class SplitBatch {
  readonly delivery: BatchDelivery;
  /** Set when a delivery found the reader group's lease lost: the caller stops reading. */
  leaseLost?: ConsumerLeaseLostError;
  private readonly errors = new Map<string, unknown>();
  /** Own failures so far per failed split (its backoff follows them). */
  private readonly attempts = new Map<string, number>();
  /** Splits whose bucket another reader holds: hidden until that hold ends. */
  private readonly hidden = new Map<string, number>();
  /** Splits that noted their attempt (received again). */
  private readonly begun = new Set<string>();
  /** Splits past their budget with no dead-letter queue to move them to: their one line is said (no WARN line). */
  private readonly spent = new Set<string>();
  private readonly budget: number;
  private readonly now: () => number;

  constructor(
    table: Table,
    private readonly opts: SplitBatchOptions,
  ) {
    this.now = opts.now ?? Date.now;
    this.budget = opts.budget ?? SPLIT_FAILURE_BUDGET;
    this.delivery = new BatchDelivery(table, opts.consumerId, opts.sink, this.now, {
      lease: opts.lease,
      sinkTimeoutMs: opts.sinkTimeoutMs,
      sinkDeadline: opts.window.sinkDeadline,
      splits: { fences: opts.fences, holder: opts.holder, until: opts.window.holdUntil },
    });
  }

  /** The table at the newest schema delivered in this batch. */
  get table(): Table {
    return this.delivery.table;
  }

  /**
   * Delivers one split; throws when it failed (the caller fails it and the rest of its group).
   * A split whose budget is spent, or that follows a dead-lettered one, is moved to the
   * dead-letter queue and counts as done ('dead-lettered').
   */
  async deliver(split: ReceivedSplit): Promise<SplitOutcome> {
    try {
      // Received again: the attempt is noted first, so that a reader dying in it is counted.
      return await this.delivery.deliver(
        split.body,
        split.receiveCount > 1 ? (m) => this.beginAttempt(split, m) : undefined,
      );
    } catch (e) {
      this.errors.set(split.messageId, e);
      return this.failed(split, e);
    }
  }

  private async failed(split: ReceivedSplit, e: unknown): Promise<'dead-lettered'> {
    if (e instanceof ConsumerLeaseLostError) {
      this.leaseLost ??= e;
      // The attempt ended (fenced off), it did not die: the new holder's receive must not count it.
      if (this.begun.has(split.messageId)) await this.endAttempt(split);
      throw e;
    }
    if (e instanceof SplitFenceHeldError) {
      this.hidden.set(split.messageId, e.expiresAt);
      throw e;
    }
    // Time another split's sink call used is not this split's failure: retried soon, uncounted.
    if (e instanceof SinkTimeoutError && !e.own) {
      this.attempts.set(split.messageId, 1);
      if (this.begun.has(split.messageId)) await this.endAttempt(split);
      throw e;
    }
    // Behind a split a reader dead-lettered, a split can only fail on the gap: it follows at once.
    const ahead = e instanceof SplitGapError ? await this.deadLetteredAhead(split, e) : undefined;
    if (ahead !== undefined) {
      if (await this.moveToDeadLetter(split, `behind the dead-lettered split of snapshot ${ahead}`, e))
        return 'dead-lettered';
      throw e;
    }
    // A reader that died in it was counted when the attempt was noted.
    const failures = e instanceof SplitBudgetSpentError ? e.failures : await this.countOwnFailure(split, e);
    this.attempts.set(split.messageId, failures);
    if (failures < this.budget) throw e;
    if (!this.opts.deadLetterQueue) {
      this.budgetSpent(split, failures, errorText(e));
      throw e;
    }
    if (!(await this.moveToDeadLetter(split, `after failing on its own ${failures} times`, e))) {
      // Not moved: its next receive tries the move again, and must not take this attempt for one that died.
      if (e instanceof SplitBudgetSpentError) await this.endAttempt(split);
      throw e;
    }
    await this.markDeadLettered(split, failures, e);
    return 'dead-lettered';
  }

  /**
   * The one ERROR line of a split past its budget that no dead-letter queue can take (none is
   * configured): it stays in its queue and is retried forever after its backoff, its bucket waiting
   * behind it, until it succeeds or the queue's own maxReceiveCount (when set) moves it.
   */
  private budgetSpent(split: ReceivedSplit, failures: number, last: string): void {
    this.spent.add(split.messageId);
    const none = this.opts.noDeadLetterQueue ?? 'its queue has no dead-letter queue a reader can move it to';
    const retryS = Math.round(this.backoffMs(failures) / 1000);
    this.opts.log.error(
      `split ${split.messageId}${describeAt(split)} has spent its failure budget (${failures} own failures, budget ${this.budget}; last: ${last}) ` +
        `and there is no dead-letter queue to move it to (${none}): it is RETRIED FOREVER, next in ${retryS} s, its bucket waiting behind it, ` +
        "until it succeeds or the queue's own maxReceiveCount moves it. Fix the cause, or give the split queue a dead-letter queue",
      { messageId: split.messageId, receiveCount: split.receiveCount, ownFailures: failures },
    );
  }

  /** The backoff after `failures` own failures. */
  private backoffMs(failures: number): number {
    const { baseMs, maxMs } = this.opts.backoff ?? SPLIT_BACKOFF;
    return Math.min(maxMs, baseMs * 2 ** Math.min(Math.max(1, failures) - 1, 20));
  }

  /**
   * When each failed split (`failedIds`) comes back, in `received` order, with one WARN line per
   * failed split saying why: the first failed split of a group after its own backoff (or when its
   * bucket's hold ends), the later ones with it.
   */
  retries(received: readonly ReceivedSplit[], failedIds: Iterable<string>): SplitRetry[] {
    const failed = new Set(failedIds);
    const heads = new Map<string, ReceivedSplit>();
    const out: SplitRetry[] = [];
    for (const s of received) {
      if (!failed.has(s.messageId)) continue;
      const head = heads.get(s.groupId) ?? s;
      heads.set(s.groupId, head);
      out.push({ messageId: s.messageId, delayMs: this.delayOf(head) });
    }
    for (const f of splitFailureReasons(received, failed, this.errors, this.attempts))
      if (!this.spent.has(f.messageId)) this.opts.log.warn(failureLine(f, this.budget), { ...f });
    return out;
  }

  /** Ends the batch: releases the split fences once the calls that outlived their deadline settle (split-window.ts). */
  async finish(): Promise<void> {
    await this.delivery.finish(this.opts.window.lateCallsUntil);
  }

  private delayOf(s: ReceivedSplit): number {
    // A fenced-off reader group's splits are the new holder's: visible again at once.
    if (this.errors.get(s.messageId) instanceof ConsumerLeaseLostError) return 0;
    const attempt = Math.max(1, Math.floor(this.attempts.get(s.messageId) ?? s.receiveCount) || 1);
    const backoff = this.backoffMs(attempt);
    const until = this.hidden.get(s.messageId);
    return until === undefined ? backoff : Math.max(backoff, until - this.now() + 1000);
  }

  /**
   * Runs a write of a split's failure record, then checks that the table is still the one this
   * reader opened. A drop deletes the schema files first and everything under the table after, so
   * a record written while (or after) the table was dropped is found here: it is deleted again and
   * TableNotFoundError thrown, and no consumer state of the old reader is left in the folder of a
   * dropped or re-created table.
   */
  private async inOpenedTable<T>(m: FailedSplit, write: () => Promise<T>): Promise<T> {
    const result = await write();
    try {
      await checkOpenedTable(this.table);
    } catch (e) {
      if (e instanceof TableNotFoundError) {
        const key = splitFailuresKey(this.table.path, this.opts.consumerId, m.partition, m.bucket);
        await this.table.store.delete(key);
      }
      throw e;
    }
    return result;
  }

  private async beginAttempt(split: ReceivedSplit, m: FailedSplit): Promise<void> {
    const { store, path } = this.table;
    let r: { failures: number; died?: string };
    try {
      r = await this.inOpenedTable(m, () =>
        beginSplitAttempt(store, path, this.opts.consumerId, m, split.receiveCount, this.now()),
      );
    } catch (err) {
      this.opts.log.warn("the split's attempt could not be noted: should this reader die in it, that is not counted", {
        messageId: split.messageId,
        error: err as Error,
      });
      return;
    }
    this.begun.add(split.messageId);
    if (r.died === undefined) return;
    this.attempts.set(split.messageId, r.failures);
    if (r.failures >= this.budget && !this.opts.deadLetterQueue) {
      // Nowhere to move it: said in one line, and this attempt goes on (retried forever).
      this.budgetSpent(split, r.failures, r.died);
      return;
    }
    this.opts.log.warn(
      `an invocation died in the split of snapshot ${m.snapshotId} bucket ${m.bucket}: ${r.died} (own failure ${r.failures}/${this.budget})`,
      {
        messageId: split.messageId,
        receiveCount: split.receiveCount,
      },
    );
    if (r.failures >= this.budget) throw new SplitBudgetSpentError(r.died, r.failures);
  }

  /** Counts an own failure durably; when that cannot be kept (an unreadable body, the store failing), the receive count stands in. */
  private async countOwnFailure(split: ReceivedSplit, e: unknown): Promise<number> {
    try {
      const m = parseSplitMessage(split.body);
      return await this.inOpenedTable(m, () =>
        recordSplitFailure(this.table.store, this.table.path, this.opts.consumerId, m, errorText(e), this.now()),
      );
    } catch (err) {
      this.opts.log.warn('the own failures of a split could not be counted; its receive count stands in', {
        messageId: split.messageId,
        error: err as Error,
      });
      return split.receiveCount;
    }
  }

  /** The snapshot of the dead-lettered split a split with a gap waits on, or undefined (another cause, or unreadable). */
  private async deadLetteredAhead(split: ReceivedSplit, e: SplitGapError): Promise<number | undefined> {
    try {
      return (
        await deadLetteredAhead(
          this.table.store,
          this.table.path,
          this.opts.consumerId,
          parseSplitMessage(split.body),
          e.delivered,
        )
      )?.snapshot;
    } catch (err) {
      this.opts.log.warn(
        'whether a dead-lettered split is ahead of this one could not be read; the gap counts as its own failure',
        { messageId: split.messageId, error: err as Error },
      );
      return undefined;
    }
  }

  /** Ends the split's noted attempt without a count (a failure that was not its own). */
  private async endAttempt(split: ReceivedSplit): Promise<void> {
    try {
      const m = parseSplitMessage(split.body);
      await this.inOpenedTable(m, () =>
        endSplitAttempt(this.table.store, this.table.path, this.opts.consumerId, m, this.now()),
      );
    } catch (err) {
      this.opts.log.warn(
        "the split's noted attempt could not be ended: its next receive counts it as a reader that died",
        { messageId: split.messageId, error: err as Error },
      );
    }
  }

  /** Marks the split dead-lettered in its failure record, so the splits of its bucket behind it follow it at once. */
  private async markDeadLettered(split: ReceivedSplit, failures: number, e: unknown): Promise<void> {
    try {
      const m = parseSplitMessage(split.body);
      await this.inOpenedTable(m, () =>
        markSplitDeadLettered(
          this.table.store,
          this.table.path,
          this.opts.consumerId,
          m,
          failures,
          errorText(e),
          this.now(),
        ),
      );
    } catch (err) {
      this.opts.log.warn(
        'the dead-lettered split could not be marked; the splits behind it each use up their own budget on the gap before following it',
        { messageId: split.messageId, error: err as Error },
      );
    }
  }

  /**
   * Moves a split that cannot go on (`why`) to the dead-letter queue, loudly; false without one or
   * when the move failed: the split then stays failed (the queue's maxReceiveCount moves it later).
   */
  private async moveToDeadLetter(split: ReceivedSplit, why: string, e: unknown): Promise<boolean> {
    const where = describeAt(split);
    const dlq = this.opts.deadLetterQueue;
    if (!dlq) {
      const none = this.opts.noDeadLetterQueue ?? 'its queue has no dead-letter queue a reader can move it to';
      this.opts.log.error(
        `split ${split.messageId}${where} cannot go on (${why}) and ${none}: it stays failed until the queue's maxReceiveCount moves it`,
        { error: e as Error },
      );
      return false;
    }
    try {
      await dlq.move(split);
    } catch (err) {
      this.opts.log.error(
        `split ${split.messageId}${where} cannot go on (${why}), and moving it to the dead-letter queue failed: it stays failed`,
        { error: err as Error },
      );
      return false;
    }
    this.opts.log.error(
      `split ${split.messageId}${where} MOVED TO THE DEAD-LETTER QUEUE ${why} (last: ${errorText(e)}); its bucket stops at it: fix the cause, then ${dlq.redrive}`,
      {
        messageId: split.messageId,
        deadLetterQueue: dlq.name,
      },
    );
    return true;
  }
}

/** The reason of each failed split of a batch, in batch order. */
function splitFailureReasons(
  received: readonly ReceivedSplit[],
  failed: ReadonlySet<string>,
  errors: ReadonlyMap<string, unknown>,
  attempts: ReadonlyMap<string, number> = new Map(),
): SplitFailureReason[] {
  const heads = new Map<string, string>();
  const out: SplitFailureReason[] = [];
  for (const s of received) {
    if (!failed.has(s.messageId)) continue;
    const base = { messageId: s.messageId, receiveCount: s.receiveCount, ...whereOf(s) };
    if (!errors.has(s.messageId)) {
      out.push({ ...base, reason: 'behind', behind: heads.get(s.groupId) ?? 'unknown' });
      continue;
    }
    const e = errors.get(s.messageId);
    // A deadline another split's sink call used up is not counted (its attempt only sets the backoff).
    const own = e instanceof SinkTimeoutError && !e.own ? undefined : attempts.get(s.messageId);
    out.push({ ...base, reason: reasonOf(e), error: errorText(e), ...(own !== undefined ? { ownFailures: own } : {}) });
    if (!heads.has(s.groupId)) heads.set(s.groupId, s.messageId);
  }
  return out;
}

function reasonOf(e: unknown): SplitFailureReason['reason'] {
  if (e instanceof SplitFenceHeldError) return 'fence';
  if (e instanceof ConsumerLeaseLostError) return 'lease';
  return e instanceof SinkTimeoutError || e instanceof SplitFenceLostError ? 'deadline' : 'error';
}

/** The WARN line of a failed split. */
function failureLine(f: SplitFailureReason, budget: number): string {
  const own = f.ownFailures !== undefined ? `, own failure ${f.ownFailures}/${budget}` : '';
  const what =
    f.reason === 'behind'
      ? `behind failed head ${f.behind}`
      : f.reason === 'fence'
        ? `its bucket's fence is held (${f.error})`
        : f.reason === 'lease'
          ? `this reader group was fenced off; the split goes back at once, uncounted, for the reader that holds the consumer now (${f.error})`
          : f.reason === 'deadline'
            ? `the deadline (${f.error}${own})`
            : `its own error (${f.error}${own})`;
  return `split of snapshot ${f.snapshot ?? '?'} bucket ${f.partition ? `${f.partition}/` : ''}${f.bucket ?? '?'} failed on receive ${f.receiveCount}: ${what}`;
}

/** The snapshot, partition and bucket of a split, when its body can be read. */
function whereOf(s: ReceivedSplit): Partial<SplitFailureReason> {
  try {
    const m = parseSplitMessage(s.body);
    return { snapshot: m.snapshotId, partition: m.partition, bucket: m.bucket };
  } catch {
    // An unreadable body is its own error, reported as such.
    return {};
  }
}

/** ` (snapshot N, bucket [p/]b)`, or nothing for an unreadable body (moved as it is). */
function describeAt(s: ReceivedSplit): string {
  const w = whereOf(s);
  return w.snapshot === undefined
    ? ''
    : ` (snapshot ${w.snapshot}, bucket ${w.partition ? `${w.partition}/` : ''}${w.bucket})`;
}

function errorText(e: unknown): string {
  return `${(e as Error)?.name ?? 'Error'}: ${(e as Error)?.message ?? String(e)}`;
}
