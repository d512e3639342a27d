/**
 * Commit identifiers derived from a writer's input, so that a retried invocation recognises the
 * commit its earlier attempt made (DESIGN.md, "Idempotence"). Each fits an SQS deduplication id
 * (at most 128 printable ASCII characters), which is also what the commit queue deduplicates on.
 */
import { createHash } from 'node:crypto';

function digest(parts: unknown[]): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 40);
}

/** For records taken from SQS messages: the hash of the sorted message ids, whatever order they came in. */
export function messagesCommitIdentifier(source: 'ingest' | 'commit', messageIds: readonly string[]): string {
  return `${source}-${digest([...messageIds].sort())}`;
}

/** For a file dropped in the inbox: the hash of its key and etag (a rewritten file is new input). */
export function objectCommitIdentifier(key: string, etag: string): string {
  return `object-${digest([key, etag.replace(/"/g, '')])}`;
}
