/**
 * Universal compaction picking, case by case from Paimon's semantics (UniversalCompaction,
 * ForceUpLevel0Compaction, CompactStrategy.pickFullCompaction).
 */
import { describe, expect, it } from 'vitest';
import type { DataFileMeta } from '../../lib/manifest/types.js';
import type { LevelSortedRun } from '../../lib/mergetree/levels.js';
import {
  UniversalCompaction,
  createUnit,
  isUsefulUnit,
  pickFullCompaction,
  type CompactUnit,
} from '../../lib/mergetree/universal-compaction.js';

let names = 0;

function file(size: number, level = 0): DataFileMeta {
  return {
    fileName: `f${++names}`,
    fileSize: size,
    rowCount: 1,
    minKey: [0],
    maxKey: [0],
    sequenceBase: 0,
    minSequenceNumber: 0,
    maxSequenceNumber: 0,
    schemaId: 0,
    level,
    creationTime: 0,
    deleteRowCount: 0,
    fileSource: 'APPEND',
  };
}

function run(level: number, size: number): LevelSortedRun {
  return { level, run: [file(size, level)] };
}

function level0(...sizes: number[]): LevelSortedRun[] {
  return sizes.map((s) => run(0, s));
}

function sizes(unit: CompactUnit | undefined): number[] | undefined {
  return unit?.files.map((f) => f.fileSize);
}

function universal(
  maxSizeAmplificationPercent: number,
  sizeRatio: number,
  numSortedRunCompactionTrigger: number,
): UniversalCompaction {
  return new UniversalCompaction({ maxSizeAmplificationPercent, sizeRatio, numSortedRunCompactionTrigger });
}

describe('createUnit output level', () => {
  const runs = () => [run(0, 1), run(0, 1), run(1, 1), run(3, 1), run(4, 1)];

  it('is one below the next run, never level 0, and the max level when everything is picked', () => {
    // Prepare / Act / Assess per run count: 1 and 2 would land on level 0, so they absorb the level-1 run.
    expect(createUnit(runs(), 5, 1).outputLevel).toBe(1);
    expect(createUnit(runs(), 5, 1).files).toHaveLength(3);
    expect(createUnit(runs(), 5, 2).outputLevel).toBe(1);
    expect(createUnit(runs(), 5, 3).outputLevel).toBe(2);
    expect(createUnit(runs(), 5, 4).outputLevel).toBe(3);
    expect(createUnit(runs(), 5, 5).outputLevel).toBe(5);
  });

  it('goes to the max level when absorbing level-0 runs takes every run', () => {
    const unit = createUnit([run(0, 1), run(0, 1), run(0, 1)], 5, 1);
    expect(unit.outputLevel).toBe(5);
    expect(unit.files).toHaveLength(3);
  });
});

describe('UniversalCompaction.pick', () => {
  it('picks everything into the max level by size amplification', () => {
    const unit = universal(25, 1, 3).pick(3, level0(1, 2, 3, 3));
    expect(sizes(unit)).toEqual([1, 2, 3, 3]);
    expect(unit!.outputLevel).toBe(2);
  });

  it('picks neighbouring runs of similar size by size ratio, stopping at a much larger run above level 1', () => {
    const unit = universal(25, 1, 3).pick(4, [run(0, 1), run(1, 1), run(2, 1), run(3, 50)]);
    expect(sizes(unit)).toEqual([1, 1, 1]);
    expect(unit!.outputLevel).toBe(2);
  });

  it('forces the surplus runs in by run count, then extends by size ratio', () => {
    const unit = universal(25, 1, 3).pick(4, [run(0, 1), run(1, 2), run(2, 3), run(3, 50)]);
    expect(sizes(unit)).toEqual([1, 2, 3]);
    expect(unit!.outputLevel).toBe(2);
  });

  it('picks nothing below the trigger', () => {
    expect(universal(200, 1, 5).pick(6, level0(1, 1, 1, 1))).toBeUndefined();
  });

  it('never outputs to level 0', () => {
    const c = universal(25, 1, 3);
    const a = c.pick(3, [run(0, 1), run(0, 1), run(1, 1), run(2, 50)]);
    expect(sizes(a)).toEqual([1, 1, 1]);
    expect(a!.outputLevel).toBe(1);
    const b = c.pick(3, [run(0, 1), run(0, 2), run(1, 3), run(2, 50)]);
    expect(sizes(b)).toEqual([1, 2, 3]);
    expect(b!.outputLevel).toBe(1);
  });

  it('keeps absorbing level-0 runs once triggered, even much larger ones', () => {
    const unit = universal(200, 1, 5).pick(6, level0(1, 1, 1, 1024, 1024 * 1024));
    expect(sizes(unit)).toEqual([1, 1, 1, 1024, 1024 * 1024]);
    expect(unit!.outputLevel).toBe(5);
  });

  it('honours the size ratio threshold', () => {
    const runs = () => [run(0, 8), run(1, 9), run(2, 10)];
    expect(universal(25, 10, 2).pickForSizeRatio(3, runs())).toBeUndefined();
    expect(sizes(universal(25, 20, 2).pickForSizeRatio(3, runs()))).toEqual([8, 9, 10]);
  });
});

