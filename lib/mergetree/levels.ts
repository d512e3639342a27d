/**
 * The LSM levels of one bucket (Paimon's Levels): level 0 holds files that may overlap, each its
 * own sorted run, newest first by maxSequenceNumber; every level ≥ 1 is one sorted run.
 */
import { CorruptMetadataError } from '../errors.js';
import type { DataFileMeta } from '../manifest/types.js';
import { isSortedRun, type KeyComparator, type SortedRun } from './sorted-run.js';

/** A sorted run with the level it lives in. */
export interface LevelSortedRun {
  level: number;
  run: SortedRun;
}

/** Level-0 order: larger maxSequenceNumber first, then minSequenceNumber, creationTime, fileName. */
function compareLevel0(a: DataFileMeta, b: DataFileMeta): number {
  if (a.maxSequenceNumber !== b.maxSequenceNumber) return b.maxSequenceNumber - a.maxSequenceNumber;
  if (a.minSequenceNumber !== b.minSequenceNumber) return a.minSequenceNumber - b.minSequenceNumber;
  if (a.creationTime !== b.creationTime) return a.creationTime - b.creationTime;
  return a.fileName < b.fileName ? -1 : a.fileName > b.fileName ? 1 : 0;
}

/** The files of one bucket arranged into LSM levels and sorted runs. */
export class Levels {
  /** Level-0 files, newest first. */
  readonly level0: DataFileMeta[];
  private readonly runs: SortedRun[];

  /**
   * `numLevels` (Paimon `num-levels`) grows to fit the highest file level. With `compareKeys`,
   * files of levels ≥ 1 are put in key order and checked not to overlap.
   */
  constructor(
    files: DataFileMeta[],
    numLevels: number,
    private readonly compareKeys?: KeyComparator,
  ) {
    const levels = Math.max(numLevels, 1 + files.reduce((m, f) => Math.max(m, f.level), 0));
    this.level0 = files.filter((f) => f.level === 0).sort(compareLevel0);
    this.runs = Array.from({ length: levels - 1 }, () => [] as SortedRun);
    for (const f of files) if (f.level > 0) this.runs[f.level - 1].push(f);
    if (compareKeys) {
      this.runs.forEach((run, i) => {
        run.sort((a, b) => compareKeys(a.minKey, b.minKey));
        if (!isSortedRun(run, compareKeys)) {
          throw new CorruptMetadataError(
            `level ${i + 1} has files with overlapping key ranges; every level above 0 must be one sorted run`,
          );
        }
      });
    }
  }

  /** Number of levels, 0 included. */
  get numberOfLevels(): number {
    return this.runs.length + 1;
  }

  /** The highest level number. */
  get maxLevel(): number {
    return this.runs.length;
  }

  /** The sorted run of level ≥ 1 (empty when the level is). */
  runOfLevel(level: number): SortedRun {
    if (level < 1 || level > this.runs.length) throw new RangeError(`level ${level} is not in 1..${this.runs.length}`);
    return this.runs[level - 1];
  }

  /** Level-0 files plus non-empty higher levels. */
  numberOfSortedRuns(): number {
    let n = this.level0.length;
    for (const run of this.runs) if (run.length > 0) n++;
    return n;
  }

  /** The highest level holding files, or -1 when there are none. */
  nonEmptyHighestLevel(): number {
    for (let i = this.runs.length - 1; i >= 0; i--) if (this.runs[i].length > 0) return i + 1;
    return this.level0.length > 0 ? 0 : -1;
  }

  /** Every sorted run, newest first: level-0 files one by one, then levels 1..max that hold files. */
  levelSortedRuns(): LevelSortedRun[] {
    const out: LevelSortedRun[] = this.level0.map((f) => ({ level: 0, run: [f] }));
    this.runs.forEach((run, i) => {
      if (run.length > 0) out.push({ level: i + 1, run });
    });
    return out;
  }

  /** All files, level 0 first. */
  allFiles(): DataFileMeta[] {
    return [...this.level0, ...this.runs.flat()];
  }

  /** Total size of all files in bytes. */
  totalFileSize(): number {
    return this.allFiles().reduce((n, f) => n + f.fileSize, 0);
  }

  /** New levels with `before` removed and `after` added (a compaction's result). */
  update(before: DataFileMeta[], after: DataFileMeta[]): Levels {
    const gone = new Set(before.map((f) => `${f.level}/${f.fileName}`));
    const kept = this.allFiles().filter((f) => !gone.has(`${f.level}/${f.fileName}`));
    return new Levels([...kept, ...after], this.numberOfLevels, this.compareKeys);
  }
}
