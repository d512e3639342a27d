/**
 * SQS queues with varve's house settings: a dead-letter queue for each, SQS-managed encryption,
 * TLS only, and a visibility timeout derived from the consumer's timeout.
 */
import { Duration } from 'aws-cdk-lib';
import { DeduplicationScope, FifoThroughputLimit, Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';

/** Lambda's guidance (aws-semantics §2.1): a batch stays invisible for the whole invocation, plus retries. */
export const VISIBILITY_FACTOR = 6;

/** Receives before a message moves to its dead-letter queue (and, on FIFO, unblocks its group). */
export const MAX_RECEIVE_COUNT = 5;

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
}

/** A queue and the dead-letter queue its redrive policy points at. */
export interface QueueWithDlq {
  readonly queue: Queue;
  readonly deadLetterQueue: Queue;
}

/** Creates `<id>` and `<id>Dlq` (a FIFO source gets a FIFO DLQ, as SQS requires). */
export function createQueueWithDlq(scope: Construct, id: string, props: QueueWithDlqProps): QueueWithDlq {
  const common = {
    encryption: QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    fifo: props.fifo ? true : undefined,
    contentBasedDeduplication: props.fifo ? false : undefined,
  };
  const deadLetterQueue = new Queue(scope, `${id}Dlq`, { ...common, retentionPeriod: Duration.days(14) });
  const queue = new Queue(scope, id, {
    ...common,
    visibilityTimeout: Duration.seconds(props.consumerTimeout.toSeconds() * VISIBILITY_FACTOR),
    deadLetterQueue: { queue: deadLetterQueue, maxReceiveCount: MAX_RECEIVE_COUNT },
    ...(props.fifo && props.highThroughput
      ? { deduplicationScope: DeduplicationScope.MESSAGE_GROUP, fifoThroughputLimit: FifoThroughputLimit.PER_MESSAGE_GROUP_ID }
      : {}),
  });
  return { queue, deadLetterQueue };
}
