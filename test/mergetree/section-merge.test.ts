/**
 * The merge of a compaction section within a memory budget: with a budget too small for even two
 * runs, every section goes through spill passes (sorted runs on local disk) and must give exactly
 * what the unbounded merge gives, for every merge engine.
 */
import type * as arrow from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { mergeEngineFor } from '../../lib/mergetree/merge-function.js';
import { cutPieces, fileRun, mergeSection, type SectionRun } from '../../lib/mergetree/section-merge.js';
import { schemaOf } from './fixtures.js';
import { rng, testSeed, type Rng } from '../helpers/random.js';
import { physicalTable, recordsOf } from './fixtures.js';
import { LAYOUTS, SCENARIOS, randomRuns } from './random-data.js';
import { naiveMerge } from './naive-merge.js';

/** A table cut into chunks of random sizes, yielded one by one. */
async function* chunksOf(table: arrow.Table, r: Rng): AsyncGenerator<arrow.Table> {
  for (let at = 0; at < table.numRows; ) {
    const n = r.int(4, 30);
    yield table.slice(at, at + n);
    at += n;
  }
}

describe('mergeSection', () => {
  it('spilling under a tiny budget gives the unbounded result, for every engine (randomized)', async () => {
    const seed = testSeed('section-merge');
    const r = rng(seed);
    for (const [layoutName, layout] of Object.entries(LAYOUTS)) {
      for (const scenario of SCENARIOS) {
        for (let round = 0; round < 1; round++) {
          // Prepare: 3..8 runs, the last one or two at the max level (never spilled with the rest).
          const recs = randomRuns(layout, scenario, r, r.int(3, 8), r.int(1, 70));
          const tables = recs.map((rs) => physicalTable(layout, rs));
          const levels = tables.map((_, i) => (i >= tables.length - r.int(1, 2) ? 5 : Math.min(i, 4)));
          const bases = tables.map(() => (r.chance(0.3) ? r.int(1, 5) * 100_000 : 0));
          const runs = (): SectionRun[] =>
            tables.map((t, i) =>
              fileRun(
                { level: levels[i], sequenceBase: bases[i], rowCount: t.numRows, fileSize: 50 * t.numRows },
                chunksOf(t, r),
              ),
            );
          const dropDeletes = r.chance(0.5);
          const base = { schema: layout, engine: mergeEngineFor(scenario.config), dropDeletes, maxLevel: 5 };
          const context = `${layoutName} / ${scenario.name} / round ${round} (seed ${seed})`;

          // Act
          const collect = async (memoryBudget: number, stepRows?: number) => {
            let passes = 0;
            const merged: arrow.Table[] = [];
            const top: arrow.Table[] = [];
            for await (const { pieces, merged: m } of mergeSection(runs(), {
              ...base,
              memoryBudget,
              stepRows,
              onSpill: () => passes++,
            })) {
              merged.push(m);
              // Max-level rows stay apart from the rest through every spill pass.
              for (const p of pieces) if (p.level === 5) top.push(p.table);
            }
            const topKeys = top.flatMap((t) =>
              recordsOf(layout, t).map((x) => JSON.stringify(layout.primaryKeys.map((k) => String(x.row[k])))),
            );
            return {
              records: merged.flatMap((m) => recordsOf(layout, m)),
              passes,
              topKeys: [...new Set(topKeys)].sort(),
            };
          };
          const unbounded = await collect(Infinity, Infinity);
          const stepped = await collect(Infinity, r.int(1, 12));
          const spilled = await collect(1, r.int(1, 12));

          // Assess: the unbounded merge (data-file runs cut at their chunk ends) is the row-by-row model's.
          const absolute = recs.flatMap((rs, i) => rs.map((x) => ({ ...x, seq: x.seq + bases[i] })));
          const expected = naiveMerge(layout, scenario.config, absolute, { raw: false, dropDeletes, keepKinds: true });
          expect(unbounded.records, context).toEqual(expected);
          expect(unbounded.passes, context).toBe(0);
          // Runs that are all empty leave nothing to spill.
          if (tables.some((t) => t.numRows > 0)) expect(spilled.passes, context).toBeGreaterThan(0);
          expect(spilled.records, context).toEqual(unbounded.records);
          expect(stepped.records, context).toEqual(unbounded.records);
          expect(stepped.topKeys, context).toEqual(unbounded.topKeys);
          expect(spilled.topKeys, context).toEqual(unbounded.topKeys);
        }
      }
    }
  });

  it('cutPieces cuts aligned pieces into small key intervals and never cuts a key apart (randomized)', () => {
    const seed = testSeed('cut-pieces');
    const r = rng(seed);
    const schema = schemaOf(['k BIGINT NOT NULL', 'v INT'], ['k']);
    for (let round = 0; round < 40; round++) {
      // Prepare: runs of sorted keys with repeats (a spilled run holds several versions of a key).
      const runCount = r.int(1, 5);
      const keysOf = () => Array.from({ length: r.int(0, 60) }, () => r.int(0, 15)).sort((a, b) => a - b);
      const tables = Array.from({ length: runCount }, () =>
        physicalTable(
          schema,
          keysOf().map((k, i) => ({ row: { k: BigInt(k), v: i }, kind: 0, seq: i })),
        ),
      );
      const pieces = tables.map((table, run) => ({ table, sequenceBase: 0, run })).filter((p) => p.table.numRows > 0);
      const maxRows = r.int(1, 20);
      const context = `round ${round}, max ${maxRows} (seed ${seed})`;

      // Act
      const steps = [...cutPieces(pieces, ['k'], maxRows)];

      // Assess: per run the steps concatenate to the input; keys of a step all lie below the next step's.
      const keys = (t: arrow.Table) => recordsOf(schema, t).map((x) => Number(x.row.k));
      for (const p of pieces)
        expect(
          steps.flatMap((s) => s.filter((q) => q.run === p.run).flatMap((q) => keys(q.table))),
          context,
        ).toEqual(keys(p.table));
      let prevMax = -1;
      for (const step of steps) {
        const ks = step.flatMap((q) => keys(q.table));
        expect(ks.length, context).toBeGreaterThan(0);
        expect(Math.min(...ks), context).toBeGreaterThan(prevMax);
        prevMax = Math.max(...ks);
        // Over the limit only when the step holds one key.
        if (ks.length > Math.max(maxRows, pieces.length)) expect(new Set(ks).size, context).toBe(1);
      }
    }
  });
});
