/**
 * Streamed reads: `table.scan()` yields the same merged rows as `table.read()`, as RecordBatches
 * in (partition, bucket, key) order, reading data files row group by row group.
 */
import * as arrow from 'apache-arrow';
import { describe, expect, it, vi } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { tableToRows } from '../../lib/format/columns.js';
import { readDataFileRowGroups, writeDataFile } from '../../lib/format/data-file.js';
import { physicalArrowSchema } from '../../lib/format/arrow-schema.js';
import { rowsToTable } from '../../lib/format/columns.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { RowKind, type Row } from '../../lib/schema/types.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { rng, testSeed } from '../helpers/random.js';
import { testTable } from '../helpers/tables.js';

async function newTable(options: Record<string, string> = {}) {
  return testTable({
    schema: 'dt STRING, id BIGINT, v STRING',
    primaryKeys: ['dt', 'id'],
    partitionKeys: ['dt'],
    options: { bucket: '3', 'write-only': 'true', ...options },
  });
}

async function collect(batches: AsyncIterable<arrow.RecordBatch>): Promise<arrow.RecordBatch[]> {
  const out: arrow.RecordBatch[] = [];
  for await (const b of batches) out.push(b);
  return out;
}

describe('table.scan', () => {
  it('yields what read() returns over overlapping commits with updates and deletes (randomized)', async () => {
    // Prepare: several commits of random upserts and deletes over a small key space.
    const seed = testSeed('table.scan');
    const r = rng(seed);
    const table = await newTable();
    for (let c = 0; c < 6; c++) {
      const rows = [],
        kinds = [];
      for (let i = 0; i < r.int(1, 300); i++) {
        rows.push({ dt: r.pick(['a', 'b']), id: BigInt(r.int(0, 400)), v: `c${c}-${i}` });
        kinds.push(r.chance(0.15) ? RowKind.DELETE : RowKind.INSERT);
      }
      await table.write(rows, { kinds });
    }

    // Act
    const batches = await collect(table.scan({ batchRows: r.int(1, 50) }));
    const whole = await table.read();

    // Assess: the same rows, batch sizes bounded; each (partition, bucket) in key order.
    const scanned = batches.flatMap((b) => tableToRows(new arrow.Table(b), table.schema.fields));
    const key = (x: Row) => `${String(x.dt)}/${String(x.id)}`;
    const sortByKey = (xs: Row[]) => [...xs].sort((a, b) => (key(a) < key(b) ? -1 : 1));
    expect(sortByKey(scanned), `seed ${seed}`).toEqual(sortByKey(tableToRows(whole, table.schema.fields)));
    expect(batches.every((b) => b.numRows > 0 && b.numRows <= 50)).toBe(true);
    expect(batches[0].schema.names).toEqual(['dt', 'id', 'v']);
  });

  it('a file alone in its key range loses its -U and -D rows and nothing else, in owned batches that stay valid', async () => {
    // Prepare: 1 bucket; keys 0-9 inserted, then keys 100-109 in a second file that overlaps
    // nothing, holding inserts, deletes and an update's retraction (-U) of keys only it has.
    const catalog = new FolderCatalog(new MemoryStore());
    const table = await catalog.createTable('db.lone', {
      fields: parseSchemaText('id BIGINT NOT NULL, v STRING'),
      primaryKeys: ['id'],
      options: { bucket: '1', 'write-only': 'true' },
    });
    await table.write(Array.from({ length: 10 }, (_, i) => ({ id: BigInt(i), v: `a${i}` })));
    const kindOf = (i: number) =>
      i % 3 === 0
        ? RowKind.DELETE
        : i === 104
          ? RowKind.UPDATE_BEFORE
          : i === 105
            ? RowKind.UPDATE_AFTER
            : RowKind.INSERT;
    const ids = Array.from({ length: 10 }, (_, i) => 100 + i);
    await table.write(
      ids.map((i) => ({ id: BigInt(i), v: `b${i}` })),
      { kinds: ids.map(kindOf) },
    );

    // Act: keep every batch (one row each), look at them after the scan is over.
    const kept = await collect(table.scan({ batchRows: 1 }));

    // Assess: keys 0-9, then 100-109 without the deleted (multiples of 3) and the retracted 104.
    const want = [...Array.from({ length: 10 }, (_, i) => i), ...ids.filter((i) => i % 3 !== 0 && i !== 104)];
    const rows = kept.flatMap((b) => tableToRows(new arrow.Table(b), table.schema.fields));
    expect(rows.map((x) => Number(x.id))).toEqual(want);
    expect(rows.map((x) => x.v)).toEqual(want.map((i) => (i < 10 ? `a${i}` : `b${i}`)));
    expect(tableToRows(await table.read(), table.schema.fields)).toEqual(rows);
    expect(kept[0].schema.names).toEqual(['id', 'v']);
  });

  it('projects columns, reads a partition, and yields one empty batch for an empty result', async () => {
    const table = await newTable();
    await table.write([
      { dt: 'a', id: 1n, v: 'x' },
      { dt: 'b', id: 2n, v: 'y' },
    ]);

    const projected = await collect(table.scan({ columns: ['v', 'id'], partition: { dt: 'b' } }));
    const empty = await collect((await newTable()).scan());

    expect(projected.map((b) => b.toArray().map((row) => row.toJSON()))).toEqual([[{ v: 'y', id: 2n }]]);
    expect(empty).toHaveLength(1);
    expect(empty[0].numRows).toBe(0);
    expect(empty[0].schema.names).toEqual(['dt', 'id', 'v']);
  });
});

