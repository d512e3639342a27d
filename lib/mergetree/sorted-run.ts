/** A sorted run: data files whose key ranges do not overlap, in key order; read one after another. */
import type { DataFileMeta } from '../manifest/types.js';
import type { JsonValue } from '../schema/value-codec.js';

/** Compares two keys of file metadata (minKey/maxKey), column by column. */
export type KeyComparator = (a: JsonValue[], b: JsonValue[]) => number;

/** Files in key order with non-overlapping key ranges. */
export type SortedRun = DataFileMeta[];

/** Total size in bytes of the run's files. */
export function sortedRunSize(run: SortedRun): number {
  let n = 0;
  for (const f of run) n += f.fileSize;
  return n;
}

/** True when each file's minKey is above the previous file's maxKey. */
export function isSortedRun(run: SortedRun, compareKeys: KeyComparator): boolean {
  for (let i = 1; i < run.length; i++) if (compareKeys(run[i - 1].maxKey, run[i].minKey) >= 0) return false;
  return true;
}

/** Files ordered by (minKey, maxKey). */
export function byKeyRange(files: DataFileMeta[], compareKeys: KeyComparator): DataFileMeta[] {
  return [...files].sort((a, b) => compareKeys(a.minKey, b.minKey) || compareKeys(a.maxKey, b.maxKey));
}
