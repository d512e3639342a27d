/**
 * The in-process split reader: receives split messages from a SplitQueue and delivers them under
 * the split-delivery policy (split-policy.ts), the same rules as the Lambda reader: groups in
 * parallel, each in order, stopping at its first failure; split fences and the consumer lease;
 * a durable own-failure budget; the reader moves a spent split to the queue's dead-letter queue
 * itself; failed splits are released after the policy's backoff. A dead-lettered split stops its
 * bucket visibly: an error line, and the consumer's lag.
 */
import { randomUUID } from 'node:crypto';
import type { ConsumerLeaseLostError } from '../errors.js';
import type { DeliveryFence, DeliveryOutcome, StreamSink } from './delivery.js';
import type { Table } from '../table/table.js';
import { MemoryQueue } from './memory-queue.js';
import { SplitFences } from './split-fence.js';
import { type Backoff, SplitBatch, type SplitDeadLetterQueue, type SplitLog } from './split-policy.js';
import type { QueueMessage, SplitQueue } from './split-queue.js';
import { splitWindow } from './split-window.js';

/** Options of a SplitReader. */
export interface SplitReaderOptions {
  table: Table;
  consumerId: string;
  queue: SplitQueue;
  sink: StreamSink;
  /** Own failures a split may have before this reader dead-letters it. @default SPLIT_FAILURE_BUDGET */
  failureBudget?: number;
  /**
   * When a failed split comes back: after `baseMs`, doubling per own failure, at most `maxMs`.
   * @default SPLIT_BACKOFF (2, 4, 8, 16 … s, as on Lambda)
   */
  backoff?: Backoff;
  /** Where problems are reported. @default console.error */
  log?: (line: string) => void;
  now?: () => number;
  /**
   * The lease fencing this reader's deliveries, and the time a sink call may take (`sinkTimeoutMs`:
   * also the batch's window, as a message's visibility is on SQS). Without a time limit a batch has
   * the policy's default window (5 minutes).
   */
  fence?: Pick<DeliveryFence, 'lease' | 'sinkTimeoutMs'>;
  /**
   * Called when a delivery finds this reader fenced off (ConsumerLeaseLostError: another reader
   * group holds the consumer id now, under a newer token). The split is not this reader's to retry:
   * it goes back to the queue at once for the current holder, and the caller should stop polling
   * (the local runtime halts the consumer) instead of using up its receives toward the dead-letter queue.
   */
  onLeaseLost?: (e: ConsumerLeaseLostError) => void;
}

/** What one poll did. */
export interface PollResult {
  received: number;
  delivered: number;
  duplicates: number;
  stale: number;
  /** Splits this reader moved to the dead-letter queue. */
  deadLettered: number;
  /** Messages given back to the queue: failed ones and those behind them in their group. */
  released: number;
}

/** Reads splits from a queue into a sink (see the file comment). */
export class SplitReader {
  private readonly log: SplitLog;
  /** The table at the newest schema delivered so far: a schema change is announced once, not per batch. */
  private table: SplitReaderOptions['table'];
  /** This reader's split fences on the consumer; a fence of this process is never waited for. */
  private readonly fences: SplitFences;
  private readonly holder: string;
  private readonly deadLetterQueue?: SplitDeadLetterQueue;

  constructor(private readonly opts: SplitReaderOptions) {
    const print = opts.log ?? ((line) => console.error(line));
    const prefix = `varve: consumer ${opts.consumerId} of ${opts.table.name}: `;
    const line = (message: string, fields: Record<string, unknown>) =>
      print(`${prefix}${message}${fields.error instanceof Error ? `: ${fields.error.message}` : ''}`);
    this.log = { warn: line, error: line };
    this.table = opts.table;
    this.fences = new SplitFences(opts.table.store, opts.table.path, opts.consumerId, undefined, opts.now, true);
    this.holder = `${this.fences.processHolder}/reader-${randomUUID().slice(0, 8)}`;
    const queue = opts.queue;
    if (queue.deadLetter) {
      const redrive =
        queue instanceof MemoryQueue
          ? 'redrive it (the local runtime: redriveDeadLetters(), or restart the consumer: planning starts again at its position)'
          : '`varve redrive <table> --queue split`';
      this.deadLetterQueue = {
        name: "the split queue's dead-letter queue",
        redrive,
        move: (s) => queue.deadLetter!(s as QueueMessage),
      };
    }
  }