describe('table.scan over files of several row groups and decode batches', () => {
  /** 1 bucket: 70,000 keys (2 row groups, 3 decode batches), then 30,000 of them updated, then 100,000 new keys above (4 decode batches). */
  let built: ReturnType<typeof build> | undefined;
  const bigTable = () => (built ??= build());
  async function build() {
    const catalog = new FolderCatalog(new MemoryStore());
    const table = await catalog.createTable('db.big', {
      fields: parseSchemaText('id BIGINT NOT NULL, v STRING, n INT'),
      primaryKeys: ['id'],
      options: { bucket: '1', 'write-only': 'true' },
    });
    const rows = (from: number, to: number, step: number, c: number) => {
      const out: Row[] = [];
      for (let id = from; id < to; id += step) out.push({ id: BigInt(id), v: `c${c}-${id}`, n: c * 1_000_000 + id });
      return out;
    };
    await table.write(rows(0, 70_000, 1, 0));
    await table.write(rows(1, 60_000, 2, 1));
    await table.write(rows(70_000, 170_000, 1, 2));
    return table;
  }

  it('every batch owns its memory: a caller that keeps all of them sees what read() returns at the end', async () => {
    // Prepare: overlapping files (a merged section) and a file that overlaps nothing (its rows pass through unmerged).
    const table = await bigTable();
    const expected = tableToRows(await table.read(), table.schema.fields);
    expect(expected.length).toBe(170_000);

    // Act: keep every batch, look at none until the scan is over.
    const kept = await collect(table.scan({ batchRows: 20_000 }));

    // Assess
    expect(kept.length).toBeGreaterThan(5);
    expect(kept.flatMap((b) => tableToRows(new arrow.Table(b), table.schema.fields))).toEqual(expected);
  });

  it('with reuseBuffers each batch is right when it is yielded, and the memory behind a kept one is reused later', async () => {
    // Prepare
    const table = await bigTable();
    const expected = tableToRows(await table.read(), table.schema.fields);

    // Act: check each batch as it comes, and keep it too.
    const seen: Row[] = [];
    const kept: { batch: arrow.RecordBatch; from: number }[] = [];
    for await (const b of table.scan({ batchRows: 20_000, reuseBuffers: true })) {
      kept.push({ batch: b, from: seen.length });
      seen.push(...tableToRows(new arrow.Table(b), table.schema.fields));
    }

    // Assess: right as yielded; some kept batch no longer holds its rows (what the option warns of).
    expect(seen).toEqual(expected);
    const changed = kept.filter(
      ({ batch, from }) =>
        JSON.stringify(tableToRows(new arrow.Table(batch), table.schema.fields).map((x) => String(x.v))) !==
        JSON.stringify(expected.slice(from, from + batch.numRows).map((x) => String(x.v))),
    );
    expect(changed.length).toBeGreaterThan(0);
  });
});

