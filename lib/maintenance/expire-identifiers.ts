/**
 * The lifetime of commit identifier index objects (`commit/identifier-<sha256>`,
 * lib/snapshot/commit-identifier.ts). One exists per identified commit; without cleanup they
 * would pile up for the table's life. Expiry deletes an index once BOTH hold:
 *  - the snapshot it names (`committed`, or the `attempt` of a holder that never confirmed) has
 *    expired: while that snapshot exists, a retry must find the index, or it would commit twice;
 *  - it has not changed for `commit.identifier-retention` (7 days by default).
 * A retry of an identifier older than the retention whose snapshot has expired is therefore not
 * deduplicated any more (docs/GUARANTEES.md): it commits again. Inside the retention, or while
 * its snapshot lives, an index is never deleted — by this or by orphan cleanup, which never
 * touches `commit/`.
 */
import { parseJsonObject } from '../store/json-file.js';
import { deleteIfMatch, listAll } from '../store/object-store.js';
import { IdentifierIndexSchema, type IdentifierIndex } from '../snapshot/commit-identifier.js';
import type { Table } from '../table/table.js';

/** What one sweep of identifier indexes did. */
export interface ExpireIdentifiersResult {
  /** Index objects deleted. */
  deleted: number;
  /** Index objects older than the retention kept because the snapshot they name still exists. */
  keptForSnapshot: number;
}

/** Prefix of every identifier index object of a table. */
function identifierIndexPrefix(tablePath: string): string {
  return `${tablePath}/commit/identifier-`;
}

/**
 * Deletes the identifier indexes of `table` past their lifetime (see the file comment). One LIST
 * of `commit/identifier-`; a GET only for objects older than the retention.
 */
export async function expireIdentifierIndexes(
  table: Table,
  opts: { now?: number; retentionMs?: number } = {},
): Promise<ExpireIdentifiersResult> {
  const now = opts.now ?? Date.now();
  const cutoff = now - (opts.retentionMs ?? table.options.commitIdentifierRetention);
  const result: ExpireIdentifiersResult = { deleted: 0, keptForSnapshot: 0 };
  const old = (await listAll(table.store, identifierIndexPrefix(table.path))).filter((o) => o.lastModified <= cutoff);
  if (old.length === 0) return result;
  // Read after the listing: a snapshot that expires meanwhile only delays a deletion to the next run.
  const earliest = await table.snapshots.earliestId();
  for (const o of old) {
    let index: IdentifierIndex;
    let etag: string;
    try {
      const obj = await table.store.get(o.key);
      index = parseJsonObject(table.store, o.key, obj.body, IdentifierIndexSchema);
      etag = obj.etag;
    } catch {
      continue; // gone, or unreadable: never delete what cannot be judged
    }
    if (!Number.isInteger(index.attempt) || !(index.updated <= cutoff)) continue;
    const names = index.committed ?? index.attempt;
    // The snapshot that holds (or may hold) the commit still exists: a retry needs this index.
    if (earliest === undefined || names >= earliest) {
      result.keptForSnapshot++;
      continue;
    }
    // Deleted only if unchanged since it was read (If-Match): a retry that took the index over
    // meanwhile is inside the retention again, and its index must stay.
    if (await deleteIfMatch(table.store, o.key, etag)) result.deleted++;
  }
  return result;
}
