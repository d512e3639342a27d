/**
 * Every way rows reach a writer's buffers gives, bucket by bucket, the same level-0 rows — values,
 * `_SEQUENCE_NUMBER` and `_VALUE_KIND` — for random tables of every type: row objects; small Arrow
 * tables (held, then each bucket's rows of all of them gathered at once); and a mix of both into a
 * buffer that outgrows `write-buffer-size` (spilled sorted runs, every bucket's in-memory part
 * spilled before the flush, the runs merged a batch at a time).
 */
import type * as arrow from 'apache-arrow';
import { parquetMetadata } from 'hyparquet';
import { describe, expect, it, vi } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { readDataFile } from '../../lib/format/data-file.js';
import { rowsToTable } from '../../lib/format/columns.js';
import { compactTable } from '../../lib/maintenance/compact.js';
import { readLiveFiles } from '../../lib/manifest/scan.js';
import { SpillDirectory } from '../../lib/mergetree/spill.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { dataFileKey } from '../../lib/table/paths.js';
import type { Table } from '../../lib/table/table.js';
import type { Row } from '../../lib/schema/types.js';
import { allTypeFields, randomValue } from '../format/fixtures.js';
import { rng, testSeed, type Rng } from '../helpers/random.js';
import { testTable } from '../helpers/tables.js';

const FIELDS = allTypeFields();

/** Engine setups and the row kinds each may see. */
const SETUPS: { name: string; options: Record<string, string>; kinds: number[] }[] = [
  { name: 'deduplicate', options: {}, kinds: [0, 0, 0, 2, 1, 3] },
  { name: 'deduplicate sequence.field', options: { 'sequence.field': 'i16' }, kinds: [0, 0, 3] },
  {
    name: 'deduplicate sequence.field desc',
    options: { 'sequence.field': 'i8', 'sequence.field.sort-order': 'descending' },
    kinds: [0, 3],
  },
  { name: 'deduplicate ignore-delete', options: { 'ignore-delete': 'true' }, kinds: [0, 0, 3, 1] },
  { name: 'partial-update', options: { 'merge-engine': 'partial-update' }, kinds: [0, 2] },
  { name: 'first-row', options: { 'merge-engine': 'first-row' }, kinds: [0] },
  {
    name: 'aggregation',
    options: {
      'merge-engine': 'aggregation',
      'fields.i32.aggregate-function': 'max',
      'fields.f64.aggregate-function': 'min',
      'fields.i64.aggregate-function': 'count',
    },
    kinds: [0, 0, 2],
  },
];

function newTable(options: Record<string, string>): Promise<Table> {
  return testTable({ schema: FIELDS, primaryKeys: ['id'], options: { 'write-only': 'true', ...options } });
}

/** Every level-0 file's rows by (kind of file, bucket), all columns including the system ones. */
async function filesByBucket(table: Table): Promise<Map<string, unknown[][]>> {
  const snapshot = (await table.snapshots.latest())!;
  const out = new Map<string, unknown[][]>();
  const entries = [...(await readLiveFiles(table.store, table.path, snapshot))];
  for (const e of entries) {
    const bytes = (await table.store.get(dataFileKey(table.path, e.partition, e.bucket, e.file.fileName))).body;
    const t = await readDataFile(bytes);
    out.set(`data ${e.bucket}`, [...(out.get(`data ${e.bucket}`) ?? []), ...rowsOf(t)]);
  }
  return out;
}

function rowsOf(t: arrow.Table): unknown[][] {
  const columns = t.schema.fields.map((f) => [...t.getChild(f.name)!]);
  return Array.from({ length: t.numRows }, (_, i) => columns.map((c) => c[i]));
}

/** Random rows whose keys repeat (so versions merge), with kinds. */
function randomBatch(r: Rng, n: number, keySpace: number, kinds: number[]): { rows: Row[]; kinds: number[] } {
  const rows: Row[] = [];
  const k: number[] = [];
  for (let i = 0; i < n; i++) {
    const row: Row = {};
    for (const f of FIELDS)
      row[f.name] = f.name === 'id' ? BigInt(r.int(0, keySpace)) * 7919n - 1000n : randomValue(r, f);
    rows.push(row);
    k.push(r.pick(kinds));
  }
  return { rows, kinds: k };
}

