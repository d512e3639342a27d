import { describe, expect, it } from 'vitest';
import { mergeConfig } from '../../lib/mergetree/merge-config.js';
import { mergeEngineFor } from '../../lib/mergetree/merge-function.js';
import { mergeSortedRuns, mergeSortedRunsBatched } from '../../lib/mergetree/sort-merge-reader.js';
import { rng, testSeed } from '../helpers/random.js';
import { D, I, UA, physicalTable, recordsOf, schemaOf, type Rec } from './fixtures.js';
import { naiveMerge } from './naive-merge.js';
import { LAYOUTS, SCENARIOS, randomRuns } from './random-data.js';

const schema = schemaOf(['id BIGINT', 'name STRING'], ['id']);
const rec = (id: number, name: string | null, seq: number, kind = I): Rec => ({
  row: { id: BigInt(id), name },
  kind,
  seq,
});

function read(
  runs: { recs: Rec[]; base: number }[],
  opts: { dropDeletes?: boolean; keepKinds?: boolean; engine?: string } = {},
) {
  const engine = mergeEngineFor(mergeConfig({ engine: (opts.engine ?? 'deduplicate') as 'deduplicate' }));
  const out = mergeSortedRuns(
    runs.map((r) => ({
      table: physicalTable(
        schema,
        r.recs.map((x) => ({ ...x, seq: x.seq - r.base })),
      ),
      sequenceBase: r.base,
    })),
    { schema, keyColumns: ['id'], engine, dropDeletes: opts.dropDeletes ?? true, keepKinds: opts.keepKinds },
  );
  return recordsOf(schema, out);
}

