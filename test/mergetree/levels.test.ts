import { describe, expect, it } from 'vitest';
import { CorruptMetadataError } from '../../lib/errors.js';
import type { JsonValue } from '../../lib/schema/value-codec.js';
import { Levels } from '../../lib/mergetree/levels.js';
import { file } from './fixtures.js';

const compareKeys = (a: JsonValue[], b: JsonValue[]) => (a[0] as number) - (b[0] as number);

describe('Levels', () => {
  it('orders level 0 newest first by maxSequenceNumber, then minSequenceNumber, creationTime, name', () => {
    const files = [
      file('old', 0, 9, { maxSequenceNumber: 5, minSequenceNumber: 0 }),
      file('new', 0, 9, { maxSequenceNumber: 50, minSequenceNumber: 40 }),
      file('tie-b', 0, 9, { maxSequenceNumber: 20, minSequenceNumber: 10, creationTime: 2 }),
      file('tie-a', 0, 9, { maxSequenceNumber: 20, minSequenceNumber: 10, creationTime: 2 }),
      file('tie-early', 0, 9, { maxSequenceNumber: 20, minSequenceNumber: 10, creationTime: 1 }),
      file('tie-lowmin', 0, 9, { maxSequenceNumber: 20, minSequenceNumber: 3 }),
    ];

    const levels = new Levels(files, 6);

    expect(levels.level0.map((f) => f.fileName)).toEqual(['new', 'tie-lowmin', 'tie-early', 'tie-a', 'tie-b', 'old']);
  });

  it('counts sorted runs: each level-0 file plus each non-empty higher level', () => {
    const files = [
      file('l0a', 0, 50, { maxSequenceNumber: 9 }),
      file('l0b', 0, 50, { maxSequenceNumber: 8 }),
      file('l2b', 20, 29, { level: 2 }),
      file('l2a', 0, 9, { level: 2 }),
      file('l5', 0, 99, { level: 5 }),
    ];

    const levels = new Levels(files, 6, compareKeys);

    expect(levels.numberOfSortedRuns()).toBe(4);
    expect(levels.levelSortedRuns().map((r) => [r.level, r.run.map((f) => f.fileName)])).toEqual([
      [0, ['l0a']],
      [0, ['l0b']],
      [2, ['l2a', 'l2b']],
      [5, ['l5']],
    ]);
    expect(levels.nonEmptyHighestLevel()).toBe(5);
    expect(levels.maxLevel).toBe(5);
  });

  it('grows the number of levels to fit the highest file level', () => {
    const levels = new Levels([file('deep', 0, 1, { level: 7 })], 6);

    expect(levels.numberOfLevels).toBe(8);
    expect(levels.runOfLevel(7).map((f) => f.fileName)).toEqual(['deep']);
  });

  it('refuses overlapping files within a level above 0', () => {
    const overlapping = [file('a', 0, 10, { level: 1 }), file('b', 10, 20, { level: 1 })];

    expect(() => new Levels(overlapping, 6, compareKeys)).toThrow(CorruptMetadataError);
  });

  it('update replaces compacted files with their output', () => {
    const a = file('a', 0, 9, { maxSequenceNumber: 3 });
    const b = file('b', 5, 15, { maxSequenceNumber: 4 });
    const levels = new Levels([a, b], 6, compareKeys);

    const next = levels.update([a, b], [file('c', 0, 15, { level: 5 })]);

    expect(next.numberOfSortedRuns()).toBe(1);
    expect(next.allFiles().map((f) => f.fileName)).toEqual(['c']);
    expect(levels.numberOfSortedRuns()).toBe(2);
  });

  it('an empty bucket has no runs and no highest level', () => {
    const levels = new Levels([], 6);

    expect(levels.numberOfSortedRuns()).toBe(0);
    expect(levels.nonEmptyHighestLevel()).toBe(-1);
  });
});