describe('readDataFileRowGroups', () => {
  it('yields a file row group by row group and fails loudly on a missing file', async () => {
    // Prepare
    const table = await newTable();
    const n = 1000;
    const rows = Array.from({ length: n }, (_, i) => ({ dt: 'a', id: BigInt(i), v: `v${i}` }));
    const bytes = writeDataFile(
      rowsToTable(table.schema.fields, rows, { sequence: new Float64Array(n), kind: new Uint8Array(n) }),
      { compression: 'zstd', rowGroupSize: 300 },
    );
    const store = new MemoryStore();
    await store.put('f.parquet', bytes);

    // Act
    const groups = await collect2(readDataFileRowGroups(store, 'f.parquet', bytes.byteLength));

    // Assess
    expect(groups.map((g) => g.numRows)).toEqual([300, 300, 300, 100]);
    expect(groups[3].schema.names).toEqual(physicalArrowSchema(table.schema).names);
    expect(Number(groups[3].getChild('id')!.get(99))).toBe(999);
    await expect(collect2(readDataFileRowGroups(store, 'missing.parquet'))).rejects.toThrow(/missing\.parquet/);
  });
});

async function collect2(tables: AsyncIterable<arrow.Table>): Promise<arrow.Table[]> {
  const out: arrow.Table[] = [];
  for await (const t of tables) out.push(t);
  return out;
}

describe('Table.read fetches data files by range', () => {
  it('never GETs a whole data file: key-first merge, a whole-row engine, an append table and the audit log (randomized)', async () => {
    const seed = testSeed('table.read.ranged');
    const r = rng(seed);
    for (const engine of ['deduplicate', 'partial-update', 'append'] as const) {
      // Prepare: overlapping commits over a small key space, small row groups.
      const store = new MemoryStore();
      const catalog = new FolderCatalog(store);
      const keyed = engine !== 'append';
      const table = await catalog.createTable(`db.${engine.replace('-', '_')}`, {
        fields: parseSchemaText('dt STRING, id BIGINT, v STRING'),
        primaryKeys: keyed ? ['dt', 'id'] : [],
        partitionKeys: ['dt'],
        options: {
          bucket: keyed ? '2' : '-1',
          'write-only': 'true',
          ...(engine === 'partial-update' ? { 'merge-engine': 'partial-update' } : {}),
        },
      });
      const model = new Map<string, Row>();
      const appended: Row[] = [];
      for (let c = 0; c < 4; c++) {
        const rows: Row[] = [];
        for (let i = 0; i < 300; i++) {
          const row = { dt: r.pick(['a', 'b']), id: BigInt(r.int(0, 199)), v: `v${c}-${i}` };
          const k = `${row.dt}/${row.id}`;
          if (!keyed || !rows.some((x) => `${x.dt}/${x.id}` === k)) rows.push(row);
        }
        await table.write(rows);
        for (const row of rows) keyed ? model.set(`${row.dt}/${row.id}`, row) : appended.push(row);
      }
      const gets = vi.spyOn(store, 'get');
      // Act
      const read = tableToRows(await table.read(), table.schema.fields);
      const audit = await table.read({ keepDeletes: true });
      // Assess: the model's rows, and not one whole-object GET of a data file.
      const key = (x: Row) => `${String(x.dt)}/${String(x.id)}/${String(x.v)}`;
      const expected = keyed ? [...model.values()] : appended;
      expect(read.map(key).sort(), `seed ${seed} ${engine}`).toEqual(expected.map(key).sort());
      expect(audit.numRows, `seed ${seed} ${engine}`).toBe(expected.length);
      expect(
        gets.mock.calls.filter(([k]) => k.endsWith('.parquet')),
        `seed ${seed} ${engine}`,
      ).toEqual([]);
      gets.mockRestore();
    }
  });
});
