/**
 * Small-file compaction of an append table's bucket (Paimon's BucketedAppendCompactManager):
 * nothing is merged, adjacent small files are rewritten into files of about `target-file-size`.
 * Files are taken in sequence order and only ever as a contiguous window, so every output covers
 * a sequence range no other file overlaps: the bucket's files, concatenated in sequence order,
 * stay the rows in the order they were written. Output stays at level 0 (no levels: no key).
 */
import type { DataFileMeta } from '../manifest/types.js';
import type { CompactUnit } from './universal-compaction.js';

/** The knobs of append compaction (Paimon's option names). */
export interface AppendCompactionOptions {
  /** `target-file-size`: a window reaching this many bytes is worth rewriting. */
  targetFileSize: number;
  /** Files below this (target × small-file ratio) are small; larger ones are never rewritten by a normal pick. */
  compactionFileSize: number;
  /** `compaction.min.file-num`: adjacent small files needed when they are below the target together. */
  minFileNum: number;
  /** `compaction.max.file-num`: most files in one window. */
  maxFileNum: number;
}

/** Files of one bucket in the order their rows were written. */
function inSequenceOrder(files: readonly DataFileMeta[]): DataFileMeta[] {
  return [...files].sort(
    (a, b) => a.minSequenceNumber - b.minSequenceNumber || a.maxSequenceNumber - b.maxSequenceNumber,
  );
}

/** Number of small files of a bucket: what an append table's compaction can act on. */
export function smallFileCount(files: readonly DataFileMeta[], opts: AppendCompactionOptions): number {
  return files.filter((f) => f.fileSize < opts.compactionFileSize).length;
}

/**
 * The window to compact, or undefined. Normal: the first window of adjacent small files that holds
 * `minFileNum` files and reaches the target size together, or holds `maxFileNum` files (a sliding
 * window, as Paimon's pickCompactBefore). Full: every file from the first small one on, when that
 * is at least two files (later large files are rewritten too, keeping the window contiguous).
 */
export function pickAppendCompaction(
  files: readonly DataFileMeta[],
  opts: AppendCompactionOptions,
  full: boolean,
): CompactUnit | undefined {
  const ordered = inSequenceOrder(files);
  if (full) {
    const first = ordered.findIndex((f) => f.fileSize < opts.compactionFileSize);
    if (first < 0 || ordered.length - first < 2) return undefined;
    return { outputLevel: 0, files: ordered.slice(first) };
  }
  let window: DataFileMeta[] = [];
  let bytes = 0;
  for (const f of ordered) {
    if (f.fileSize >= opts.compactionFileSize) {
      // A large file ends the window: a window never spans it (it would interleave sequence ranges).
      window = [];
      bytes = 0;
      continue;
    }
    window.push(f);
    bytes += f.fileSize;
    if ((bytes >= opts.targetFileSize && window.length >= opts.minFileNum) || window.length >= opts.maxFileNum) {
      return { outputLevel: 0, files: window };
    }
    if (bytes >= opts.targetFileSize) {
      // Big enough but too few files: slide the window's start one file on.
      bytes -= window.shift()!.fileSize;
    }
  }
  return undefined;
}
