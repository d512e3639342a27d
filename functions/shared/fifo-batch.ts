/**
 * Every FIFO batch a function takes (commit messages, compaction jobs, splits) goes through
 * Powertools' SqsFifoPartialProcessorAsync: records are handled one by one in order, and at the
 * first failure that record and every later one (of the batch, or with `skipGroupOnError` only of
 * its message group) are reported as batch item failures, so nothing overtakes a failed message.
 * An all-failed batch is reported like any other, not thrown, so every record keeps its own
 * receive count; failed records come back after their backoff (retry-backoff.ts).
 */
import { processPartialResponse, SqsFifoPartialProcessorAsync } from '@aws-lambda-powertools/batch';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { backOffFailures } from './retry-backoff.js';

export interface FifoBatchOptions {
  /** Fail only the failed record's message group (per-bucket queues), not the rest of the batch. */
  skipGroupOnError?: boolean;
  /**
   * Failed records that must stay hidden until an epoch ms (by message id, read after the batch):
   * a split whose bucket another invocation holds comes back when that hold ends, not sooner.
   */
  hideUntil?: ReadonlyMap<string, number>;
  /**
   * The attempt number each failed record's backoff follows (by message id, read after the
   * batch); without one, its receive count.
   */
  attempts?: ReadonlyMap<string, number>;
  /**
   * With `skipGroupOnError`: a record failed only because an earlier record of its group failed
   * is backed off (and hidden) as that head is, not on its own receive count. SQS FIFO keeps a
   * group locked while any of its messages is in flight, so a follower hidden longer than its
   * head would hold the head back too.
   */
  followersWithHead?: boolean;
}

/** Handles `event`'s records in order with `handle`; returns the partial batch response. */
export async function processFifoBatch(
  event: SQSEvent,
  handle: (record: SQSRecord) => Promise<unknown>,
  context?: Context,
  opts: FifoBatchOptions = {},
): Promise<SQSBatchResponse> {
  const response = await processPartialResponse(event, handle, new SqsFifoPartialProcessorAsync(), {
    context: context as Context,
    skipGroupOnError: opts.skipGroupOnError ?? false,
    throwOnFullBatchFailure: false,
  });
  if (!opts.followersWithHead) return backOffFailures(event.Records, response, opts.hideUntil, opts.attempts);
  const failed = new Set(response.batchItemFailures.map((f) => f.itemIdentifier));
  const hide = new Map(opts.hideUntil ?? []);
  const attempts = new Map(opts.attempts ?? []);
  const heads = new Map<string, SQSRecord>();
  for (const r of event.Records) {
    if (!failed.has(r.messageId)) continue;
    const group = r.attributes.MessageGroupId ?? '';
    const head = heads.get(group);
    if (!head) {
      heads.set(group, r);
      continue;
    }
    attempts.set(r.messageId, attempts.get(head.messageId) ?? (Number(head.attributes.ApproximateReceiveCount) || 1));
    const until = hide.get(head.messageId);
    if (until !== undefined) hide.set(r.messageId, until);
    else hide.delete(r.messageId);
  }
  return backOffFailures(event.Records, response, hide, attempts);
}
