/**
 * SQS queues with varve's house settings: a dead-letter queue for each, SQS-managed encryption,
 * TLS only, and a visibility timeout derived from the consumer's timeout.
 */
import { Duration, Tags } from 'aws-cdk-lib';
import { DeduplicationScope, FifoThroughputLimit, Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import type { Construct } from 'constructs';
import { VARVE_QUEUE_TAGS } from '../lib/aws-contract.js';
import { SPLIT_FAILURE_BUDGET } from '../lib/stream/split-failures.js';

/** Lambda's guidance (aws-semantics §2.1): a batch stays invisible for the whole invocation, plus retries. */
export const VISIBILITY_FACTOR = 6;

/** Receives before a message moves to its dead-letter queue (and, on FIFO, unblocks its group). */
export const MAX_RECEIVE_COUNT = 5;

/**
 * The split queue's receives before SQS moves a split to its dead-letter queue: a backstop only.
 * On FIFO a split behind a failed split of its bucket is received (and reported failed) with it
 * every time, so its receive count is not its own. The reader budgets a split's *own* failures
 * (SPLIT_FAILURE_BUDGET, counted durably: lib/stream/split-failures.ts) and moves it to the DLQ
 * itself at the budget; this count is sized so that no split reaches it while the splits ahead of
 * it in a batch (at most 9, the FIFO batch of 10) use up their budgets: 10 × the budget. What
 * still reaches it is a split that kills its reader (crash, Lambda timeout) every time, which
 * leaves no own failure counted.
 */
export const SPLIT_MAX_RECEIVE_COUNT = 10 * SPLIT_FAILURE_BUDGET;

/** How a queue is ordered and who consumes it. */
export interface QueueWithDlqProps {
  /** The consuming function's timeout; the visibility timeout is {@link VISIBILITY_FACTOR} times it. */
  readonly consumerTimeout: Duration;
  /** A FIFO queue (explicit deduplication ids: content-based deduplication stays off). */
  readonly fifo: boolean;
  /**
   * High-throughput FIFO: deduplication per message group and throughput per group, for queues
   * spread over many groups (one per bucket).
   */
  readonly highThroughput?: boolean;
  /**
   * FIFO deduplication by a hash of the body: for queues fed by EventBridge rules, which send no
   * deduplication id (each event's body carries its own id). @default false
   */
  readonly contentBasedDeduplication?: boolean;
  /**
   * Visibility timeout, when the consumer's retries should come sooner than
   * {@link VISIBILITY_FACTOR} × its timeout. @default VISIBILITY_FACTOR × consumerTimeout
   */
  readonly visibilityTimeout?: Duration;
  /** Receives before SQS moves a message to the DLQ. @default MAX_RECEIVE_COUNT */
  readonly maxReceiveCount?: number;
  /** A customer-managed key for the queue and its DLQ. @default SSE-SQS */
  readonly encryptionKey?: IKey;
  /**
   * What the queue is, for `varve redrive`: the warehouse (its `s3://bucket/prefix` URI), the table,
   * the queue kind and the consumer (VARVE_QUEUE_TAGS); the DLQ gets the same tags plus
   * `varve:dead-letter` = `true`.
   */
  readonly tags?: {
    warehouse: string;
    table: string;
    queue: 'ingest' | 'commit' | 'compaction' | 'split';
    consumer?: string;
  };
}

/** A queue and the dead-letter queue its redrive policy points at. */
export interface QueueWithDlq {
  readonly queue: Queue;
  readonly deadLetterQueue: Queue;
}

/** Creates `<id>` and `<id>Dlq` (a FIFO source gets a FIFO DLQ, as SQS requires). */
export function createQueueWithDlq(scope: Construct, id: string, props: QueueWithDlqProps): QueueWithDlq {
  const common = {
    ...encryptionOf(props.encryptionKey),
    enforceSSL: true,
    fifo: props.fifo ? true : undefined,
    contentBasedDeduplication: props.fifo ? (props.contentBasedDeduplication ?? false) : undefined,
  };
  const deadLetterQueue = new Queue(scope, `${id}Dlq`, { ...common, retentionPeriod: Duration.days(14) });
  const queue = new Queue(scope, id, {
    ...common,
    visibilityTimeout:
      props.visibilityTimeout ?? Duration.seconds(props.consumerTimeout.toSeconds() * VISIBILITY_FACTOR),
    deadLetterQueue: { queue: deadLetterQueue, maxReceiveCount: props.maxReceiveCount ?? MAX_RECEIVE_COUNT },
    ...(props.fifo && props.highThroughput
      ? {
          deduplicationScope: DeduplicationScope.MESSAGE_GROUP,
          fifoThroughputLimit: FifoThroughputLimit.PER_MESSAGE_GROUP_ID,
        }
      : {}),
  });
  if (props.tags) {
    const { warehouse, table, queue: kind, consumer } = props.tags;
    for (const q of [queue, deadLetterQueue]) {
      Tags.of(q).add(VARVE_QUEUE_TAGS.warehouse, warehouse);
      Tags.of(q).add(VARVE_QUEUE_TAGS.table, table);
      Tags.of(q).add(VARVE_QUEUE_TAGS.queue, kind);
      if (consumer) Tags.of(q).add(VARVE_QUEUE_TAGS.consumer, consumer);
    }
    Tags.of(deadLetterQueue).add(VARVE_QUEUE_TAGS.deadLetter, 'true');
  }
  return { queue, deadLetterQueue };
}

/**
 * A standard queue that is the end of the line: failed asynchronous invocations (a scheduled
 * function's on-failure destination) and events EventBridge could not deliver land here for an
 * operator, with the event and the error.
 */
export function createFailureQueue(scope: Construct, id: string, encryptionKey?: IKey): Queue {
  return new Queue(scope, id, { ...encryptionOf(encryptionKey), enforceSSL: true, retentionPeriod: Duration.days(14) });
}

/** SSE-SQS, or SSE-KMS with the given customer key. */
export function encryptionOf(key?: IKey): { encryption: QueueEncryption; encryptionMasterKey?: IKey } {
  return key
    ? { encryption: QueueEncryption.KMS, encryptionMasterKey: key }
    : { encryption: QueueEncryption.SQS_MANAGED };
}