/** Prepends a run of size 1 and applies one pick of `pickFn`, replacing the picked runs by their sum. */
function step(
  current: number[],
  pickFn: (runs: LevelSortedRun[]) => CompactUnit | undefined,
  levels: (i: number) => number,
): number[] {
  const next = [1, ...current];
  const unit = pickFn(next.map((s, i) => run(levels(i), s)));
  if (!unit) return next;
  const picked = unit.files.length;
  return [unit.files.reduce((s, f) => s + f.fileSize, 0), ...next.slice(picked)];
}

describe('universal compaction over a stream of flushes', () => {
  it('bounds size amplification', () => {
    const c = universal(25, 0, 1);
    const expected = [
      [2],
      [3],
      [4],
      [1, 4],
      [6],
      [1, 6],
      [8],
      [1, 8],
      [1, 1, 8],
      [11],
      [1, 11],
      [1, 1, 11],
      [14],
      [1, 14],
      [1, 1, 14],
      [1, 1, 1, 14],
      [18],
    ];
    let current = [1];
    for (const e of expected) {
      current = step(
        current,
        (runs) => c.pickForSizeAmp(2, runs),
        () => 0,
      );
      expect(current).toEqual(e);
    }
  });

  it('merges runs of similar size', () => {
    const c = universal(25, 1, 5);
    const expected = [
      [5],
      [1, 5],
      [1, 1, 5],
      [1, 1, 1, 5],
      [4, 5],
      [1, 4, 5],
      [1, 1, 4, 5],
      [3, 4, 5],
      [1, 3, 4, 5],
      [2, 3, 4, 5],
      [1, 2, 3, 4, 5],
      [16],
      [1, 16],
      [1, 1, 16],
      [1, 1, 1, 16],
      [4, 16],
      [1, 4, 16],
      [1, 1, 4, 16],
      [3, 4, 16],
      [1, 3, 4, 16],
      [2, 3, 4, 16],
      [1, 2, 3, 4, 16],
      [11, 16],
    ];
    let current = [1, 1, 1, 1];
    for (const e of expected) {
      current = step(
        current,
        (runs) => c.pickForSizeRatio(runs.length, runs),
        (i) => i,
      );
      expect(current).toEqual(e);
    }
  });
});

describe('force level 0 up (lookup producer)', () => {
  const c = universal(25, 1, 3);

  it('takes the universal pick when one is due', () => {
    const unit = c.pickForceUpLevel0(3, level0(1, 2, 2, 2));
    expect(sizes(unit)).toEqual([1, 2, 2, 2]);
    expect(unit!.outputLevel).toBe(2);
  });

  it('forces every level-0 file up, into the empty level below the next run', () => {
    const unit = c.pickForceUpLevel0(3, [run(0, 1), run(2, 2)]);
    expect(sizes(unit)).toEqual([1]);
    expect(unit!.outputLevel).toBe(1);
  });

  it('forces several level-0 files up together, absorbing a level-1 run', () => {
    const unit = universal(200, 1, 5).pickForceUpLevel0(6, [run(0, 1), run(0, 1), run(1, 100), run(5, 1000)]);
    expect(sizes(unit)).toEqual([1, 1, 100]);
    expect(unit!.outputLevel).toBe(4);
  });

  it('picks nothing without level-0 files', () => {
    expect(c.pickForceUpLevel0(3, [run(1, 1), run(2, 2)])).toBeUndefined();
  });
});

describe('full compaction', () => {
  it('takes every run into the max level', () => {
    const unit = pickFullCompaction(6, [run(0, 1), run(2, 5), run(3, 7)]);
    expect(sizes(unit)).toEqual([1, 5, 7]);
    expect(unit!.outputLevel).toBe(5);
  });

  it('has nothing to do for an empty bucket or one already fully compacted', () => {
    expect(pickFullCompaction(6, [])).toBeUndefined();
    expect(pickFullCompaction(6, [run(5, 10)])).toBeUndefined();
    expect(pickFullCompaction(6, [run(4, 10)])!.outputLevel).toBe(5);
  });
});

describe('isUsefulUnit', () => {
  it('rejects a unit that is one file already at its output level', () => {
    expect(isUsefulUnit({ outputLevel: 3, files: [file(1, 3)] })).toBe(false);
    expect(isUsefulUnit({ outputLevel: 3, files: [file(1, 2)] })).toBe(true);
    expect(isUsefulUnit({ outputLevel: 3, files: [] })).toBe(false);
    expect(isUsefulUnit(undefined)).toBe(false);
  });
});
