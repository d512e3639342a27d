import { describe, expect, it } from 'vitest';
import { CorruptMetadataError } from '../../lib/errors.js';
import { newestOfRuns, storedSequence, versionsOfRuns, type SequencedTable } from '../../lib/mergetree/merge-plan.js';
import { rng, testSeed, type Rng } from '../helpers/random.js';
import { physicalTable, schemaOf, type Rec } from './fixtures.js';

const schema = schemaOf(['k INT NOT NULL', 'v INT'], ['k']);
const order = { keyColumns: ['k'], sequenceFields: [], sequenceDescending: false };

/** A run as the merge takes it: a physical table and absolute sequence numbers. */
function runOf(recs: Rec[]): SequencedTable {
  const table = physicalTable(schema, recs);
  return { table, sequence: storedSequence(table) };
}

/** The heap merge's answer: the last version of each key group of versionsOfRuns (every version laid out). */
function lastOfGroups(runs: SequencedTable[]) {
  const v = versionsOfRuns(schema, runs, order);
  const out = { source: [] as number[], row: [] as number[], kind: [] as number[], sequence: [] as number[] };
  for (let g = 0; g < v.groupCount; g++) {
    const last = v.groupEnd[g] - 1;
    out.source.push(v.source[last]);
    out.row.push(v.row[last]);
    out.kind.push(v.kind[last]);
    out.sequence.push(v.sequence[last]);
  }
  return out;
}

function asPlain(n: NonNullable<ReturnType<typeof newestOfRuns>>) {
  return {
    source: [...n.source.subarray(0, n.count)],
    row: [...n.row.subarray(0, n.count)],
    kind: [...n.kind.subarray(0, n.count)],
    sequence: [...n.sequence.subarray(0, n.count)],
  };
}

/** Sorted runs of distinct keys each (drawn from a small key space so runs overlap), sequence numbers that tie across runs at times. */
function randomRuns(r: Rng, repeat: boolean, maxSpace = 40): Rec[][] {
  const space = r.int(1, maxSpace);
  return Array.from({ length: r.int(1, 6) }, () => {
    const recs: Rec[] = [];
    const keep = r.next();
    for (let k = -space; k < space; k++) {
      if (r.next() > keep) continue;
      const copies = repeat && r.chance(0.2) ? 2 : 1;
      let seq = r.int(0, 6);
      for (let c = 0; c < copies; c++) recs.push({ row: { k, v: r.int(0, 99) }, kind: r.int(0, 3), seq: seq++ });
    }
    return recs;
  });
}

describe('newestOfRuns', () => {
  it('gives the same answer through merges of growing and shrinking sizes (its working arrays are reused between merges)', () => {
    const seed = testSeed('newest-of-runs reuse');
    const r = rng(seed);
    for (let round = 0; round < 40; round++) {
      // Large and small merges in turn: a small one runs in arrays a larger one filled before.
      const runs = randomRuns(r, false, round % 2 === 0 ? 3000 : 40).map(runOf);
      const newest = newestOfRuns(runs, order);
      expect(newest, `round ${round} (seed ${seed})`).not.toBeNull();
      expect(asPlain(newest!), `round ${round} (seed ${seed})`).toEqual(lastOfGroups(runs));
    }
  });

  it('takes the same version of each key as the heap merge of every version, over random runs (ties across runs, kinds, empty runs, repeated keys)', () => {
    const seed = testSeed('newest-of-runs');
    const r = rng(seed);
    for (let round = 0; round < 400; round++) {
      const runs = randomRuns(r, round % 4 === 3).map(runOf);
      const got = newestOfRuns(runs, order);
      expect(got, `round ${round} (seed ${seed})`).not.toBeNull();
      expect(asPlain(got!), `round ${round} (seed ${seed})`).toEqual(lastOfGroups(runs));
    }
  });

  it('keeps the later run on a sequence tie and the largest run folded first loses to a newer smaller run', () => {
    const big = runOf([1, 2, 3, 4].map((k) => ({ row: { k, v: 0 }, kind: 0, seq: 5 })));
    const small = runOf([
      { row: { k: 2, v: 1 }, kind: 2, seq: 9 },
      { row: { k: 5, v: 1 }, kind: 0, seq: 1 },
    ]);
    const tie = runOf([{ row: { k: 3, v: 2 }, kind: 0, seq: 5 }]);
    const got = asPlain(newestOfRuns([big, small, tie], order)!);
    expect(got).toEqual({
      source: [0, 1, 2, 0, 1],
      row: [0, 0, 0, 3, 1],
      kind: [0, 2, 0, 0, 0],
      sequence: [5, 9, 5, 5, 1],
    });
    // The tie goes the other way when the tying run comes first.
    expect(asPlain(newestOfRuns([tie, big], order)!).source).toEqual([1, 1, 1, 1]);
  });

  it('fails on a run out of key order, as the heap merge does', () => {
    const sorted = runOf([1, 2, 3].map((k) => ({ row: { k, v: 0 }, kind: 0, seq: 1 })));
    const unsorted = runOf([3, 1].map((k) => ({ row: { k, v: 0 }, kind: 0, seq: 2 })));
    expect(() => newestOfRuns([sorted, unsorted], order)).toThrow(CorruptMetadataError);
    expect(() => newestOfRuns([unsorted, runOf([])], order)).toThrow(CorruptMetadataError);
    expect(() => newestOfRuns([runOf([{ row: { k: 7, v: 0 }, kind: 0, seq: 1 }]), unsorted], order)).toThrow(
      /out of order/,
    );
  });
});
