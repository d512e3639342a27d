/**
 * The merge-free read of a deletion-vector table (lib/table/deletion-read.ts) skips what its
 * vectors delete whole: a row group whose every row is deleted is never fetched, and the rows of
 * the others are filtered batch by batch (the read equals the merged read). The same holds for the
 * batch read (readTable) and the streaming one (scanTable).
 */
import * as arrow from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { readLiveFiles } from '../../lib/manifest/scan.js';
import { readParquetFooter } from '../../lib/format/row-group-reader.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { dataFileKey } from '../../lib/table/paths.js';
import type { Table } from '../../lib/table/table.js';
import { rng, testSeed } from '../helpers/random.js';
import { testTable } from '../helpers/tables.js';

/** Rows id = from … to - 1, v = `${tag}${id}`. */
function rows(from: number, to: number, tag: string): arrow.Table {
  const ids = new BigInt64Array(to - from);
  const vs: string[] = [];
  for (let i = from; i < to; i++) {
    ids[i - from] = BigInt(i);
    vs.push(`${tag}${i}`);
  }
  return new arrow.Table({ id: arrow.makeVector(ids), v: arrow.vectorFromArray(vs, new arrow.Utf8()) });
}

async function write(table: Table, t: arrow.Table): Promise<void> {
  const w = table.newWriter();
  try {
    await w.writeArrow(t);
    await w.commit();
  } finally {
    await w.close();
  }
}

/** The rows of a scan, as one table. */
async function scanned(table: Table): Promise<arrow.Table> {
  const batches: arrow.RecordBatch[] = [];
  for await (const b of table.scan({ batchRows: 10_000 })) batches.push(b);
  return new arrow.Table(batches);
}

describe('merge-free read', () => {
  it.each([
    ['read', (t: Table) => t.read()],
    ['scan', scanned],
  ] as const)('%s: fetches no row group whose rows are all deleted, and equals the merged read', async (_, readAll) => {
    const store = new MemoryStore();
    const fetched: Array<{ key: string; start: number; end: number }> = [];
    const getRange = store.getRange.bind(store);
    store.getRange = (key, start, end) => {
      fetched.push({ key, start, end });
      return getRange(key, start, end);
    };
    const table = await testTable({
      schema: 'id BIGINT NOT NULL, v STRING',
      primaryKeys: ['id'],
      // Dictionary pages kept for `v` (unique strings, written plain by default): the file is then
      // large enough that the footer read's 64 KiB tail holds no byte of row group 0.
      options: {
        bucket: '1',
        'deletion-vectors.enabled': 'true',
        'write-only': 'true',
        'parquet.enable.dictionary': 'true',
      },
      store,
    });
    await write(table, rows(0, 150_000, 'a'));
    const first = (await readLiveFiles(store, table.path, (await table.snapshots.latest())!))[0];
    const firstKey = dataFileKey(table.path, first.partition, first.bucket, first.file.fileName);
    const footer = await readParquetFooter({
      size: first.file.fileSize,
      name: firstKey,
      read: (s, e) => getRange(firstKey, s, e),
    });
    expect(footer.rowGroups.length, 'the first file has several row groups').toBeGreaterThan(1);
    // Rewrite every key of the first row group and a few of the last: row group 0 is deleted whole.
    const group0 = footer.rowGroups[0].numRows;
    await write(table, rows(0, group0, 'b'));
    await write(table, rows(149_990, 150_000, 'c'));

    const merged = await table.read({ ignoreDeletionVectors: true });
    fetched.length = 0;
    const read = await readAll(table);
    const text = (t: arrow.Table) => {
      const ids = t.getChild('id')!.toArray() as BigInt64Array;
      const vs = t.getChild('v')!.toArray() as string[];
      return Array.from(ids, (id, i) => `${id}=${vs[i]}`).sort();
    };
    const got = text(read);
    expect(got.length).toBe(150_000);
    expect(got).toEqual(text(merged));
    const expectedV = (id: number) => (id < group0 ? 'b' : id >= 149_990 ? 'c' : 'a') + id;
    const wrong = got.filter((r) => {
      const [id, v] = r.split('=');
      return v !== expectedV(Number(id));
    });
    expect(wrong.slice(0, 5)).toEqual([]);

    // No byte of row group 0's chunks was fetched from the first file (its footer and other groups were).
    const chunks = footer.chunks[0];
    const g0Start = Math.min(...chunks.map((c) => c.start));
    const g0End = Math.max(...chunks.map((c) => c.start + c.length));
    const ofFirst = fetched.filter((f) => f.key === firstKey);
    expect(ofFirst.length, 'the first file was read').toBeGreaterThan(0);
    for (const f of ofFirst) expect(f.end <= g0Start || f.start >= g0End, `fetched [${f.start}, ${f.end})`).toBe(true);
  });
});

