/**
 * Row-group and row pruning by key range: a read whose predicate (or keyRange) bounds the primary
 * key skips the row groups of a sorted file whose key statistics lie outside, finds the rows inside
 * the others from their decoded keys, and decodes only those. Randomized against a model of the
 * table, through both read paths (readTable and the streamed scan), with the counts --explain shows.
 */
import { describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { tableToRows } from '../../lib/format/columns.js';
import { readLiveFiles } from '../../lib/manifest/scan.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import type { ReadExplain } from '../../lib/table/read-pruning.js';
import type { Table } from '../../lib/table/table.js';
import { rng, testSeed } from '../helpers/random.js';
import * as arrow from 'apache-arrow';

type Row = { id: bigint; s: string; v: number };

const ROWS = 150_000;

async function both(
  t: Table,
  opts: { where?: string; keyRange?: { min?: string[]; max?: string[] } },
): Promise<{ read: string[]; scan: string[]; explain: ReadExplain }> {
  let explain: ReadExplain | undefined;
  const show = (r: Record<string, unknown>) => `${String(r.id)}/${String(r.s)}/${String(r.v)}`;
  const read = tableToRows(await t.read({ ...opts, explain: (e) => (explain = e) }), t.schema.fields).map(show);
  const batches: arrow.RecordBatch[] = [];
  for await (const b of t.scan(opts)) batches.push(b);
  const scan = tableToRows(new arrow.Table(batches), t.schema.fields).map(show);
  return { read, scan, explain: explain! };
}

describe('key-range reads skip row groups and rows', () => {
  it('point, range, IN and keyRange reads return the model rows and decode only their key range', async () => {
    // Prepare: one file of 150,000 keys (three row groups), then updates and deletes of random keys in a second file.
    const seed = testSeed('key-span-read');
    const r = rng(seed);
    const t = await new FolderCatalog(new MemoryStore()).createTable('db.k', {
      fields: parseSchemaText('id BIGINT NOT NULL, s STRING, v INT'),
      primaryKeys: ['id'],
      options: { bucket: '1' },
    });
    const model = new Map<bigint, Row>();
    const first: Row[] = Array.from({ length: ROWS }, (_, i) => ({ id: BigInt(i * 2), s: `s${i}`, v: i }));
    await t.write(first);
    for (const row of first) model.set(row.id, row);
    const updates: Row[] = Array.from({ length: 500 }, () => ({
      id: BigInt(r.int(0, ROWS - 1) * 2),
      s: 'upd',
      v: r.int(0, 1000),
    }));
    const byId = new Map(updates.map((u) => [u.id, u]));
    await t.write([...byId.values()]);
    for (const u of byId.values()) model.set(u.id, u);
    const files = await readLiveFiles(t.store, t.path, (await t.snapshots.latest())!);
    expect(files).toHaveLength(2);
    const sorted = [...model.values()].sort((a, b) => (a.id < b.id ? -1 : 1));
    const expectRows = (keep: (row: Row) => boolean) => sorted.filter(keep).map((x) => `${x.id}/${x.s}/${x.v}`);
    // Act + Assert
    for (let q = 0; q < 6; q++) {
      const x = r.int(0, ROWS * 2);
      const lo = r.int(0, ROWS * 2 - 2000);
      const hi = lo + r.int(0, 2000);
      const cases = [
        { where: `id = ${x}`, keep: (row: Row) => row.id === BigInt(x), maxRows: 2 },
        {
          where: `id >= ${lo} AND id < ${hi} AND v >= 0`,
          keep: (row: Row) => row.id >= BigInt(lo) && row.id < BigInt(hi) && row.v >= 0,
          maxRows: 2 * (hi - lo + 2),
        },
        {
          where: `id IN (${lo}, ${hi})`,
          keep: (row: Row) => row.id === BigInt(lo) || row.id === BigInt(hi),
          maxRows: 2 * (hi - lo + 2),
        },
      ];
      for (const c of cases) {
        const got = await both(t, { where: c.where });
        const want = expectRows(c.keep);
        expect(got.read, `${c.where} (seed ${seed})`).toEqual(want);
        expect(got.scan, `${c.where} (seed ${seed})`).toEqual(want);
        // The large file has three row groups; a range under 2,000 keys lies in at most two of them.
        expect(got.explain.rowGroups!.skippedByStats, c.where).toBeGreaterThanOrEqual(1);
      }
      const range = await both(t, { keyRange: { min: [String(lo)], max: [String(hi)] } });
      expect(range.read, `keyRange [${lo}, ${hi}] (seed ${seed})`).toEqual(
        expectRows((row) => row.id >= BigInt(lo) && row.id <= BigInt(hi)),
      );
      expect(range.scan).toEqual(range.read);
    }
    // The point read's counts: of the big file one row group read for one row, the others skipped by statistics.
    const one = await both(t, { where: `id = ${first[100_000].id}` });
    expect(one.read).toHaveLength(1);
    const counts = one.explain.rowGroups!;
    expect(counts.rowsRead).toBeLessThanOrEqual(2);
    expect(counts.skippedByStats + counts.skippedByKeys + counts.read).toBeGreaterThanOrEqual(3);
    // A key absent from every file between two stored keys: no row decoded at all.
    const none = await both(t, { where: 'id = 1001' });
    expect(none.read).toEqual([]);
    expect(none.explain.rowGroups!.rowsRead).toBe(0);
    // No key bound: no span, every row group read whole.
    const all = await both(t, { where: 'v = 7' });
    expect(all.explain.rowGroups).toBeUndefined();
  });
});

describe('key-range reads equal the full read filtered', () => {
  it.each(['deduplicate', 'partial-update'])(
    '%s: random ranges over a composite key with updates and deletes, by read and by scan',
    async (engine) => {
      // Prepare: a file of 70,000 keys (two row groups), then writes of updates and deletes; the
      // key is (a BIGINT, b STRING), so a range on a alone cuts through runs of equal a.
      const seed = testSeed(`key-span-read equivalence ${engine}`);
      const r = rng(seed);
      const t = await new FolderCatalog(new MemoryStore()).createTable('db.e', {
        fields: parseSchemaText('a BIGINT NOT NULL, b STRING NOT NULL, s STRING, v INT'),
        primaryKeys: ['a', 'b'],
        options: { bucket: '1', 'merge-engine': engine, 'write-only': 'true' },
      });
      const N = 70_000;
      const key = (i: number) => ({ a: BigInt(Math.floor(i / 4)), b: `b${i % 4}` });
      await t.write(Array.from({ length: N }, (_, i) => ({ ...key(i), s: `s${i}`, v: i })));
      for (let w = 0; w < 3; w++) {
        const rows = Array.from({ length: r.int(100, 2000) }, () => {
          const i = r.int(0, N + 400);
          return { ...key(i), s: r.chance(0.3) ? null : `w${w}-${i}`, v: r.int(0, 1000) };
        });
        const kinds = rows.map(() => (engine === 'partial-update' ? 0 : r.chance(0.2) ? 3 : 0));
        await t.write(rows, { kinds });
      }
      const show = (x: Record<string, unknown>) => `${String(x.a)}/${String(x.b)}/${String(x.s)}/${String(x.v)}`;
      const all = tableToRows(await t.read(), t.schema.fields);
      // Act + Assert: each range read is the full read's rows in the range, in the same order.
      for (let q = 0; q < 8; q++) {
        const lo = r.int(0, N / 4);
        const hi = lo + r.int(0, r.chance(0.5) ? 10 : 3000);
        const b = `b${r.int(0, 3)}`;
        const cases = [
          { where: `a >= ${lo} AND a < ${hi}`, keep: (x: Row2) => x.a >= BigInt(lo) && x.a < BigInt(hi) },
          { where: `a = ${lo} AND b >= '${b}'`, keep: (x: Row2) => x.a === BigInt(lo) && x.b >= b },
          {
            where: `a > ${lo} AND a <= ${hi} AND v < 500`,
            keep: (x: Row2) => x.a > BigInt(lo) && x.a <= BigInt(hi) && (x.v as number) < 500,
          },
        ];
        for (const c of cases) {
          let explain: ReadExplain | undefined;
          const got = tableToRows(await t.read({ where: c.where, explain: (e) => (explain = e) }), t.schema.fields);
          const want = (all as Row2[]).filter(c.keep);
          expect(got.map(show), `${c.where} (${engine}, seed ${seed})`).toEqual(want.map(show));
          expect(explain!.rowGroups, c.where).toBeDefined();
          const batches: arrow.RecordBatch[] = [];
          for await (const batch of t.scan({ where: c.where })) batches.push(batch);
          expect(
            tableToRows(new arrow.Table(batches), t.schema.fields).map(show),
            `scan ${c.where} (seed ${seed})`,
          ).toEqual(want.map(show));
        }
      }
    },
  );
});

type Row2 = { a: bigint; b: string; s: string | null; v: number | null };
