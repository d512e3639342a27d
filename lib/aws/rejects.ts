/**
 * Records that failed validation go to the table's rejects queue, one message each, with the
 * reason and the record as it came, so that the valid records of the same input still land and
 * an operator can see, fix and resend the others. The queue is a standard queue: a retried
 * invocation may send a reject twice, and `id` (source and line) lets the reader spot that.
 */
import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { QueueRequestError, SQS_MAX_BATCH } from '../stream/sqs-queue.js';
import { sqsClient } from './clients.js';
import { log } from './telemetry.js';

/** Where a rejected record came from. */
export type RejectSource = { messageId: string } | { bucket: string; key: string; etag: string };

/** One rejected record. */
export interface Reject {
  source: RejectSource;
  /** 1-based line (or row) of the record in its message or file; 0 for the whole input. */
  line: number;
  reason: string;
  /** The record as received. */
  raw: string;
}

/** The body of a rejects-queue message. */
export interface RejectMessage {
  /** `<messageId or key@etag>#<line>`: the same for a reject sent twice. */
  id: string;
  table: string;
  source: RejectSource;
  line: number;
  reason: string;
  record: string;
  /** True when `record` was cut to fit a message. */
  truncated?: boolean;
  rejectedAt: string;
}

/** Records longer than this are cut in the reject message (SQS allows 1 MiB per message). */
const MAX_RECORD_CHARS = 64 * 1024;
/** Bytes of bodies per SendMessageBatch call. */
const MAX_BATCH_BYTES = 256 * 1024;

function messageOf(table: string, r: Reject, now: string): RejectMessage {
  const origin = 'messageId' in r.source ? r.source.messageId : `${r.source.key}@${r.source.etag}`;
  const truncated = r.raw.length > MAX_RECORD_CHARS;
  return {
    id: `${origin}#${r.line}`,
    table,
    source: r.source,
    line: r.line,
    reason: r.reason,
    record: truncated ? r.raw.slice(0, MAX_RECORD_CHARS) : r.raw,
    ...(truncated ? { truncated: true } : {}),
    rejectedAt: now,
  };
}

/**
 * Sends rejects to `queueUrl`; throws when SQS refuses any (the caller retries its input). Without
 * a queue the rejects are logged as errors, never dropped silently.
 */
export async function sendRejects(
  queueUrl: string | undefined,
  table: string,
  rejects: readonly Reject[],
): Promise<void> {
  if (rejects.length === 0) return;
  const now = new Date().toISOString();
  const messages = rejects.map((r) => messageOf(table, r, now));
  if (!queueUrl) {
    for (const reject of messages) log().error('rejected record (VARVE_REJECTS_QUEUE_URL is not set)', { reject });
    return;
  }
  const bodies = messages.map((m) => JSON.stringify(m));
  let chunk: string[] = [];
  let bytes = 0;
  const flush = async () => {
    if (chunk.length === 0) return;
    const r = await sqsClient().send(
      new SendMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: chunk.map((b, i) => ({ Id: String(i), MessageBody: b })),
      }),
    );
    if (r.Failed?.length) {
      throw new QueueRequestError(
        `SQS refused ${r.Failed.length} rejected records: ${r.Failed.map((f) => `${f.Code}: ${f.Message}`).join('; ')}`,
        r.Failed,
      );
    }
    chunk = [];
    bytes = 0;
  };
  for (const body of bodies) {
    const size = Buffer.byteLength(body);
    if (chunk.length === SQS_MAX_BATCH || (chunk.length > 0 && bytes + size > MAX_BATCH_BYTES)) await flush();
    chunk.push(body);
    bytes += size;
  }
  await flush();
}