describe('TableWriter flush of spilled buffers', () => {
  it('writes per bucket the same level-0 rows from row objects, held Arrow tables and spilled buffers (random tables of every type, buckets, deletes, engines)', async () => {
    const seed = testSeed('writer spilled flush');
    const r = rng(seed);
    for (const setup of SETUPS) {
      const buckets = String(r.int(1, 4));
      const options = { bucket: buckets, ...setup.options };
      // The reference buffers row objects (each bucket's rows as they come); the others take Arrow
      // tables (small ones are held and gathered per bucket at once) or a mix of both.
      const byRows = await newTable({ ...options, 'write-buffer-size': '32 mb' });
      const memory = await newTable({ ...options, 'write-buffer-size': '32 mb' });
      const spilled = await newTable({
        ...options,
        'write-buffer-size': `${r.int(4, 24)} kb`,
        'write-buffer-spillable': 'true',
      });
      const writers = [byRows.newWriter(), memory.newWriter(), spilled.newWriter()];
      const runs = vi.spyOn(SpillDirectory.prototype, 'openRun');
      const keySpace = r.int(50, 1500);
      for (let chunk = r.int(4, 8); chunk > 0; chunk--) {
        const { rows, kinds } = randomBatch(r, r.int(100, 600), keySpace, setup.kinds);
        const asArrow = r.chance(0.6);
        for (const [k, w] of writers.entries()) {
          if (k === 1 || (k === 2 && asArrow))
            await w.writeArrow(
              rowsToTable(FIELDS, rows, { sequence: new Float64Array(rows.length), kind: Uint8Array.from(kinds) }),
            );
          else await w.write(rows, kinds);
        }
      }
      const context = `${setup.name}, ${buckets} buckets (seed ${seed})`;
      for (const w of writers) {
        await w.commit('c');
        await w.close();
      }
      // The small buffer spilled (the in-memory writer never does).
      expect(runs.mock.calls.length, context).toBeGreaterThan(0);
      runs.mockRestore();
      const expected = await filesByBucket(byRows);
      for (const [name, table] of [
        ['arrow', memory],
        ['spilled', spilled],
      ] as const) {
        const actual = await filesByBucket(table);
        expect([...actual.keys()].sort(), `${context}, ${name}`).toEqual([...expected.keys()].sort());
        for (const [key, rows] of expected) expect(actual.get(key), `${context}, ${name}, ${key}`).toEqual(rows);
      }
    }
  });
});

describe('level-0 and compacted data files', () => {
  it('delta-pack the first key column when it is an integer (and _SEQUENCE_NUMBER), nothing else', async () => {
    const seed = testSeed('table.writer-flush.delta-key');
    const r = rng(seed);
    for (const key of ['id', 's'] as const) {
      // Prepare: two commits of merging rows into 2 buckets, then a full compaction.
      const catalog = new FolderCatalog(new MemoryStore());
      const fields =
        key === 's' ? FIELDS.map((f) => (f.name === 's' ? { ...f, type: { ...f.type, nullable: false } } : f)) : FIELDS;
      const table = await catalog.createTable('db.t', { fields, primaryKeys: [key], options: { bucket: '2' } });
      const written = new Map<unknown, Row>();
      for (let c = 0; c < 2; c++) {
        const { rows } = randomBatch(r, 300, 200, [0]);
        for (const row of rows) if (key === 's' && row.s === null) row.s = `k${r.int(0, 50)}`;
        const w = table.newWriter();
        await w.write(rows);
        await w.commit(`c${c}`);
        await w.close();
        for (const row of rows) written.set(row[key], row);
      }
      await compactTable(table, { full: true });
      // Assess: every file, level 0 before the compaction and the compacted ones after.
      const levels = new Set<number>();
      for (const snapshot of [await table.snapshots.read(2), (await table.snapshots.latest())!]) {
        for (const e of await readLiveFiles(table.store, table.path, snapshot)) {
          levels.add(e.file.level);
          const b = (await table.store.get(dataFileKey(table.path, e.partition, e.bucket, e.file.fileName))).body;
          const md = parquetMetadata(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer);
          for (const g of md.row_groups) {
            for (const col of g.columns) {
              const name = col.meta_data!.path_in_schema[0];
              const delta = name === '_SEQUENCE_NUMBER' || (key === 'id' && name === 'id');
              expect(col.meta_data!.encodings.includes('DELTA_BINARY_PACKED'), `${key}: ${name} (seed ${seed})`).toBe(
                delta,
              );
            }
          }
        }
      }
      expect([...levels].sort()).toEqual([0, 5]);
      expect((await table.read()).numRows).toBe(written.size);
      const back = await table.read();
      expect([...back.getChild(key)!].map(String).sort()).toEqual([...written.keys()].map(String).sort());
    }
  });
});