  /** Receives one batch (waiting up to `waitMs` for it) and processes it. */
  async poll(opts: { waitMs?: number; maxMessages?: number } = {}): Promise<PollResult> {
    const messages = await this.opts.queue.receive({ waitMs: opts.waitMs ?? 0, maxMessages: opts.maxMessages ?? 10 });
    return this.process(messages);
  }

  /** Processes received messages: groups in parallel, each group in order, stopping at its first failure. */
  async process(messages: QueueMessage[]): Promise<PollResult> {
    const result: PollResult = {
      received: messages.length,
      delivered: 0,
      duplicates: 0,
      stale: 0,
      deadLettered: 0,
      released: 0,
    };
    if (messages.length === 0) return result;
    const now = (this.opts.now ?? Date.now)();
    const limit = this.opts.fence?.sinkTimeoutMs;
    const batch = new SplitBatch(this.table, {
      consumerId: this.opts.consumerId,
      sink: this.opts.sink,
      // The time limit is the batch's visibility; late sink calls are not waited for (the reader
      // loop goes on; their buckets keep their fences until the hold ends).
      window: { ...splitWindow({ now, visibilityMs: limit }), lateCallsUntil: now },
      fences: this.fences,
      holder: this.holder,
      lease: this.opts.fence?.lease,
      sinkTimeoutMs: limit,
      deadLetterQueue: this.deadLetterQueue,
      budget: this.opts.failureBudget,
      backoff: this.opts.backoff,
      log: this.log,
      now: this.opts.now,
    });
    const groups = new Map<string, QueueMessage[]>();
    for (const m of messages) groups.set(m.groupId, [...(groups.get(m.groupId) ?? []), m]);
    const failed = (await Promise.all([...groups.values()].map((g) => this.processGroup(batch, g, result)))).flat();
    if (batch.table.schema.id > this.table.schema.id) this.table = batch.table;
    const retries = batch.retries(
      messages,
      failed.map((m) => m.messageId),
    );
    // Fenced off: stop first, so that this reader's other loops receive nothing more.
    if (batch.leaseLost) this.opts.onLeaseLost?.(batch.leaseLost);
    const handles = new Map(failed.map((m) => [m.messageId, m.receiptHandle]));
    for (const r of retries) await this.opts.queue.release(handles.get(r.messageId)!, r.delayMs);
    result.released += retries.length;
    await batch.finish();
    return result;
  }

  /** Delivers a group in order up to its first failure; acknowledges what is done and returns the failed rest. */
  private async processGroup(batch: SplitBatch, group: QueueMessage[], result: PollResult): Promise<QueueMessage[]> {
    const done: string[] = [];
    let failedAt = group.length;
    for (let i = 0; i < group.length && failedAt === group.length; i++) {
      try {
        const outcome = await batch.deliver(group[i]);
        // A dead-lettered split is out of the queue already.
        if (outcome === 'dead-lettered') result.deadLettered++;
        else {
          result[countOf(outcome)]++;
          done.push(group[i].receiptHandle);
        }
      } catch {
        failedAt = i;
      }
    }
    try {
      await this.opts.queue.ack(done);
    } catch (e) {
      // Not acknowledged: they come back after their visibility timeout and are recognised as
      // duplicates by the bucket's progress.
      this.log.warn(
        `acknowledging ${done.length} split(s) of group ${group[0].groupId} failed (${(e as Error).message}); they will be redelivered and skipped`,
        {},
      );
    }
    return group.slice(failedAt);
  }
}

function countOf(outcome: DeliveryOutcome): 'delivered' | 'duplicates' | 'stale' {
  return outcome === 'delivered' ? 'delivered' : outcome === 'duplicate' ? 'duplicates' : 'stale';
}
