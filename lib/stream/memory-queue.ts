/**
 * The in-process SplitQueue of the local runtime and of tests: SQS FIFO semantics (per-group
 * order with one receiver per group at a time, deduplication window, visibility timeout, receive
 * counts, dead-lettering after `maxReceiveCount`), plus fault injection hooks for tests.
 */
import { randomUUID } from 'node:crypto';
import { InjectedFaultError, InvalidArgumentError } from '../errors.js';
import {
  MAX_QUEUE_ID_LENGTH,
  type QueueDepth,
  type QueueMessage,
  type ReceiveOptions,
  type SendRequest,
  type SendResult,
  type SplitQueue,
} from './split-queue.js';

/** Faults a test can inject; each hook returning true makes that call fail with InjectedFaultError. */
export interface MemoryQueueFaults {
  send?(req: SendRequest): boolean;
  /** Fails the ack of one message (it stays in flight and comes back after its visibility timeout). */
  ack?(m: QueueMessage): boolean;
  receive?(): boolean;
}

/** Options of a MemoryQueue. */
export interface MemoryQueueOptions {
  /** @default 30_000 (SQS default) */
  visibilityMs?: number;
  /** Receives before the next return sends a message to the dead-letter queue. @default 5 */
  maxReceiveCount?: number;
  /** @default 300_000 (SQS: 5 minutes) */
  dedupWindowMs?: number;
  /** `queue` (SQS default) or `messageGroup` (high-throughput FIFO). @default 'queue' */
  dedupScope?: 'queue' | 'messageGroup';
  faults?: MemoryQueueFaults;
  /** Called when a message moves to the dead-letter queue. */
  onDeadLetter?(m: QueueMessage): void;
  now?: () => number;
}

interface StoredMessage {
  messageId: string;
  groupId: string;
  body: string;
  sentAt: number;
  receiveCount: number;
  /** Receipt of the current delivery while in flight. */
  receipt?: string;
  /** In flight until this time (epoch ms). */
  invisibleUntil: number;
}

/** An in-process FIFO queue with SQS FIFO semantics. */
export class MemoryQueue implements SplitQueue {
  readonly visibilityMs: number;
  readonly maxReceiveCount: number;
  private readonly dedupWindowMs: number;
  private readonly dedupScope: 'queue' | 'messageGroup';
  private readonly now: () => number;
  /** Messages per group in send order; in-flight ones are always at the head. */
  private readonly groups = new Map<string, StoredMessage[]>();
  private readonly receipts = new Map<string, StoredMessage>();
  private readonly dedup = new Map<string, { messageId: string; expiresAt: number }>();
  private readonly dead: QueueMessage[] = [];
  private rotation = 0;
  private waiters: Array<() => void> = [];

  constructor(private readonly opts: MemoryQueueOptions = {}) {
    this.visibilityMs = opts.visibilityMs ?? 30_000;
    this.maxReceiveCount = opts.maxReceiveCount ?? 5;
    this.dedupWindowMs = opts.dedupWindowMs ?? 300_000;
    this.dedupScope = opts.dedupScope ?? 'queue';
    this.now = opts.now ?? Date.now;
  }

  async send(requests: SendRequest[]): Promise<SendResult[]> {
    const results: SendResult[] = [];
    const now = this.now();
    this.purgeDedup(now);
    for (const req of requests) {
      checkQueueId('group id', req.groupId);
      checkQueueId('deduplication id', req.dedupId);
      if (this.opts.faults?.send?.(req))
        throw new InjectedFaultError(`injected send failure for group ${req.groupId}`, { retryable: true });
      const dedupKey = this.dedupScope === 'queue' ? req.dedupId : `${req.groupId}\u0000${req.dedupId}`;
      const seen = this.dedup.get(dedupKey);
      if (seen) {
        // Accepted but not delivered again, even when the first copy was already consumed.
        results.push({ messageId: seen.messageId, duplicate: true });
        continue;
      }
      const m: StoredMessage = {
        messageId: randomUUID(),
        groupId: req.groupId,
        body: req.body,
        sentAt: now,
        receiveCount: 0,
        invisibleUntil: 0,
      };
      this.dedup.set(dedupKey, { messageId: m.messageId, expiresAt: now + this.dedupWindowMs });
      const g = this.groups.get(req.groupId);
      if (g) g.push(m);
      else this.groups.set(req.groupId, [m]);
      results.push({ messageId: m.messageId, duplicate: false });
    }
    this.wake();
    return results;
  }

  async receive(opts: ReceiveOptions = {}): Promise<QueueMessage[]> {
    const deadline = this.now() + (opts.waitMs ?? 0);
    for (;;) {
      if (this.opts.faults?.receive?.()) throw new InjectedFaultError('injected receive failure', { retryable: true });
      const got = this.take(opts.maxMessages ?? 10, opts.visibilityMs ?? this.visibilityMs);
      const now = this.now();
      if (got.length > 0 || now >= deadline) return got;
      await this.waitForChange(Math.min(deadline - now, this.nextExpiry(now) - now));
    }
  }

  async ack(receiptHandles: string[]): Promise<void> {
    for (const handle of receiptHandles) {
      const m = this.receipts.get(handle);
      // A stale receipt (the message came back and was received again) deletes nothing.
      if (!m || m.receipt !== handle) continue;
      if (this.opts.faults?.ack?.(this.view(m)))
        throw new InjectedFaultError(`injected ack failure for message ${m.messageId}`, { retryable: true });
      this.receipts.delete(handle);
      const g = this.groups.get(m.groupId)!;
      g.splice(g.indexOf(m), 1);
      if (g.length === 0) this.groups.delete(m.groupId);
    }
    this.wake();
  }

