import { describe, expect, it } from 'vitest';
import { CorruptMetadataError } from '../../lib/errors.js';
import { exactMerge, type ExactRun } from '../../lib/mergetree/exact-merge.js';
import { rng, testSeed, type Rng } from '../helpers/random.js';

/** A version of the reference merge: its words, sequence, run and row. */
interface Version {
  h: number;
  l: number;
  s: number;
  run: number;
  row: number;
  kind: number;
}

/**
 * Sorted runs of exact keys: words drawn from a few values of `hi` (so that both words decide),
 * sequence numbers that tie across runs at times, kinds 0-3, empty runs, and (with `repeat`) a key
 * repeated within a run with a higher or equal sequence number.
 */
function randomRuns(r: Rng, rows: number, repeat: boolean): ExactRun[] {
  const k = r.int(1, 12);
  const his = [0, 1, 0x80000000, 0xffffffff];
  return Array.from({ length: k }, () => {
    const n = r.chance(0.1) ? 0 : r.int(0, rows);
    const keys: Array<[number, number]> = [];
    for (let i = 0; i < n; i++) keys.push([his[r.int(0, his.length - 1)], r.int(0, Math.max(1, rows))]);
    keys.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    const hi: number[] = [];
    const lo: number[] = [];
    const seq: number[] = [];
    const kinds: number[] = [];
    for (let i = 0; i < keys.length; i++) {
      const same = i > 0 && keys[i][0] === keys[i - 1][0] && keys[i][1] === keys[i - 1][1];
      // Without `repeat`, a run holds each key once (a data file).
      if (same && !repeat) continue;
      hi.push(keys[i][0]);
      lo.push(keys[i][1]);
      seq.push(same ? seq[seq.length - 1] + r.int(0, 2) : r.int(0, 8));
      kinds.push(r.int(0, 3));
    }
    const count = hi.length;
    return {
      keys: {
        count,
        hi: Uint32Array.from(hi),
        lo: Uint32Array.from(lo),
        exact: true,
        bytes: null,
        offsets: null,
      },
      sequence: Float64Array.from(seq),
      kinds: Int8Array.from(kinds),
    };
  });
}

/** Every version in merge order by a plain sort: key words, sequence, run, row. */
function referenceOrder(runs: ExactRun[]): Version[] {
  const all: Version[] = [];
  runs.forEach((run, r) => {
    for (let i = 0; i < run.keys.count; i++)
      all.push({ h: run.keys.hi[i], l: run.keys.lo[i], s: run.sequence[i], run: r, row: i, kind: run.kinds[i] });
  });
  return all.sort((a, b) => a.h - b.h || a.l - b.l || a.s - b.s || a.run - b.run || a.row - b.row);
}

function plain(m: ReturnType<typeof exactMerge>, n: number) {
  return {
    source: [...m.source.subarray(0, n)],
    row: [...m.row.subarray(0, n)],
    kind: [...m.kind.subarray(0, n)],
    seq: [...m.seq.subarray(0, n)],
  };
}

function asArrays(versions: Version[]) {
  return {
    source: versions.map((v) => v.run),
    row: versions.map((v) => v.row),
    kind: versions.map((v) => v.kind),
    seq: versions.map((v) => v.s),
  };
}

/** The reference's key groups: where each ends, and the last version of each. */
function referenceGroups(order: Version[]): { ends: number[]; last: Version[] } {
  const ends: number[] = [];
  const last: Version[] = [];
  order.forEach((v, i) => {
    const next = order[i + 1];
    if (next === undefined || next.h !== v.h || next.l !== v.l) {
      ends.push(i + 1);
      last.push(v);
    }
  });
  return { ends, last };
}

describe('exactMerge', () => {
  it('lays out every version, and keeps the last of each key, as a plain sort orders them (small and large merges, both ways of finding the last)', () => {
    const seed = testSeed('exact-merge');
    const r = rng(seed);
    for (let round = 0; round < 120; round++) {
      // Small merges run the tournament only; large ones (over 8,192 versions) find the last by a sort.
      const rows = round % 6 === 0 ? 4000 : r.int(1, 60);
      const runs = randomRuns(r, rows, round % 4 === 3);
      const order = referenceOrder(runs);
      const { ends, last } = referenceGroups(order);
      const what = `round ${round} (seed ${seed}, ${order.length} versions)`;
      const all = exactMerge(runs, false);
      expect(all.groups, what).toBe(ends.length);
      expect([...all.groupEnd.subarray(0, all.groups)], what).toEqual(ends);
      expect(plain(all, order.length), what).toEqual(asArrays(order));
      const newest = exactMerge(runs, true);
      expect(newest.groups, what).toBe(last.length);
      expect(plain(newest, newest.groups), what).toEqual(asArrays(last));
    }
  });

  it('fails on a run out of order, by either way of finding the last version', () => {
    for (const n of [10, 20_000]) {
      const hi = new Uint32Array(n);
      const lo = Uint32Array.from({ length: n }, (_, i) => i);
      // Row 7 goes below row 6.
      lo[7] = 2;
      const bad: ExactRun = {
        keys: { count: n, hi, lo, exact: true, bytes: null, offsets: null },
        sequence: new Float64Array(n),
        kinds: new Int8Array(n),
      };
      const good: ExactRun = { ...bad, keys: { ...bad.keys, lo: Uint32Array.from({ length: n }, (_, i) => i) } };
      expect(() => exactMerge([good, bad], true)).toThrow(CorruptMetadataError);
      expect(() => exactMerge([good, bad], true)).toThrow(/sorted run 1 is out of order at row 7/);
      expect(() => exactMerge([good, bad], false)).toThrow(/sorted run 1 is out of order at row 7/);
    }
  });
});
