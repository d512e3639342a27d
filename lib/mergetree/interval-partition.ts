/**
 * Paimon's IntervalPartition: splits files into sections whose key ranges do not overlap each
 * other (sections can be read one after another), and packs each section's files into as few
 * sorted runs as a greedy sweep finds (runs must be merged, files of one run concatenated).
 */
import type { DataFileMeta } from '../manifest/types.js';
import { byKeyRange, type KeyComparator, type SortedRun } from './sorted-run.js';

/** Sections in key order; each section is a list of sorted runs, each run files in key order. */
export function intervalPartition(files: DataFileMeta[], compareKeys: KeyComparator): SortedRun[][] {
  const sections: SortedRun[][] = [];
  let section: DataFileMeta[] = [];
  let bound: DataFileMeta['maxKey'] | null = null;
  for (const file of byKeyRange(files, compareKeys)) {
    // A file starting above every key seen so far cannot overlap anything before it.
    if (section.length > 0 && compareKeys(file.minKey, bound!) > 0) {
      sections.push(packRuns(section, compareKeys));
      section = [];
      bound = null;
    }
    section.push(file);
    if (bound === null || compareKeys(file.maxKey, bound) > 0) bound = file.maxKey;
  }
  if (section.length > 0) sections.push(packRuns(section, compareKeys));
  return sections;
}

/** Greedy packing of key-ordered files: append to the run that ends lowest if the file starts above it. */
function packRuns(files: DataFileMeta[], compareKeys: KeyComparator): SortedRun[] {
  const runs: SortedRun[] = [[files[0]]];
  for (let i = 1; i < files.length; i++) {
    const file = files[i];
    let lowest = 0;
    for (let r = 1; r < runs.length; r++) {
      if (compareKeys(last(runs[r]).maxKey, last(runs[lowest]).maxKey) < 0) lowest = r;
    }
    if (compareKeys(file.minKey, last(runs[lowest]).maxKey) > 0) runs[lowest].push(file);
    else runs.push([file]);
  }
  return runs;
}

function last(run: SortedRun): DataFileMeta {
  return run[run.length - 1];
}
