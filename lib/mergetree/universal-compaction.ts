/**
 * Which sorted runs of a bucket to compact, and into which level: Paimon's UniversalCompaction
 * (RocksDB universal style) over the runs newest first — size amplification, then size ratio,
 * then run count — plus full compaction and the force-level-0 variant of the lookup changelog
 * producer. Picks are always a prefix of the runs (newest data first) and never output to level 0.
 */
import type { DataFileMeta } from '../manifest/types.js';
import type { LevelSortedRun } from './levels.js';
import { sortedRunSize } from './sorted-run.js';

/** Files to compact together and the level their result goes to. */
export interface CompactUnit {
  outputLevel: number;
  /** The picked runs' files, newest run first. */
  files: DataFileMeta[];
}

/** The three knobs of universal compaction (Paimon's option names and defaults). */
export interface UniversalCompactionOptions {
  /** `compaction.max-size-amplification-percent` (200). */
  maxSizeAmplificationPercent: number;
  /** `compaction.size-ratio` (1). */
  sizeRatio: number;
  /** `num-sorted-run.compaction-trigger` (5). */
  numSortedRunCompactionTrigger: number;
}

/** A unit of every file of the given runs. */
function unitOf(outputLevel: number, runs: readonly LevelSortedRun[]): CompactUnit {
  return { outputLevel, files: runs.flatMap((r) => r.run) };
}

export class UniversalCompaction {
  constructor(readonly opts: UniversalCompactionOptions) {}

  /** The unit to compact next among `runs` (newest first), or undefined when none is due. */
  pick(numLevels: number, runs: readonly LevelSortedRun[]): CompactUnit | undefined {
    const maxLevel = numLevels - 1;
    const bySizeAmp = this.pickForSizeAmp(maxLevel, runs);
    if (bySizeAmp) return bySizeAmp;
    const byRatio = this.pickForSizeRatio(maxLevel, runs);
    if (byRatio) return byRatio;
    const trigger = this.opts.numSortedRunCompactionTrigger;
    if (runs.length > trigger) {
      // Too many runs even though sizes do not call for it: force the oldest surplus in, then let
      // the size ratio extend the pick.
      return this.pickForSizeRatioFrom(maxLevel, runs, runs.length - trigger + 1, false);
    }
    return undefined;
  }

  /**
   * Size amplification: when the runs above the oldest one hold more than
   * `max-size-amplification-percent` of its size, everything is compacted into the max level.
   */
  pickForSizeAmp(maxLevel: number, runs: readonly LevelSortedRun[]): CompactUnit | undefined {
    if (runs.length < this.opts.numSortedRunCompactionTrigger) return undefined;
    let candidateSize = 0;
    for (let i = 0; i < runs.length - 1; i++) candidateSize += sortedRunSize(runs[i].run);
    const earliestRunSize = sortedRunSize(runs[runs.length - 1].run);
    if (candidateSize * 100 > this.opts.maxSizeAmplificationPercent * earliestRunSize) return unitOf(maxLevel, runs);
    return undefined;
  }

  /** Size ratio, once the run count reaches the trigger: starting from the newest run alone. */
  pickForSizeRatio(maxLevel: number, runs: readonly LevelSortedRun[]): CompactUnit | undefined {
    if (runs.length < this.opts.numSortedRunCompactionTrigger) return undefined;
    return this.pickForSizeRatioFrom(maxLevel, runs, 1, false);
  }

  /**
   * Starting with the first `candidateCount` runs, keeps adding the next run while the picked size
   * times (100 + size-ratio)% reaches it; a too-large next run still joins once the pick is
   * triggered if it sits on level 0 or 1 (merging it now is cheap and keeps levels low). Triggered
   * means at least two runs, or `forcePick`.
   */
  pickForSizeRatioFrom(
    maxLevel: number,
    runs: readonly LevelSortedRun[],
    candidateCount: number,
    forcePick: boolean,
  ): CompactUnit | undefined {
    let candidateSize = 0;
    for (let i = 0; i < candidateCount; i++) candidateSize += sortedRunSize(runs[i].run);
    let triggered = forcePick || candidateCount > 1;
    for (let i = candidateCount; i < runs.length; i++) {
      const next = runs[i];
      const nextSize = sortedRunSize(next.run);
      if ((candidateSize * (100 + this.opts.sizeRatio)) / 100 < nextSize && (!triggered || next.level > 1)) break;
      candidateSize += nextSize;
      candidateCount++;
      triggered = true;
    }
    return triggered ? createUnit(runs, maxLevel, candidateCount) : undefined;
  }

  /**
   * Paimon's ForceUpLevel0Compaction (the lookup changelog producer): the universal pick if one
   * is due, else every level-0 run forced up, so that no level-0 file waits for its changelog.
   */
  pickForceUpLevel0(numLevels: number, runs: readonly LevelSortedRun[]): CompactUnit | undefined {
    const picked = this.pick(numLevels, runs);
    if (picked) return picked;
    let level0 = 0;
    while (level0 < runs.length && runs[level0].level === 0) level0++;
    return level0 === 0 ? undefined : this.pickForSizeRatioFrom(numLevels - 1, runs, level0, true);
  }
}

/**
 * The unit of the first `runCount` runs. Output level: the max level when every run is picked,
 * else one below the next run's level; never level 0 — a pick that would land there absorbs runs
 * until it includes one above level 0 and takes that run's level.
 */
export function createUnit(runs: readonly LevelSortedRun[], maxLevel: number, runCount: number): CompactUnit {
  let outputLevel = runCount === runs.length ? maxLevel : Math.max(0, runs[runCount].level - 1);
  if (outputLevel === 0) {
    for (let i = runCount; i < runs.length; i++) {
      runCount++;
      if (runs[i].level !== 0) {
        outputLevel = runs[i].level;
        break;
      }
    }
  }
  // Everything picked (also by absorption): the result holds all data, so it goes to the max level.
  if (runCount === runs.length) outputLevel = maxLevel;
  return unitOf(outputLevel, runs.slice(0, runCount));
}

/**
 * Full compaction (Paimon's CompactStrategy.pickFullCompaction): every run into the max level;
 * nothing when the bucket is empty or already one run at the max level.
 */
export function pickFullCompaction(numLevels: number, runs: readonly LevelSortedRun[]): CompactUnit | undefined {
  const maxLevel = numLevels - 1;
  if (runs.length === 0) return undefined;
  if (runs.length === 1 && runs[0].level === maxLevel) return undefined;
  return unitOf(maxLevel, runs);
}

/** False for a unit that would change nothing: one file already at the output level (Paimon's manager skips it). */
export function isUsefulUnit(unit: CompactUnit | undefined): unit is CompactUnit {
  return (
    unit !== undefined && unit.files.length > 0 && (unit.files.length > 1 || unit.files[0].level !== unit.outputLevel)
  );
}
