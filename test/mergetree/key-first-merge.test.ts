import { describe, expect, it } from 'vitest';
import { openDataFile, writeDataFile, type DataFileDecoder } from '../../lib/format/data-file.js';
import {
  keyFirstColumns,
  mergeKeyFirst,
  mergesKeyFirst,
  ordersByRunSequence,
  type KeyFirstRun,
} from '../../lib/mergetree/key-first-merge.js';
import { mergeEngineFor } from '../../lib/mergetree/merge-function.js';
import { concatTables } from '../../lib/format/columns.js';
import { rng, testSeed } from '../helpers/random.js';
import { physicalTable, recordsOf } from './fixtures.js';
import { naiveMerge } from './naive-merge.js';
import { LAYOUTS, SCENARIOS, randomRuns } from './random-data.js';

describe('mergeKeyFirst', () => {
  it('matches a naive merge on random runs read from Parquet files with small row groups, decoding values only of row groups with winners', async () => {
    const seed = testSeed('key-first-merge random');
    const r = rng(seed);
    let roundsByRange = 0;
    for (const [layoutName, layout] of Object.entries(LAYOUTS)) {
      for (const scenario of SCENARIOS) {
        const engine = mergeEngineFor(scenario.config);
        if (!mergesKeyFirst(engine)) continue;
        for (let round = 0; round < 3; round++) {
          // Prepare: each run is a data file of row groups of 1 to 8 rows.
          const runs = randomRuns(layout, scenario, r, r.int(1, 5), r.int(1, 60));
          const dropDeletes = r.chance(0.6);
          const keepKinds = r.chance(0.5);
          const opts = { schema: layout, keyColumns: layout.primaryKeys, engine, dropDeletes, keepKinds };
          // Half the rounds give the runs disjoint sequence ranges (as commits do, in a random
          // order of runs) and merge them without decoding _SEQUENCE_NUMBER up front.
          if (r.chance(0.5)) {
            const rank = runs.map((_, j) => j).sort(() => r.next() - 0.5);
            runs.forEach((recs, j) => recs.forEach((x) => (x.seq += rank[j] * 100_000)));
          }
          const ranges = runs.map((recs) => ({
            min: Math.min(...recs.map((x) => x.seq)),
            max: Math.max(...recs.map((x) => x.seq)),
          }));
          const byRange = runs.every((recs) => recs.length > 0) && ordersByRunSequence(ranges, opts);
          if (byRange) roundsByRange++;
          const context = `${layoutName} / ${scenario.name} / round ${round}${byRange ? ' / by sequence range' : ''} (seed ${seed})`;
          const decoders: DataFileDecoder[] = [];
          const decoded: number[] = [];
          const inputs: KeyFirstRun[] = [];
          for (const [j, recs] of runs.entries()) {
            const base = recs.length ? Math.min(...recs.map((x) => x.seq)) - r.int(0, 3) : 0;
            const table = physicalTable(
              layout,
              recs.map((x) => ({ ...x, seq: x.seq - base })),
            );
            const decoder = await openDataFile(
              writeDataFile(table, { compression: 'zstd', rowGroupSize: r.int(1, 8) }),
            );
            decoders.push(decoder);
            const keys = await decoder.readRowGroups(keyFirstColumns(opts, byRange));
            inputs.push({
              keys: keys.length ? concatTables(keys, keys[0].schema) : table.select(keyFirstColumns(opts, byRange)),
              sequenceBase: base,
              ...(byRange ? { sequenceRange: ranges[j] } : {}),
              rowGroupRows: decoder.rowGroupRows,
              values: (cols, groups) => {
                decoded.push(...groups.map((g) => decoder.rowGroupRows[g]));
                return decoder.readRowGroups(cols, groups);
              },
            });
          }

          // Act
          const out = await mergeKeyFirst(inputs, opts);
          decoders.forEach((d) => d.free());

          // Assess: the records of a full merge, and no more value rows decoded than the row
          // groups of the winners hold.
          const expected = naiveMerge(layout, scenario.config, runs.flat(), { raw: false, dropDeletes, keepKinds });
          expect(recordsOf(layout, out), context).toEqual(expected);
          expect(
            decoded.reduce((a, b) => a + b, 0),
            context,
          ).toBeLessThanOrEqual(expected.length * 8);
        }
      }
    }
    expect(roundsByRange, `rounds merged by sequence range (seed ${seed})`).toBeGreaterThan(0);
  });

  it('orders by run sequence ranges only when they do not overlap and no sequence.field is set; refuses keys without sequence numbers otherwise', async () => {
    const layout = LAYOUTS.bigint;
    const engine = mergeEngineFor(SCENARIOS[0].config);
    const opts = { schema: layout, keyColumns: ['k'], engine, dropDeletes: true };
    expect(
      ordersByRunSequence(
        [
          { min: 10, max: 19 },
          { min: 0, max: 9 },
        ],
        opts,
      ),
    ).toBe(true);
    expect(
      ordersByRunSequence(
        [
          { min: 0, max: 10 },
          { min: 10, max: 19 },
        ],
        opts,
      ),
    ).toBe(false);
    expect(
      ordersByRunSequence(
        [
          { min: 0, max: 9 },
          { min: 10, max: 19 },
        ],
        { ...opts, repeatedKeys: true },
      ),
    ).toBe(false);
    const withField = SCENARIOS.find((x) => x.config.sequenceFields.length > 0);
    if (withField)
      expect(
        ordersByRunSequence(
          [
            { min: 0, max: 9 },
            { min: 10, max: 19 },
          ],
          { engine: mergeEngineFor(withField.config) },
        ),
      ).toBe(false);

    // Two runs of the same keys with overlapping ranges, their keys decoded without _SEQUENCE_NUMBER.
    const row = (k: number, v: number) => ({ k: BigInt(k), v, s: `s${v}`, d: v / 2, c: 1n, ts: 0n });
    const run = (v: number, seq: number): KeyFirstRun => {
      const t = physicalTable(
        layout,
        [0, 1].map((k) => ({ row: row(k, v), kind: 0, seq: seq + k })),
      );
      return {
        keys: t.select(keyFirstColumns(opts, true)),
        sequenceBase: 0,
        sequenceRange: { min: seq, max: seq + 1 },
        rowGroupRows: [2],
        values: async (cols) => [t.select(cols)],
      };
    };
    await expect(mergeKeyFirst([run(1, 0), run(2, 1)], opts)).rejects.toThrow(/sequence ranges do not overlap/);
    const out = await mergeKeyFirst([run(2, 10), run(1, 0)], opts);
    expect(recordsOf(layout, out).map((x) => [x.row.v, x.seq])).toEqual([
      [2, 10],
      [2, 11],
    ]);
  });

  it('decodes no value column of a run whose every version loses', async () => {
    const layout = LAYOUTS.bigint;
    const engine = mergeEngineFor(SCENARIOS[0].config);
    const row = (k: number, v: number) => ({ k: BigInt(k), v, s: `s${v}`, d: v / 2, c: 1n, ts: 0n });
    const old = physicalTable(
      layout,
      [0, 1, 2, 3].map((k) => ({ row: row(k, 1), kind: 0, seq: k })),
    );
    const newer = physicalTable(
      layout,
      [0, 1, 2, 3].map((k) => ({ row: row(k, 2), kind: 0, seq: 10 + k })),
    );
    const asked: number[] = [];
    const run = async (t: typeof old, id: number): Promise<KeyFirstRun> => {
      const d = await openDataFile(writeDataFile(t, { compression: 'zstd', rowGroupSize: 2 }));
      return {
        keys: t,
        sequenceBase: 0,
        rowGroupRows: d.rowGroupRows,
        values: (cols, groups) => (asked.push(id), d.readRowGroups(cols, groups)),
      };
    };

    const out = await mergeKeyFirst([await run(old, 0), await run(newer, 1)], {
      schema: layout,
      keyColumns: ['k'],
      engine,
      dropDeletes: true,
    });

    expect(asked).toEqual([1]);
    expect(recordsOf(layout, out).map((x) => x.row.v)).toEqual([2, 2, 2, 2]);
  });
  it('takes a newest run that wins every key whole (all its row groups), and falls back to the plan when one of its rows drops out', async () => {
    const layout = LAYOUTS.bigint;
    const engine = mergeEngineFor(SCENARIOS[0].config);
    const row = (k: number, v: number) => ({ k: BigInt(k), v, s: `s${v}-${k}`, d: v / 2, c: 1n, ts: 0n });
    for (const [name, retractKey, dropDeletes] of [
      ['all upserts', -1, true],
      ['a retraction dropped', 4, true],
      ['a retraction kept', 4, false],
    ] as const) {
      const oldRecs = [0, 1, 2, 3, 4].map((k) => ({ row: row(k, 1), kind: 0, seq: k }));
      const newRecs = [0, 1, 2, 3, 4].map((k) => ({ row: row(k, 2), kind: k === retractKey ? 3 : 0, seq: 10 + k }));
      const asked: Array<[number, number[]]> = [];
      const run = async (recs: typeof oldRecs, id: number): Promise<KeyFirstRun> => {
        const t = physicalTable(layout, recs);
        const d = await openDataFile(writeDataFile(t, { compression: 'zstd', rowGroupSize: 2 }));
        return {
          keys: t,
          sequenceBase: 0,
          rowGroupRows: d.rowGroupRows,
          values: (cols, groups) => (asked.push([id, groups]), d.readRowGroups(cols, groups)),
        };
      };

      const out = await mergeKeyFirst([await run(oldRecs, 0), await run(newRecs, 1)], {
        schema: layout,
        keyColumns: ['k'],
        engine,
        dropDeletes,
        keepKinds: !dropDeletes,
      });

      expect(recordsOf(layout, out), name).toEqual(
        naiveMerge(layout, SCENARIOS[0].config, [...oldRecs, ...newRecs], {
          raw: false,
          dropDeletes,
          keepKinds: !dropDeletes,
        }),
      );
      expect(asked, name).toEqual([[1, retractKey >= 0 && dropDeletes ? [0, 1] : [0, 1, 2]]]);
    }
  });
});
