/**
 * ADD/DELETE merging of manifest entries on the file identity (partition, bucket, level,
 * fileName) — Paimon's FileEntry.mergeEntries. `level` is part of the identity, so moving a file
 * up a level is DELETE(old level) + ADD(new level).
 */
import { CorruptMetadataError } from '../errors.js';
import type { ManifestEntry } from './types.js';

/** The identity of a data file: two entries name the same file iff their identities are equal. */
export function fileIdentity(e: ManifestEntry): string {
  // JSON keeps the parts apart whatever characters a partition value holds.
  return JSON.stringify([e.partition, e.bucket, e.file.level, e.file.fileName]);
}

/** A readable name of an entry's file for error messages. */
export function describeEntry(e: ManifestEntry): string {
  const where = e.partition === '' ? `bucket-${e.bucket}` : `${e.partition}/bucket-${e.bucket}`;
  return `${where}/${e.file.fileName} (level ${e.file.level})`;
}

/**
 * Folds `entries` in order into `merged` (identity → entry): an ADD of a present identity is
 * corruption; a DELETE of a present ADD cancels it; a DELETE of an absent identity stays, as the
 * signal that something deleted a file this state does not hold.
 */
export function mergeEntriesInto(
  merged: Map<string, ManifestEntry>,
  entries: Iterable<ManifestEntry>,
  source = '',
): void {
  for (const e of entries) {
    const id = fileIdentity(e);
    const present = merged.get(id);
    if (e.kind === 'ADD') {
      if (present !== undefined) {
        throw new CorruptMetadataError(
          `file ${describeEntry(e)} is added twice${source ? ` (in ${source})` : ''}; ` +
            'the table metadata is inconsistent, restore the manifests from a backup or roll back',
        );
      }
      merged.set(id, e);
    } else if (present === undefined) {
      merged.set(id, e);
    } else if (present.kind === 'ADD') {
      merged.delete(id);
    }
    // A second DELETE of an already dangling identity keeps the one dangling DELETE.
  }
}

/** The result of folding `entries` in order (see mergeEntriesInto), in first-seen order. */
export function mergeEntries(entries: Iterable<ManifestEntry>, source = ''): ManifestEntry[] {
  const merged = new Map<string, ManifestEntry>();
  mergeEntriesInto(merged, entries, source);
  return [...merged.values()];
}

/** The DELETE entries of a merged set: deletions of files the merged state does not contain. */
export function danglingDeletes(merged: Iterable<ManifestEntry>): ManifestEntry[] {
  const out: ManifestEntry[] = [];
  for (const e of merged) if (e.kind === 'DELETE') out.push(e);
  return out;
}