describe('mergeSortedRuns', () => {
  it('merges overlapping runs by key; the highest absolute sequence number wins', () => {
    // Prepare: the second run is older (lower base) although it comes later in the list.
    const newer = { recs: [rec(1, 'new1', 105), rec(3, 'new3', 106)], base: 100 };
    const older = { recs: [rec(1, 'old1', 7), rec(2, 'old2', 8), rec(3, 'old3', 9)], base: 5 };

    // Act
    const out = read([newer, older]);

    // Assess: output sequence numbers are absolute.
    expect(out).toEqual([rec(1, 'new1', 105), rec(2, 'old2', 8), rec(3, 'new3', 106)]);
  });

  it('drops deleted keys by default; keeps -D with their kind when asked (compaction below the top level)', () => {
    const runs = [
      { recs: [rec(1, 'a', 1), rec(2, 'b', 2)], base: 0 },
      { recs: [rec(1, 'a', 3, D)], base: 0 },
    ];

    const dropped = read(runs);
    const kept = read(runs, { dropDeletes: false });

    expect(dropped.map((r) => r.row.id)).toEqual([2n]);
    expect(kept.map((r) => [r.row.id, r.kind])).toEqual([
      [1n, D],
      [2n, I],
    ]);
  });

  it('writes +I for the merged state unless keepKinds (audit log) is set', () => {
    const runs = [
      { recs: [rec(1, 'a', 1)], base: 0 },
      { recs: [rec(1, 'b', 2, UA)], base: 0 },
    ];

    expect(read(runs)[0].kind).toBe(I);
    expect(read(runs, { keepKinds: true })[0].kind).toBe(UA);
  });

  it('reads a single run without merging, still dropping deletes and rebasing sequence numbers', () => {
    const out = read([{ recs: [rec(1, 'a', 11), rec(2, 'b', 12, D), rec(3, 'c', 13)], base: 10 }]);

    expect(out).toEqual([rec(1, 'a', 11), rec(3, 'c', 13)]);
  });

  it('returns an empty table for no runs or empty runs', () => {
    expect(read([])).toEqual([]);
    expect(
      read([
        { recs: [], base: 0 },
        { recs: [], base: 4 },
      ]),
    ).toEqual([]);
  });

  it('merges DECIMAL and composite STRING keys in exact and code-point order', () => {
    const dec = schemaOf(['k DECIMAL(22,2)', 's STRING', 'v INT'], ['k', 's']);
    const r = (k: string, s: string, v: number, seq: number): Rec => ({ row: { k, s, v }, kind: I, seq });
    const a = [r('-12345678901234567890.12', 'x', 1, 1), r('0.10', '\uFFFF', 2, 2), r('0.10', '\u{1F600}', 3, 3)];
    const b = [
      r('-12345678901234567890.12', 'x', 10, 10),
      r('0.10', '\u{1F600}', 30, 30),
      r('12345678901234567890.12', '', 40, 40),
    ];

    const out = mergeSortedRuns(
      [a, b].map((recs) => ({ table: physicalTable(dec, recs), sequenceBase: 0 })),
      { schema: dec, keyColumns: ['k', 's'], engine: mergeEngineFor(mergeConfig()), dropDeletes: true },
    );

    expect(recordsOf(dec, out).map((x) => [x.row.k, x.row.s, x.row.v])).toEqual([
      ['-12345678901234567890.12', 'x', 10],
      ['0.10', '\uFFFF', 2],
      ['0.10', '\u{1F600}', 30],
      ['12345678901234567890.12', '', 40],
    ]);
  });

  it('refuses a run that is not sorted by key', () => {
    const bad = { recs: [rec(2, 'b', 1), rec(1, 'a', 2)], base: 0 };

    expect(() => read([bad, { recs: [rec(1, 'x', 3)], base: 0 }])).toThrow(/out of order/);
  });

  it('matches a naive row-based merge on random runs for every engine', () => {
    const seed = testSeed('sort-merge-reader random');
    const r = rng(seed);
    for (const [layoutName, layout] of Object.entries(LAYOUTS)) {
      for (const scenario of SCENARIOS) {
        for (let round = 0; round < 6; round++) {
          // Prepare
          const runs = randomRuns(layout, scenario, r, r.int(1, 5), r.int(1, 60));
          const dropDeletes = r.chance(0.6);
          const keepKinds = r.chance(0.5);
          const context = `${layoutName} / ${scenario.name} / round ${round} (seed ${seed})`;

          // Act
          const out = mergeSortedRuns(
            runs.map((recs) => {
              const base = recs.length ? Math.min(...recs.map((x) => x.seq)) - r.int(0, 3) : 0;
              return {
                table: physicalTable(
                  layout,
                  recs.map((x) => ({ ...x, seq: x.seq - base })),
                ),
                sequenceBase: base,
              };
            }),
            {
              schema: layout,
              keyColumns: layout.primaryKeys,
              engine: mergeEngineFor(scenario.config),
              dropDeletes,
              keepKinds,
            },
          );

          // Assess
          const expected = naiveMerge(layout, scenario.config, runs.flat(), { raw: false, dropDeletes, keepKinds });
          expect(recordsOf(layout, out), context).toEqual(expected);
        }
      }
    }
  });

  it('the batched variant yields the same records in key order, whole keys per batch', () => {
    const seed = testSeed('sort-merge-reader batched');
    const r = rng(seed);
    const layout = LAYOUTS.composite;
    for (const scenario of SCENARIOS.filter((x) => x.name !== 'first-row')) {
      const runs = randomRuns(layout, scenario, r, r.int(1, 4), 50).map((recs) => ({
        table: physicalTable(layout, recs),
        sequenceBase: 0,
      }));
      const opts = {
        schema: layout,
        keyColumns: layout.primaryKeys,
        engine: mergeEngineFor(scenario.config),
        dropDeletes: r.chance(0.5),
      };

      const batches = [...mergeSortedRunsBatched(runs, { ...opts, batchRows: r.int(1, 20) })];

      const whole = recordsOf(layout, mergeSortedRuns(runs, opts));
      expect(
        batches.flatMap((b) => recordsOf(layout, b)),
        `${scenario.name} (seed ${seed})`,
      ).toEqual(whole);
      expect(batches.every((b) => b.numRows > 0)).toBe(true);
    }
  });
});
