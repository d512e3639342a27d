/**
 * Per-source idempotence of ingestion: every input unit has its own identifier — `sqs:<message
 * id>` for a queue message, `s3:<key>@<etag>` for an inbox object — recorded in the snapshot that
 * commits its rows (SOURCES_PROPERTY) and in the pending registration of a batch queued for the
 * group commit. A source redelivered in any batch composition is found there before anything is
 * written, so it lands once and writes no data file again.
 */
import { parseCommitMessage, type CommitMessage } from './commit-message.js';
import { listPending } from './pending-commits.js';
import { recentBatchesOf } from './recent-batches.js';
import type { Table } from './table.js';

/** The source identifier of a queue message. */
export function messageSource(messageId: string): string {
  return `sqs:${messageId}`;
}

/** The source identifier of an object (a rewritten object, with a new etag, is new input). */
export function objectSource(key: string, etag: string): string {
  return `s3:${key}@${etag.replace(/"/g, '')}`;
}

/**
 * The sources among `sources` already landed: committed in a recent snapshot, or (with `queued`)
 * listed by a pending registration, i.e. on their way through the commit queue. A registration
 * is written before its commit message is sent, and a writer may stop (a timeout, a failed send)
 * between the two: the redelivery that finds its sources there sends the message it carries
 * through `resend` (the commit queue drops it within its deduplication interval if it was sent;
 * after it, the group commit skips its committed identifier), so that they are on their way
 * indeed. A registration of an older writer, without its message, is taken as sent.
 */
export async function landedSources(
  table: Table,
  sources: readonly string[],
  opts: { queued: boolean; resend?: (message: CommitMessage) => Promise<void> },
): Promise<Set<string>> {
  const recent = recentBatchesOf(table);
  await recent.refresh();
  const landed = new Set(sources.filter((s) => recent.snapshotOf(s) !== undefined));
  if (opts.queued && landed.size < sources.length) {
    const wanted = new Set(sources.filter((s) => !landed.has(s)));
    for (const p of await listPending(table)) {
      const held = (p.batch?.sources ?? []).filter((s) => wanted.has(s));
      if (held.length === 0) continue;
      if (p.batch?.message !== undefined && opts.resend) await opts.resend(parseCommitMessage(p.batch.message));
      for (const s of held) landed.add(s);
    }
  }
  return landed;
}