describe('merge-free read, randomized', () => {
  it('read and scan equal the merged read and the model after random rewrites, whole row groups among them', async () => {
    const seed = testSeed('deletion-read/row-group-skip');
    const r = rng(seed);
    const store = new MemoryStore();
    const table = await testTable({
      schema: 'id BIGINT NOT NULL, v STRING',
      primaryKeys: ['id'],
      options: { bucket: '1', 'deletion-vectors.enabled': 'true', 'write-only': 'true' },
      store,
    });
    const n = 150_000;
    await write(table, rows(0, n, 'a'));
    const first = (await readLiveFiles(store, table.path, (await table.snapshots.latest())!))[0];
    const firstKey = dataFileKey(table.path, first.partition, first.bucket, first.file.fileName);
    const footer = await readParquetFooter({
      size: first.file.fileSize,
      name: firstKey,
      read: (s, e) => store.getRange(firstKey, s, e),
    });
    const starts = [0];
    for (const g of footer.rowGroups) starts.push(starts[starts.length - 1] + g.numRows);
    const model = new Map<number, string>();
    const rewrite = async (from: number, to: number, tag: string) => {
      await write(table, rows(from, to, tag));
      for (let id = from; id < to; id++) model.set(id, `${tag}${id}`);
    };
    // One row group of the first file rewritten whole (its rows all deleted there), one that rows
    // of the file follow (a scan must then resume at the right position), then random ranges.
    expect(footer.rowGroups.length, 'the first file has several row groups').toBeGreaterThan(1);
    const g = r.int(0, footer.rowGroups.length - 2);
    await rewrite(starts[g], starts[g + 1], 'g');
    const steps = r.int(2, 4);
    for (let s = 0; s < steps; s++) {
      const from = r.int(0, n - 1);
      await rewrite(from, Math.min(n, from + r.int(1, 40_000)), `s${s}-`);
    }
    const where = r.chance(0.5) ? `id >= ${r.int(0, n - 1)}` : undefined;
    const expected = Array.from({ length: n }, (_, id) => `${id}=${model.get(id) ?? `a${id}`}`)
      .filter((row) => where === undefined || Number(row.split('=')[0]) >= Number(where.split(' ')[2]))
      .sort();
    const text = (t: arrow.Table) => {
      const ids = t.getChild('id')!.toArray() as BigInt64Array;
      const vs = t.getChild('v')!.toArray() as string[];
      return Array.from(ids, (id, i) => `${id}=${vs[i]}`).sort();
    };
    const opts = where === undefined ? {} : { where };
    const merged = text(await table.read({ ...opts, ignoreDeletionVectors: true }));
    expect(merged, `merged read = model (seed ${seed}, where ${where})`).toEqual(expected);
    expect(text(await table.read(opts)), `merge-free read = model (seed ${seed}, where ${where})`).toEqual(expected);
    const batches: arrow.RecordBatch[] = [];
    for await (const b of table.scan({ ...opts, batchRows: r.int(1_000, 70_000) })) batches.push(b);
    expect(text(new arrow.Table(batches)), `merge-free scan = model (seed ${seed}, where ${where})`).toEqual(expected);
  });
});
