/**
 * Planning the compaction of one bucket from its live files: the LSM levels, the unit the
 * strategy picks (universal; force-level-0 under the lookup producer; every run for a full
 * compaction; small-file compaction for an append table), whether deletes may be dropped, and
 * which changelog the compaction must write.
 */
import type { ManifestEntry } from '../manifest/types.js';
import { Levels } from '../mergetree/levels.js';
import type { KeyComparator } from '../mergetree/sorted-run.js';
import { pickAppendCompaction, smallFileCount } from '../mergetree/append-compaction.js';
import {
  UniversalCompaction,
  isUsefulUnit,
  pickFullCompaction,
  type CompactUnit,
} from '../mergetree/universal-compaction.js';
import type { CompactionSettings } from './compaction-settings.js';

/** What compacting one bucket will do. */
export interface BucketPlan {
  levels: Levels;
  unit: CompactUnit;
  /** True when no older data can sit below the output level, so -U/-D results are dropped. */
  dropDeletes: boolean;
  /** `totalBuckets` of the bucket's live files (the compaction's files keep it). */
  totalBuckets: number;
  /** Lookup producer: the unit takes level-0 files up, so their changelog is due. */
  lookupChangelog: boolean;
  /** Full-compaction producer: the unit rewrites the max level. */
  fullChangelog: boolean;
  /** Bytes of the unit's files. */
  inputBytes: number;
}

/** The LSM levels of a bucket's live files. */
function levelsOf(entries: readonly ManifestEntry[], settings: CompactionSettings, compareKeys: KeyComparator): Levels {
  return new Levels(
    entries.map((e) => e.file),
    settings.numLevels,
    compareKeys,
  );
}

/** The plan for one bucket's live files, or undefined when nothing is due. */
export function planBucketCompaction(
  entries: readonly ManifestEntry[],
  settings: CompactionSettings,
  compareKeys: KeyComparator,
  full: boolean,
): BucketPlan | undefined {
  if (entries.length === 0) return undefined;
  const levels = levelsOf(entries, settings, compareKeys);
  if (settings.append) {
    // An append table: adjacent small files into target-size ones, nothing merged, no levels.
    const unit = pickAppendCompaction(
      entries.map((e) => e.file),
      settings.append,
      full,
    );
    if (!unit) return undefined;
    const inputBytes = unit.files.reduce((s, f) => s + f.fileSize, 0);
    return {
      levels,
      unit,
      dropDeletes: false,
      totalBuckets: entries[0].totalBuckets,
      lookupChangelog: false,
      fullChangelog: false,
      inputBytes,
    };
  }
  let unit = pickUnit(levels, settings, full);
  if (!unit) return undefined;
  if (
    settings.deleteResetsKey &&
    !dropsDeletes(unit.outputLevel, levels) &&
    unit.files.some((f) => f.deleteRowCount > 0)
  ) {
    // A delete that resets the key would be folded into a plain record above older data of the
    // same key, which would then count again: take everything into the max level instead, where
    // nothing older remains (varve departs from Paimon here, which merges and loses the reset).
    unit = pickFullCompaction(levels.numberOfLevels, levels.levelSortedRuns())!;
  }
  const out = unit.outputLevel;
  return {
    levels,
    unit,
    dropDeletes: dropsDeletes(out, levels),
    totalBuckets: entries[0].totalBuckets,
    lookupChangelog: settings.changelogProducer === 'lookup' && out > 0 && unit.files.some((f) => f.level === 0),
    fullChangelog: settings.changelogProducer === 'full-compaction' && out === levels.maxLevel,
    inputBytes: unit.files.reduce((s, f) => s + f.fileSize, 0),
  };
}

/**
 * The unit a primary-key bucket's `levels` call for: every run for a full compaction, else
 * universal compaction's pick (force-level-0 under the lookup producer); undefined when none
 * would change anything.
 */
export function pickUnit(levels: Levels, settings: CompactionSettings, full: boolean): CompactUnit | undefined {
  const runs = levels.levelSortedRuns();
  const strategy = new UniversalCompaction(settings.universal);
  const n = levels.numberOfLevels;
  const unit = full
    ? pickFullCompaction(n, runs)
    : settings.changelogProducer === 'lookup'
      ? strategy.pickForceUpLevel0(n, runs)
      : strategy.pick(n, runs);
  return isUsefulUnit(unit) ? unit : undefined;
}

/** Number of sorted runs of a bucket's live files (level-0 files plus non-empty levels). */
export function sortedRunCount(
  entries: readonly ManifestEntry[],
  settings: CompactionSettings,
  compareKeys: KeyComparator,
): number {
  // An append table is read by concatenation, not merged: only its small files call for work.
  if (settings.append)
    return smallFileCount(
      entries.map((e) => e.file),
      settings.append,
    );
  return levelsOf(entries, settings, compareKeys).numberOfSortedRuns();
}

/** The output holds the oldest data of every key it has once nothing lives above its level. */
function dropsDeletes(outputLevel: number, levels: Levels): boolean {
  return outputLevel !== 0 && outputLevel >= levels.nonEmptyHighestLevel();
}
