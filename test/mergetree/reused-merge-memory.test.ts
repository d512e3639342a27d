/**
 * The merge's reused memory: a compaction builds its chunks' key indexes in two slabs per run
 * (alignRunStreams' reuseKeys), mergeSortedRuns keeps its runs' sequence numbers in one array
 * from merge to merge, and the string gather its value starts. Memory that held an earlier,
 * larger merge must never leak into a later one.
 */
import * as arrow from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { takeRows } from '../../lib/format/columns.js';
import { keyIndex } from '../../lib/mergetree/key-order.js';
import { mergeEngineFor } from '../../lib/mergetree/merge-function.js';
import { fileRun, mergeSection } from '../../lib/mergetree/section-merge.js';
import { mergeSortedRuns } from '../../lib/mergetree/sort-merge-reader.js';
import { alignRunStreams } from '../../lib/mergetree/stream-merge.js';
import { rng, testSeed, type Rng } from '../helpers/random.js';
import { physicalTable, recordsOf } from './fixtures.js';
import { naiveMerge } from './naive-merge.js';
import { LAYOUTS, SCENARIOS, randomRuns } from './random-data.js';

/** A one-column table of random keys of `type` (sorted or not: the index does not care). */
function keyTable(r: Rng, type: arrow.DataType, n: number): arrow.Table {
  const values = Array.from({ length: n }, () => {
    if (arrow.DataType.isInt(type) && type.bitWidth === 64) return BigInt(r.int(-1e9, 1e9)) * BigInt(r.int(1, 1e6));
    if (arrow.DataType.isInt(type)) return r.int(-2e9, 2e9);
    if (arrow.DataType.isFloat(type)) return (r.next() - 0.5) * 10 ** r.int(-5, 12);
    return r.chance(0.5);
  });
  return new arrow.Table({ k: arrow.vectorFromArray(values, type) });
}

/** A run as a stream of chunks of 1 to 40 rows (copies, zero-offset, as decoded row groups are). */
async function* reusedChunks(table: arrow.Table, r: Rng): AsyncGenerator<arrow.Table> {
  for (let at = 0; at < table.numRows; ) {
    const n = Math.min(table.numRows - at, r.int(1, 40));
    yield takeRows(
      table,
      Uint32Array.from({ length: n }, (_, i) => at + i),
    );
    at += n;
  }
}

describe('reused merge memory', () => {
  it('a key index built into reused words equals a fresh one, for every fixed-width key type (randomized)', () => {
    const seed = testSeed('reused key words');
    const r = rng(seed);
    const types: arrow.DataType[] = [new arrow.Int32(), new arrow.Int64(), new arrow.Float64(), new arrow.Bool()];
    for (let round = 0; round < 60; round++) {
      const type = types[round % types.length];
      const table = keyTable(r, type, r.int(0, 300));
      // Words that held other keys before, longer than the table.
      const size = table.numRows + r.int(0, 50);
      const into = {
        hi: Uint32Array.from({ length: size }, () => r.int(0, 0xffffffff)),
        lo: Uint32Array.from({ length: size }, () => r.int(0, 0xffffffff)),
      };
      const fresh = keyIndex(table, ['k']);
      const reused = keyIndex(table, ['k'], into);
      const context = `round ${round}, ${type}, ${table.numRows} rows (seed ${seed})`;
      expect(reused.count, context).toBe(fresh.count);
      expect([...reused.hi], context).toEqual([...fresh.hi]);
      expect([...reused.lo], context).toEqual([...fresh.lo]);
      expect(reused.exact, context).toBe(fresh.exact);
    }
  });

  it('runs aligned with reused key slabs and merged step by step give the row-by-row model, merges large and small in turn (randomized)', async () => {
    const seed = testSeed('reused merge memory');
    const r = rng(seed);
    for (let round = 0; round < 24; round++) {
      const layout = round % 2 === 0 ? LAYOUTS.bigint : LAYOUTS.composite;
      const scenario = SCENARIOS[round % SCENARIOS.length];
      // Large and small sections in turn: a small merge runs in memory a large one filled before.
      const recs = randomRuns(layout, scenario, r, r.int(2, 7), round % 3 === 0 ? r.int(200, 600) : r.int(1, 40));
      const tables = recs.map((rs) => physicalTable(layout, rs));
      const bases = tables.map(() => (r.chance(0.3) ? r.int(1, 5) * 100_000 : 0));
      const dropDeletes = r.chance(0.5);
      const opts = {
        schema: layout,
        keyColumns: layout.primaryKeys,
        engine: mergeEngineFor(scenario.config),
        dropDeletes,
        keepKinds: true,
      };
      const runs = tables.map((t, i) => ({
        chunks: reusedChunks(t, r),
        sequenceBase: bases[i],
        oneRecordPerKey: true,
      }));
      const merged: arrow.Table[] = [];
      for await (const pieces of alignRunStreams(runs, layout.primaryKeys, { reuseKeys: true }))
        merged.push(mergeSortedRuns(pieces, opts));

      const absolute = recs.flatMap((rs, i) => rs.map((x) => ({ ...x, seq: x.seq + bases[i] })));
      const expected = naiveMerge(layout, scenario.config, absolute, { raw: false, dropDeletes, keepKinds: true });
      const context = `round ${round}, ${scenario.name}, ${tables.map((t) => t.numRows).join('/')} rows (seed ${seed})`;
      expect(
        merged.flatMap((m) => recordsOf(layout, m)),
        context,
      ).toEqual(expected);
    }
  });

  it('a section merged step by step into reused output memory gives what fresh memory gives, each step intact through the next (randomized)', async () => {
    const seed = testSeed('reused merge output');
    const r = rng(seed);
    for (let round = 0; round < 16; round++) {
      const layout = round % 2 === 0 ? LAYOUTS.bigint : LAYOUTS.composite;
      // Deduplicate (the merge whose output goes to reused memory) with and without deletes.
      const scenario = SCENARIOS[round % 2];
      const recs = randomRuns(layout, scenario, r, r.int(2, 7), round % 4 === 0 ? r.int(200, 500) : r.int(1, 60));
      const tables = recs.map((rs) => physicalTable(layout, rs));
      const dropDeletes = r.chance(0.5);
      const stepRows = r.int(1, 50);
      const collect = async (reuseOutput: boolean) => {
        const runs = tables.map((t, i) =>
          fileRun({ level: i, sequenceBase: 0, rowCount: t.numRows, fileSize: 50 * t.numRows }, reusedChunks(t, r)),
        );
        const out: ReturnType<typeof recordsOf>[] = [];
        // The step before is read only after the next one is merged: a turn's memory outlives the next turn.
        let previous: arrow.Table | null = null;
        for await (const { merged } of mergeSection(runs, {
          schema: layout,
          engine: mergeEngineFor(scenario.config),
          dropDeletes,
          memoryBudget: Infinity,
          maxLevel: 5,
          stepRows,
          reuseOutput,
        })) {
          if (previous !== null) out.push(recordsOf(layout, previous));
          previous = merged;
        }
        if (previous !== null) out.push(recordsOf(layout, previous));
        return out.flat();
      };
      const context = `round ${round}, ${scenario.name}, step ${stepRows} (seed ${seed})`;
      const fresh = await collect(false);
      expect(await collect(true), context).toEqual(fresh);
      const expected = naiveMerge(layout, scenario.config, recs.flat(), { raw: false, dropDeletes, keepKinds: true });
      expect(fresh, context).toEqual(expected);
    }
  });
});
