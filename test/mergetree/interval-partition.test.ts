import { describe, expect, it } from 'vitest';
import type { DataFileMeta } from '../../lib/manifest/types.js';
import type { JsonValue } from '../../lib/schema/value-codec.js';
import { intervalPartition } from '../../lib/mergetree/interval-partition.js';
import { isSortedRun } from '../../lib/mergetree/sorted-run.js';
import { rng, testSeed } from '../helpers/random.js';
import { file } from './fixtures.js';

const compareKeys = (a: JsonValue[], b: JsonValue[]) => (a[0] as number) - (b[0] as number);

const names = (sections: DataFileMeta[][][]) => sections.map((s) => s.map((run) => run.map((f) => f.fileName)));

describe('intervalPartition', () => {
  it('splits non-overlapping files into sections of one run each', () => {
    const sections = intervalPartition([file('c', 20, 29), file('a', 0, 9), file('b', 10, 19)], compareKeys);

    expect(names(sections)).toEqual([[['a']], [['b']], [['c']]]);
  });

  it('groups overlapping files into one section and packs them into as few runs as the sweep finds', () => {
    // a [0,10] and b [5,15] overlap; c [11,20] fits after a; d [30,40] is its own section.
    const sections = intervalPartition(
      [file('a', 0, 10), file('b', 5, 15), file('c', 11, 20), file('d', 30, 40)],
      compareKeys,
    );

    expect(names(sections)).toEqual([[['a', 'c'], ['b']], [['d']]]);
  });

  it('treats touching ranges (max = next min) as overlapping', () => {
    expect(names(intervalPartition([file('a', 0, 10), file('b', 10, 20)], compareKeys))).toEqual([[['a'], ['b']]]);
  });

  it('on random files: sections do not overlap each other, runs are sorted, every file appears once', () => {
    const seed = testSeed('interval-partition');
    const r = rng(seed);
    for (let round = 0; round < 50; round++) {
      const files = Array.from({ length: r.int(0, 30) }, (_, i) => {
        const min = r.int(0, 200);
        return file(`f${i}`, min, min + r.int(0, 30));
      });

      const sections = intervalPartition(files, compareKeys);

      const all = sections
        .flat(2)
        .map((f) => f.fileName)
        .sort();
      expect(all, `seed ${seed}`).toEqual(files.map((f) => f.fileName).sort());
      for (const section of sections) for (const run of section) expect(isSortedRun(run, compareKeys)).toBe(true);
      for (let s = 1; s < sections.length; s++) {
        const prevMax = Math.max(...sections[s - 1].flat().map((f) => f.maxKey[0] as number));
        const min = Math.min(...sections[s].flat().map((f) => f.minKey[0] as number));
        expect(min, `seed ${seed}`).toBeGreaterThan(prevMax);
      }
    }
  });
});
