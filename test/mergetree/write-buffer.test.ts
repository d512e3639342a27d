import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { rowsToTable } from '../../lib/format/columns.js';
import { mergeConfig } from '../../lib/mergetree/merge-config.js';
import { mergeEngineFor } from '../../lib/mergetree/merge-function.js';
import { mergeSortedRuns } from '../../lib/mergetree/sort-merge-reader.js';
import { WriteBuffer } from '../../lib/mergetree/write-buffer.js';
import { InvalidArgumentError, OptionError } from '../../lib/errors.js';
import type { Row } from '../../lib/schema/types.js';
import { rng, testSeed } from '../helpers/random.js';
import { D, I, UA, UB, bufferOf, recordsOf, schemaOf, type Rec } from './fixtures.js';
import { naiveMerge } from './naive-merge.js';
import { LAYOUTS, SCENARIOS, randomRow } from './random-data.js';

const schema = schemaOf(['id INT', 'name STRING', 'amount BIGINT'], ['id']);
const spillRoots: string[] = [];

function spillRoot(): string {
  const dir = mkdtempSync(join(tmpdir(), 'varve-wb-test-'));
  spillRoots.push(dir);
  return dir;
}

afterEach(() => {
  for (const d of spillRoots.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('WriteBuffer', () => {
  it('numbers records by arrival, continuing across flushes of the same batch', () => {
    // Prepare
    const b = bufferOf(schema, {});
    b.add([
      { id: 1, name: 'a', amount: 1n },
      { id: 2, name: 'b', amount: 2n },
    ]);

    // Act
    const first = recordsOf(schema, b.flush().data);
    b.add([{ id: 1, name: 'c', amount: 3n }]);
    const second = recordsOf(schema, b.flush().data);

    // Assess
    expect(first.map((r) => r.seq)).toEqual([0, 1]);
    expect(second.map((r) => r.seq)).toEqual([2]);
    expect(b.nextSequence).toBe(3);
  });

  it('starts numbering at firstSequence', () => {
    const b = new WriteBuffer({
      schema,
      merge: mergeConfig(),
      writeBufferSize: 1 << 20,
      spillable: false,
      firstSequence: 40,
    });
    b.add([{ id: 1, name: 'a', amount: 1n }]);

    expect(recordsOf(schema, b.flush().data)[0].seq).toBe(40);
  });

  it('returns every raw record, kinds and arrival numbers intact, as the input changelog', () => {
    const b = bufferOf(schema, {}, { keepRawChangelog: true });
    b.add(
      [
        { id: 2, name: 'x', amount: 1n },
        { id: 1, name: 'a', amount: 1n },
        { id: 1, name: 'a', amount: 1n },
        { id: 1, name: 'b', amount: 2n },
      ],
      [I, I, UB, UA],
    );

    const out = b.flush();

    expect(out.rowCount).toBe(2);
    expect(out.inputCount).toBe(4);
    expect(recordsOf(schema, out.changelog!).map((r) => [r.row.id, r.row.name, r.kind, r.seq])).toEqual([
      [1, 'a', I, 1],
      [1, 'a', UB, 2],
      [1, 'b', UA, 3],
      [2, 'x', I, 0],
    ]);
  });

  it('accepts Arrow tables, with or without _VALUE_KIND', () => {
    const b = bufferOf(schema, {});
    const plain = rowsToTable(schema.fields, [{ id: 3, name: 'c', amount: 3n }]);
    const withKinds = rowsToTable(
      schema.fields,
      [
        { id: 3, name: 'c', amount: 3n },
        { id: 4, name: 'd', amount: 4n },
      ],
      {
        sequence: [0, 0],
        kind: [D, I],
      },
    );

    b.addTable(plain);
    b.addTable(withKinds);
    const out = recordsOf(schema, b.flush().data);

    expect(out.map((r) => [r.row.id, r.kind, r.seq])).toEqual([
      [3, D, 1],
      [4, I, 2],
    ]);
  });

  it('rejects a table whose column type differs from the schema', () => {
    const b = bufferOf(schema, {});
    const wrong = rowsToTable(schemaOf(['id BIGINT', 'name STRING', 'amount BIGINT'], ['id']).fields, [
      { id: 1n, name: 'a', amount: 1n },
    ]);

    expect(() => b.addTable(wrong)).toThrow(/id is Int64 in the input but Int32/);
  });

  it('drops -U/-D at add time under ignore-delete, for rows and tables', () => {
    const b = bufferOf(schema, { ignoreDelete: true });
    b.add(
      [
        { id: 1, name: 'a', amount: 1n },
        { id: 2, name: 'b', amount: 1n },
      ],
      [I, D],
    );
    b.addTable(rowsToTable(schema.fields, [{ id: 3, name: 'c', amount: 1n }], { sequence: [0], kind: [UB] }));

    expect(b.size).toBe(1);
    expect(recordsOf(schema, b.flush().data).map((r) => r.row.id)).toEqual([1]);
  });

  it('reports isFull when not spillable, so the caller can flush an extra level-0 file', () => {
    const b = bufferOf(schema, {}, { writeBufferSize: 4096, spillable: false });
    let rows = 0;
    while (!b.isFull()) {
      b.add([{ id: rows, name: `name-${rows}`, amount: BigInt(rows) }]);
      rows++;
    }

    expect(rows).toBeGreaterThan(10);
    expect(b.spilledRuns).toBe(0);
    expect(b.flush().rowCount).toBe(rows);
  });

  it('counts only the rows of a sliced table towards write-buffer-size', () => {
    const rows = Array.from({ length: 2000 }, (_, i) => ({ id: i, name: `some longer name ${i}`, amount: BigInt(i) }));
    const big = rowsToTable(schema.fields, rows);
    const b = new WriteBuffer({
      schema,
      merge: mergeConfig(),
      writeBufferSize: 64 << 10,
      spillable: true,
      spillRoot: spillRoot(),
    });

    b.addTable(big.slice(0, 100));

    expect(b.spilledRuns).toBe(0);
    expect(b.memoryBytes).toBeGreaterThan(100 * 20);
    expect(b.memoryBytes).toBeLessThan(100 * 60);
  });

  it('stops spilling past write-buffer-spill.max-disk-size and asks for a flush instead', () => {
    const b = new WriteBuffer({
      schema,
      merge: mergeConfig(),
      writeBufferSize: 1024,
      spillable: true,
      spillMaxDiskSize: 1,
      spillRoot: spillRoot(),
    });
    for (let i = 0; !b.isFull(); i++) b.add([{ id: i, name: `name-${i}`, amount: 1n }]);

    expect(b.spilledRuns).toBe(1);
    expect(b.memoryBytes).toBeGreaterThanOrEqual(1024);
  });

  it('restarts arrival numbering for a new batch only when empty', () => {
    const b = bufferOf(schema, {});
    b.add([{ id: 1, name: 'a', amount: 1n }]);

    expect(() => b.restartSequence()).toThrow(/flush first/);
    b.flush();
    b.restartSequence();
    b.add([{ id: 2, name: 'b', amount: 1n }]);
    expect(recordsOf(schema, b.flush().data)[0].seq).toBe(0);
  });

  it('checks the merge configuration when created', () => {
    const bad = () => bufferOf(schema, { engine: 'aggregation', aggregateFunctions: { name: 'sum' } });

    expect(bad).toThrow(OptionError);
    expect(bad).toThrow(/'sum' does not apply to column name of type STRING/);
  });

  it('spills sorted runs past write-buffer-size and flushes the same result as without spilling', () => {
    const seed = testSeed('write-buffer spill');
    const r = rng(seed);
    for (const scenario of SCENARIOS.filter((s) => !s.name.startsWith('first-row'))) {
      // Prepare: the same input into a tiny spilling buffer and a large in-memory one.
      const layout = LAYOUTS.composite;
      const root = spillRoot();
      const spilling = new WriteBuffer({
        schema: layout,
        merge: scenario.config,
        writeBufferSize: 2048,
        spillable: true,
        keepRawChangelog: true,
        spillRoot: root,
      });
      const memory = new WriteBuffer({
        schema: layout,
        merge: scenario.config,
        writeBufferSize: 1 << 30,
        spillable: true,
        keepRawChangelog: true,
      });
      let spilled = 0;
      for (let batch = 0; batch < 20; batch++) {
        const rows: Row[] = [],
          kinds: number[] = [];
        for (let i = r.int(1, 40); i > 0; i--) {
          rows.push(randomRow(layout, r, r.int(0, 80)));
          kinds.push(r.pick(scenario.kinds));
        }
        spilling.add(rows, kinds);
        memory.add(rows, kinds);
        spilled = Math.max(spilled, spilling.spilledRuns);
      }
      expect(readdirSync(root).length).toBe(1);

      // Act
      const a = spilling.flush();
      const b = memory.flush();

      // Assess
      expect(spilled, scenario.name).toBeGreaterThan(2);
      expect(recordsOf(layout, a.data), `${scenario.name} (seed ${seed})`).toEqual(recordsOf(layout, b.data));
      expect(recordsOf(layout, a.changelog!), `${scenario.name} changelog (seed ${seed})`).toEqual(
        recordsOf(layout, b.changelog!),
      );
      expect(readdirSync(root)).toEqual([]);
    }
  });

  it('deletes its spill files when a flush fails', () => {
    const root = spillRoot();
    const pu = schemaOf(['id INT', 'name STRING'], ['id']);
    const b = new WriteBuffer({
      schema: pu,
      merge: mergeConfig({ engine: 'partial-update' }),
      writeBufferSize: 512,
      spillable: true,
      spillRoot: root,
    });
    for (let i = 0; i < 200; i++) b.add([{ id: i % 7, name: `n${i}` }]);
    b.add([{ id: 1, name: null }], [D]);
    expect(b.spilledRuns).toBeGreaterThan(0);
    expect(readdirSync(root).length).toBe(1);

    expect(() => b.flush()).toThrow(InvalidArgumentError);
    expect(readdirSync(root)).toEqual([]);
  });

  it('close() drops buffered rows and spill files', () => {
    const root = spillRoot();
    const b = new WriteBuffer({ schema, merge: mergeConfig(), writeBufferSize: 256, spillable: true, spillRoot: root });
    for (let i = 0; i < 100; i++) b.add([{ id: i, name: 'x', amount: 1n }]);
    const dir = join(root, readdirSync(root)[0]);

    b.close();

    expect(existsSync(dir)).toBe(false);
    expect(b.size).toBe(0);
    expect(b.flush().rowCount).toBe(0);
  });

  it('flushes match a naive merge of the raw records (random, every engine)', () => {
    const seed = testSeed('write-buffer random');
    const r = rng(seed);
    for (const [layoutName, layout] of Object.entries(LAYOUTS)) {
      for (const scenario of SCENARIOS) {
        const firstRowRetracts = scenario.config.engine === 'first-row' && !scenario.config.ignoreDelete;
        const recs: Rec[] = [];
        for (let i = r.int(0, 150); i > 0; i--) {
          recs.push({
            row: randomRow(layout, r, r.int(0, 40)),
            kind: firstRowRetracts ? I : r.pick(scenario.kinds),
            seq: recs.length,
          });
        }
        const b = new WriteBuffer({
          schema: layout,
          merge: scenario.config,
          writeBufferSize: r.chance(0.5) ? 1500 : 1 << 30,
          spillable: true,
        });
        b.add(
          recs.map((x) => x.row),
          recs.map((x) => x.kind),
        );

        const out = recordsOf(layout, b.flush().data);

        const kept = scenario.config.ignoreDelete ? recs.filter((x) => x.kind === I || x.kind === UA) : recs;
        kept.forEach((x, i) => (x.seq = i));
        const expected = naiveMerge(layout, scenario.config, kept, { raw: true, dropDeletes: false, keepKinds: true });
        expect(out, `${layoutName} / ${scenario.name} (seed ${seed})`).toEqual(expected);
      }
    }
  });

  it('flushing in pieces and merging the level-0 files equals merging all raw records at once', () => {
    const seed = testSeed('write-buffer associativity');
    const r = rng(seed);
    // Retraction-free inputs make every engine associative (count included, thanks to raw counting).
    const scenarios = SCENARIOS.filter((s) => s.name === 'deduplicate' || !s.kinds.some((k) => k === UB || k === D));
    const agg = mergeConfig({
      engine: 'aggregation',
      aggregateFunctions: { v: 'sum', c: 'count', d: 'max', s: 'listagg' },
    });
    for (const { name, config } of [...scenarios, { name: 'aggregation count', config: agg }]) {
      const layout = LAYOUTS.bigint;
      const raw: Rec[] = [];
      const runs = [];
      for (let batch = 0; batch < r.int(1, 6); batch++) {
        const base = raw.length;
        const b = new WriteBuffer({ schema: layout, merge: config, writeBufferSize: 1 << 30, spillable: false });
        const recs: Rec[] = [];
        for (let i = r.int(0, 60); i > 0; i--) {
          const kind = name === 'deduplicate' ? r.pick([I, UA, D]) : r.pick([I, UA]);
          recs.push({ row: randomRow(layout, r, r.int(0, 30)), kind, seq: base + recs.length });
        }
        b.add(
          recs.map((x) => x.row),
          recs.map((x) => x.kind),
        );
        raw.push(...recs);
        runs.push({ table: b.flush().data, sequenceBase: base });
      }

      const merged = mergeSortedRuns(r.chance(0.5) ? runs.reverse() : runs, {
        schema: layout,
        keyColumns: layout.primaryKeys,
        engine: mergeEngineFor(config),
        dropDeletes: true,
      });

      expect(recordsOf(layout, merged), `${name} (seed ${seed})`).toEqual(
        naiveMerge(layout, config, raw, { raw: true, dropDeletes: true }),
      );
    }
  });
});