  async release(receiptHandle: string, delayMs = 0): Promise<void> {
    const m = this.receipts.get(receiptHandle);
    if (!m || m.receipt !== receiptHandle) return;
    m.invisibleUntil = this.now() + delayMs;
    if (delayMs <= 0) this.expire(m);
    this.wake();
  }

  async depth(): Promise<QueueDepth> {
    const now = this.now();
    let visible = 0;
    let inFlight = 0;
    for (const g of this.groups.values()) {
      for (const m of g) {
        if (m.receipt !== undefined && m.invisibleUntil > now) inFlight++;
        else visible++;
      }
    }
    return { visible, inFlight, deadLettered: this.dead.length };
  }

  async deadLetter(message: QueueMessage): Promise<void> {
    const m = this.receipts.get(message.receiptHandle);
    if (!m || m.receipt !== message.receiptHandle) {
      throw new InvalidArgumentError(
        `message ${message.messageId} is not in flight under this receipt any more; it was not moved to the dead-letter queue`,
      );
    }
    this.receipts.delete(message.receiptHandle);
    m.receipt = undefined;
    const g = this.groups.get(m.groupId)!;
    g.splice(g.indexOf(m), 1);
    if (g.length === 0) this.groups.delete(m.groupId);
    this.toDeadLetter(m);
    this.wake();
  }

  /** The dead-letter queue's messages, oldest first. */
  deadLetters(): QueueMessage[] {
    return [...this.dead];
  }

  /** Moves every dead letter back to the end of its group (SQS StartMessageMoveTask), with a fresh receive count. */
  redrive(): number {
    const moved = this.dead.splice(0);
    for (const d of moved) {
      const m: StoredMessage = {
        messageId: d.messageId,
        groupId: d.groupId,
        body: d.body,
        sentAt: d.sentAt,
        receiveCount: 0,
        invisibleUntil: 0,
      };
      const g = this.groups.get(d.groupId);
      if (g) g.push(m);
      else this.groups.set(d.groupId, [m]);
    }
    this.wake();
    return moved.length;
  }

  /** Takes up to `max` deliverable messages: the heads of groups that have nothing in flight. */
  private take(max: number, visibilityMs: number): QueueMessage[] {
    const now = this.now();
    const out: QueueMessage[] = [];
    const ids = [...this.groups.keys()];
    // Start at a rotating group so that one busy group cannot starve the others.
    const start = ids.length ? this.rotation++ % ids.length : 0;
    for (let k = 0; k < ids.length && out.length < max; k++) {
      const g = this.groups.get(ids[(start + k) % ids.length])!;
      if (g.some((m) => m.receipt !== undefined && !this.expireIfDue(m, now))) continue; // one receiver per group at a time
      // A message received maxReceiveCount times goes to the dead-letter queue instead of being
      // delivered again, which unblocks its group.
      while (g.length > 0 && g[0].receiveCount >= this.maxReceiveCount) this.toDeadLetter(g.shift()!);
      // The group's next messages may come in the same batch, in order; all are then in flight.
      for (const m of g) {
        if (out.length >= max || m.receiveCount >= this.maxReceiveCount) break;
        m.receiveCount++;
        m.receipt = randomUUID();
        m.invisibleUntil = now + visibilityMs;
        this.receipts.set(m.receipt, m);
        out.push(this.view(m));
      }
      if (g.length === 0) this.groups.delete(ids[(start + k) % ids.length]);
    }
    return out;
  }

  private toDeadLetter(m: StoredMessage): void {
    const view = this.view(m);
    this.dead.push(view);
    try {
      this.opts.onDeadLetter?.(view);
    } catch {
      // A failing listener must not lose the message: it is in the dead-letter queue already.
    }
  }

  /** True (and the message visible again) when its visibility timeout has passed. */
  private expireIfDue(m: StoredMessage, now: number): boolean {
    if (m.invisibleUntil > now) return false;
    this.expire(m);
    return true;
  }

  private expire(m: StoredMessage): void {
    if (m.receipt !== undefined) this.receipts.delete(m.receipt);
    m.receipt = undefined;
  }

  private view(m: StoredMessage): QueueMessage {
    return {
      messageId: m.messageId,
      receiptHandle: m.receipt ?? '',
      groupId: m.groupId,
      body: m.body,
      receiveCount: m.receiveCount,
      sentAt: m.sentAt,
    };
  }

  private purgeDedup(now: number): void {
    for (const [k, v] of this.dedup) if (v.expiresAt <= now) this.dedup.delete(k);
  }

  /** The earliest time an invisible message becomes visible again (Infinity when none). */
  private nextExpiry(now: number): number {
    let next = Infinity;
    for (const g of this.groups.values())
      for (const m of g) if (m.invisibleUntil > now && m.invisibleUntil < next) next = m.invisibleUntil;
    return next;
  }

  private waitForChange(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, Math.max(1, Math.min(ms, 2 ** 31 - 1)));
      const waiters = this.waiters;
      function done(): void {
        clearTimeout(timer);
        const i = waiters.indexOf(done);
        if (i >= 0) waiters.splice(i, 1);
        resolve();
      }
      this.waiters.push(done);
    });
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }
}

function checkQueueId(what: string, id: string): void {
  if (id.length === 0 || id.length > MAX_QUEUE_ID_LENGTH) {
    throw new InvalidArgumentError(
      `a message ${what} must have 1..${MAX_QUEUE_ID_LENGTH} characters, got ${id.length}: "${id.slice(0, 40)}…"`,
    );
  }
}
