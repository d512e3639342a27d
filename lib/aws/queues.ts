/**
 * The SQS side of the varve queues a function sends to: commit messages to the table's commit
 * FIFO queue (MessageGroupId = the table, so one commit function folds them in order;
 * MessageDeduplicationId = the batch's commit identifier, so a retried writer's second send within
 * SQS's 5-minute window is dropped) and compaction jobs to the compaction FIFO queue (one message
 * group per bucket).
 */
import { SendMessageBatchCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import type { CompactionJob } from '../maintenance/compaction-jobs.js';
import { encodeCompactionJob } from '../maintenance/compaction-jobs.js';
import { queueId } from '../stream/split-message.js';
import { QueueRequestError, SQS_MAX_BATCH } from '../stream/sqs-queue.js';
import { encodeCommitMessage, type CommitMessage } from '../table/commit-message.js';
import { sqsClient } from './clients.js';

/** Sends one writer's batch to the table's commit queue. */
export async function sendCommitMessage(queueUrl: string, m: CommitMessage): Promise<void> {
  await sqsClient().send(
    new SendMessageCommand({
      QueueUrl: queueUrl,
      MessageBody: encodeCommitMessage(m),
      MessageGroupId: queueId(m.table),
      MessageDeduplicationId: queueId(m.commitIdentifier),
    }),
  );
}

/** The message group of a bucket's jobs: `<table>/<partition>/<bucket>`. */
function compactionGroupId(table: string, partition: string, bucket: number): string {
  return queueId(`${table}/${partition}/${bucket}`);
}

/**
 * Sends jobs to the compaction queue. The deduplication id names the bucket and the snapshot, so
 * a retried commit function does not enqueue its jobs twice.
 */
export async function sendCompactionJobs(queueUrl: string, jobs: readonly CompactionJob[]): Promise<void> {
  for (let i = 0; i < jobs.length; i += SQS_MAX_BATCH) {
    const chunk = jobs.slice(i, i + SQS_MAX_BATCH);
    const r = await sqsClient().send(
      new SendMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: chunk.map((j, k) => ({
          Id: String(k),
          MessageBody: encodeCompactionJob(j),
          MessageGroupId: compactionGroupId(j.table, j.partition, j.bucket),
          MessageDeduplicationId: queueId(
            `${j.table}/${j.partition}/${j.bucket}/${j.full ? 'full' : 'due'}/${j.snapshotId}`,
          ),
        })),
      }),
    );
    if (r.Failed?.length) {
      throw new QueueRequestError(
        `SQS refused ${r.Failed.length} compaction jobs: ${r.Failed.map((f) => `${f.Code}: ${f.Message}`).join('; ')}`,
        r.Failed,
      );
    }
  }
}
