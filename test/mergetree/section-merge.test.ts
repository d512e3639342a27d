/**
 * The merge of a compaction section within a memory budget: with a budget too small for even two
 * runs, every section goes through spill passes (sorted runs on local disk) and must give exactly
 * what the unbounded merge gives, for every merge engine.
 */
import type * as arrow from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { mergeEngineFor } from '../../lib/mergetree/merge-function.js';
import { fileRun, mergeSection, type SectionRun } from '../../lib/mergetree/section-merge.js';
import { rng, testSeed, type Rng } from '../helpers/random.js';
import { physicalTable, recordsOf } from './fixtures.js';
import { LAYOUTS, SCENARIOS, randomRuns } from './random-data.js';

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
            tables.map((t, i) => fileRun({ level: levels[i], sequenceBase: bases[i], rowCount: t.numRows, fileSize: 50 * t.numRows }, chunksOf(t, r)));
          const dropDeletes = r.chance(0.5);
          const base = { schema: layout, engine: mergeEngineFor(scenario.config), dropDeletes, maxLevel: 5 };
          const context = `${layoutName} / ${scenario.name} / round ${round} (seed ${seed})`;

          // Act
          const collect = async (memoryBudget: number) => {
            let passes = 0;
            const merged: arrow.Table[] = [];
            const top: arrow.Table[] = [];
            for await (const { pieces, merged: m } of mergeSection(runs(), { ...base, memoryBudget, onSpill: () => passes++ })) {
              merged.push(m);
              // Max-level rows stay apart from the rest through every spill pass.
              for (const p of pieces) if (p.level === 5) top.push(p.table);
            }
            const topKeys = top.flatMap((t) => recordsOf(layout, t).map((x) => JSON.stringify(layout.primaryKeys.map((k) => String(x.row[k])))));
            return { records: merged.flatMap((m) => recordsOf(layout, m)), passes, topKeys: [...new Set(topKeys)].sort() };
          };
          const unbounded = await collect(Infinity);
          const spilled = await collect(1);

          // Assess
          expect(unbounded.passes, context).toBe(0);
          expect(spilled.passes, context).toBeGreaterThan(0);
          expect(spilled.records, context).toEqual(unbounded.records);
          expect(spilled.topKeys, context).toEqual(unbounded.topKeys);
        }
      }
    }
  });
});
