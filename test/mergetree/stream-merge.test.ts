import type * as arrow from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { mergeEngineFor } from '../../lib/mergetree/merge-function.js';
import { mergeSortedRuns } from '../../lib/mergetree/sort-merge-reader.js';
import { mergeRunStreams } from '../../lib/mergetree/stream-merge.js';
import { rng, testSeed, type Rng } from '../helpers/random.js';
import { physicalTable, recordsOf, type Rec } from './fixtures.js';
import { naiveCompare } from './naive-merge.js';
import { LAYOUTS, SCENARIOS, randomRuns } from './random-data.js';

/** A table cut into chunks of random sizes (some empty), yielded one by one. */
async function* chunksOf(table: arrow.Table, r: Rng): AsyncGenerator<arrow.Table> {
  let at = 0;
  while (at < table.numRows) {
    const n = r.int(0, 7);
    yield table.slice(at, at + n);
    at += n;
  }
}

describe('mergeRunStreams', () => {
  it('yields exactly what mergeSortedRuns gives for the whole runs, in key order, over random chunkings (randomized)', async () => {
    const seed = testSeed('stream-merge');
    const r = rng(seed);
    for (const [layoutName, layout] of Object.entries(LAYOUTS)) {
      for (const scenario of SCENARIOS) {
        for (let round = 0; round < 4; round++) {
          // Prepare: runs as data files (one record per key), plus sometimes one run holding
          // several versions of its keys, as a spilled write-buffer run does.
          const recs = randomRuns(layout, scenario, r, r.int(1, 5), r.int(1, 60));
          const repeatedKeys = r.chance(0.5) && recs.length > 1 && scenario.config.sequenceFields.length === 0;
          if (repeatedKeys) {
            const fields = new Map(layout.fields.map((f) => [f.name, f]));
            const byKeyThenSeq = (x: Rec, y: Rec) => {
              for (const k of layout.primaryKeys) {
                const c = naiveCompare(fields.get(k)!, x.row[k], y.row[k]);
                if (c !== 0) return c;
              }
              return x.seq - y.seq;
            };
            const a = recs.pop()!;
            recs.push([...recs.pop()!, ...a].sort(byKeyThenSeq));
          }
          const runs = recs.map((rs) => ({ table: physicalTable(layout, rs), sequenceBase: 0 }));
          // Runs that hold one record per key may say so (then, when all do, the bound key itself is cut).
          const declared = r.chance(0.5);
          const oneRecordPerKey = runs.map(
            (_, i) => declared && !(repeatedKeys && i === runs.length - 1) && r.chance(0.8),
          );
          const opts = {
            schema: layout,
            keyColumns: layout.primaryKeys,
            engine: mergeEngineFor(scenario.config),
            dropDeletes: r.chance(0.5),
            keepKinds: r.chance(0.5),
            repeatedKeys,
          };
          const context = `${layoutName} / ${scenario.name} / round ${round} (seed ${seed})`;

          // Act
          const pieces: arrow.Table[] = [];
          for await (const p of mergeRunStreams(
            runs.map((x, i) => ({
              chunks: chunksOf(x.table, r),
              sequenceBase: x.sequenceBase,
              oneRecordPerKey: oneRecordPerKey[i],
            })),
            opts,
          ))
            pieces.push(p);

          // Assess
          expect(
            pieces.flatMap((p) => recordsOf(layout, p)),
            context,
          ).toEqual(recordsOf(layout, mergeSortedRuns(runs, opts)));
          expect(
            pieces.every((p) => p.numRows > 0),
            context,
          ).toBe(true);
        }
      }
    }
  });

  it('cuts a run that holds one record per key at its chunk ends: every chunk passes through whole, none is joined to the next', async () => {
    // Prepare: one data-file run of 200 keys in chunks of 10 rows, deduplicate, deletes dropped.
    const layout = LAYOUTS[Object.keys(LAYOUTS)[0]];
    const scenario = SCENARIOS.find((s) => s.config.engine === 'deduplicate' && s.config.sequenceFields.length === 0)!;
    let recs: Rec[] = [];
    for (let seed = 1; recs.length <= 50; seed++)
      recs = randomRuns(layout, scenario, rng(seed), 1, 2000)[0].map((x) => ({ ...x, kind: 0 }));
    const table = physicalTable(layout, recs);
    expect(table.numRows).toBeGreaterThan(20);
    async function* tens(): AsyncGenerator<arrow.Table> {
      for (let at = 0; at < table.numRows; at += 10) yield table.slice(at, at + 10);
    }
    const opts = {
      schema: layout,
      keyColumns: layout.primaryKeys,
      engine: mergeEngineFor(scenario.config),
      dropDeletes: true,
      keepKinds: false,
    };
    for (const oneRecordPerKey of [true, false]) {
      // Act
      const sizes: number[] = [];
      for await (const p of mergeRunStreams([{ chunks: tens(), sequenceBase: 0, oneRecordPerKey }], opts))
        sizes.push(p.numRows);
      // Assess: declared, the pieces are the chunks; undeclared, each chunk's last key waits for the next chunk.
      const chunks = Array.from({ length: Math.ceil(table.numRows / 10) }, (_, i) =>
        Math.min(10, table.numRows - 10 * i),
      );
      if (oneRecordPerKey) expect(sizes).toEqual(chunks);
      else expect(sizes[0]).toBe(9);
      expect(sizes.reduce((a, b) => a + b, 0)).toBe(table.numRows);
    }
  });
});
