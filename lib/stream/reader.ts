/**
 * The in-process split reader: receives split messages, delivers each to the sink in order, and
 * acknowledges them. SQS FIFO partial-batch rules: when a split fails, it and every later message
 * of its group in the batch go back to the queue (released with a backoff) so the bucket never
 * skips ahead; other groups carry on. After `maxReceiveCount` attempts the queue dead-letters the
 * split, and the bucket stops advancing — visibly: an error line, and the consumer's lag.
 */
import { ConsumerLeaseLostError } from '../errors.js';
import { BatchDelivery, type DeliveryFence, type DeliveryOutcome, type StreamSink } from './delivery.js';
import type { Table } from '../table/table.js';
import type { QueueMessage, SplitQueue } from './split-queue.js';

/** Options of a SplitReader. */
export interface SplitReaderOptions {
  table: Table;
  consumerId: string;
  queue: SplitQueue;
  sink: StreamSink;
  /** The queue's maxReceiveCount, to say when a failure sends a split to the dead-letter queue. @default 5 */
  maxReceiveCount?: number;
  /** First redelivery delay after a failure; doubles per attempt, up to 30 s. @default 100 */
  retryDelayMs?: number;
  /** Where problems are reported. @default console.error */
  log?: (line: string) => void;
  now?: () => number;
  /** The lease fencing this reader's deliveries and the time a sink call may take. */
  fence?: DeliveryFence;
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
  /** Messages given back to the queue: failed ones and those behind them in their group. */
  released: number;
}

/** Reads splits from a queue into a sink (see the file comment). */
export class SplitReader {
  private readonly log: (line: string) => void;
  /** The table at the newest schema delivered so far: a schema change is announced once, not per batch. */
  private table: SplitReaderOptions['table'];

  constructor(private readonly opts: SplitReaderOptions) {
    this.log = opts.log ?? ((line) => console.error(line));
    this.table = opts.table;
  }

  /** Receives one batch (waiting up to `waitMs` for it) and processes it. */
  async poll(opts: { waitMs?: number; maxMessages?: number } = {}): Promise<PollResult> {
    const messages = await this.opts.queue.receive({ waitMs: opts.waitMs ?? 0, maxMessages: opts.maxMessages ?? 10 });
    return this.process(messages);
  }

  /** Processes received messages: groups in parallel, each group in order, stopping at its first failure. */
  async process(messages: QueueMessage[]): Promise<PollResult> {
    const result: PollResult = { received: messages.length, delivered: 0, duplicates: 0, stale: 0, released: 0 };
    if (messages.length === 0) return result;
    const delivery = new BatchDelivery(this.table, this.opts.consumerId, this.opts.sink, this.opts.now, this.opts.fence);
    const groups = new Map<string, QueueMessage[]>();
    for (const m of messages) {
      const g = groups.get(m.groupId);
      if (g) g.push(m);
      else groups.set(m.groupId, [m]);
    }
    await Promise.all([...groups.values()].map((g) => this.processGroup(delivery, g, result)));
    if (delivery.table.schema.id > this.table.schema.id) this.table = delivery.table;
    return result;
  }

  private async processGroup(delivery: BatchDelivery, group: QueueMessage[], result: PollResult): Promise<void> {
    const done: string[] = [];
    let failedAt = group.length;
    let fenced: ConsumerLeaseLostError | undefined;
    for (let i = 0; i < group.length; i++) {
      let outcome: DeliveryOutcome;
      try {
        outcome = await delivery.deliver(group[i].body);
      } catch (e) {
        failedAt = i;
        if (e instanceof ConsumerLeaseLostError) {
          fenced = e;
          this.log(`varve: consumer ${this.opts.consumerId} of ${this.opts.table.name}: this reader stops; split message ${group[i].messageId} (group ${group[i].groupId}) goes back to the queue at once for whichever reader holds the consumer now (no retry of its own, no backoff): ${e.message}`);
          break;
        }
        this.reportFailure(group[i], e);
        break;
      }
      result[outcome === 'delivered' ? 'delivered' : outcome === 'duplicate' ? 'duplicates' : 'stale']++;
      done.push(group[i].receiptHandle);
    }
    try {
      await this.opts.queue.ack(done);
    } catch (e) {
      // Not acknowledged: they come back after their visibility timeout and are recognised as
      // duplicates by the bucket's progress.
      this.log(`varve: acknowledging ${done.length} split(s) of group ${group[0].groupId} failed (${(e as Error).message}); they will be redelivered and skipped`);
    }
    // The failed split and everything after it in its group go back, in order, after a backoff.
    const back = group.slice(failedAt);
    if (back.length === 0) return;
    // Fenced off: stop first, so that this reader's other loops receive nothing more.
    if (fenced) this.opts.onLeaseLost?.(fenced);
    // A fenced-off reader's splits are visible again at once: they are the current holder's now.
    const delay = fenced ? 0 : Math.min(30_000, (this.opts.retryDelayMs ?? 100) * 2 ** Math.max(0, back[0].receiveCount - 1));
    for (const m of back) await this.opts.queue.release(m.receiptHandle, delay);
    result.released += back.length;
  }

  private reportFailure(m: QueueMessage, e: unknown): void {
    const max = this.opts.maxReceiveCount ?? 5;
    const what = `varve: consumer ${this.opts.consumerId} of ${this.opts.table.name}: split message ${m.messageId} (group ${m.groupId})`;
    const why = e instanceof Error ? e.message : String(e);
    if (m.receiveCount >= max) {
      this.log(
        `${what} failed ${m.receiveCount} times and goes to the dead-letter queue; its bucket stops advancing and the ` +
          `consumer's lag grows until the dead letter is redriven. Last error: ${why}`,
      );
    } else {
      this.log(`${what} failed (attempt ${m.receiveCount} of ${max}), will be retried: ${why}`);
    }
  }
}
