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
  /** The delay of each failed record (by message id), from the ids of the failed records; without it, a backoff on its receive count. */
  retryDelays?: (failedIds: string[]) => ReadonlyMap<string, number>;
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
  const delays = opts.retryDelays?.(response.batchItemFailures.map((f) => f.itemIdentifier));
  return backOffFailures(event.Records, response, delays);
}
