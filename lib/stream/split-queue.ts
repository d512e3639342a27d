/**
 * The queue that carries split messages from discovery to readers, shaped like SQS FIFO so that
 * the in-process queue (lib/stream/memory-queue.ts) and the SQS one behave the same:
 *
 * - Messages of one group are delivered in send order, and a group's next message is delivered
 *   only once every earlier one is acknowledged (or dead-lettered); groups are independent.
 * - A send whose deduplication id was seen within the deduplication window is accepted and
 *   dropped (SQS: 5 minutes).
 * - A received message is invisible for the visibility timeout; not acknowledged by then (or
 *   released), it is delivered again with a higher receive count and a new receipt handle.
 * - A message received `maxReceiveCount` times that comes back once more goes to the dead-letter
 *   queue instead, which unblocks its group. That is the backstop: a reader moves a split whose own
 *   failures reached its budget there itself (`deadLetter`, split-policy.ts), long before.
 */

/** One message to send. */
export interface SendRequest {
  /** SQS MessageGroupId: `<table>/<partition>/<bucket>` for split messages (at most 128 characters). */
  groupId: string;
  /** SQS MessageDeduplicationId (at most 128 characters). */
  dedupId: string;
  body: string;
}

/** What a send did. */
export interface SendResult {
  messageId: string;
  /** True when the deduplication id had been seen within the window: nothing new is delivered. */
  duplicate: boolean;
}

/** A received message. */
export interface QueueMessage {
  messageId: string;
  /** Identifies this receipt; pass it to ack/release. A later receipt of the same message gets a new one. */
  receiptHandle: string;
  groupId: string;
  body: string;
  /** How many times the message has been received, this time included (SQS ApproximateReceiveCount). */
  receiveCount: number;
  /** Epoch ms of the send. */
  sentAt: number;
  /** The deduplication id it was sent with, when the queue tells (SQS MessageDeduplicationId). */
  dedupId?: string;
}

/** Options of one receive call. */
export interface ReceiveOptions {
  /** At most this many messages (SQS: 1..10). @default 10 */
  maxMessages?: number;
  /** Long polling: wait up to this long for a message when none is available. @default 0 */
  waitMs?: number;
  /** Visibility timeout of the received messages; the queue's default when absent. */
  visibilityMs?: number;
}

/** Approximate counts, for lag reporting and for waiting until a consumer is idle. */
export interface QueueDepth {
  /** Messages waiting to be delivered (including those behind an in-flight message of their group). */
  visible: number;
  /** Messages received and neither acknowledged nor expired. */
  inFlight: number;
  /** Messages in the dead-letter queue. */
  deadLettered: number;
}

/** A FIFO queue of split messages with SQS FIFO semantics (see the file comment). */
export interface SplitQueue {
  /** Sends messages in order (order is kept per group); one result per request. */
  send(requests: SendRequest[]): Promise<SendResult[]>;
  /** Receives available messages, in group order; several of one group may come in one call. */
  receive(opts?: ReceiveOptions): Promise<QueueMessage[]>;
  /** Acknowledges (deletes) received messages. A stale receipt handle is ignored. */
  ack(receiptHandles: string[]): Promise<void>;
  /** Makes a received message visible again after `delayMs` (SQS ChangeMessageVisibility). */
  release(receiptHandle: string, delayMs?: number): Promise<void>;
  /** Approximate message counts. */
  depth(): Promise<QueueDepth>;
  /**
   * Moves a received message to the dead-letter queue at once, in its group (the reader spent the
   * split's failure budget: split-policy.ts); throws when it could not. Absent when the queue has no
   * dead-letter queue a reader can move to: its maxReceiveCount moves the message later.
   */
  deadLetter?(message: QueueMessage): Promise<void>;
}

/** SQS's limit on MessageGroupId and MessageDeduplicationId. */
export const MAX_QUEUE_ID_LENGTH = 128;
