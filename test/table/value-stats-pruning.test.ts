/**
 * Value-statistics pruning on append tables: every data file records per-column min / max / null
 * counts, and a filtered read skips files none of whose rows can match (counted in --explain as
 * `skippedByValueStats`), returning exactly the rows of an unpruned read filtered afterwards. A
 * primary-key table never prunes by value columns (an older version would resurrect).
 */
import { describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { tableToRows } from '../../lib/format/columns.js';
import { compactTable } from '../../lib/maintenance/compact.js';
import { readLiveFiles } from '../../lib/manifest/scan.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import type { ReadExplain } from '../../lib/table/read-pruning.js';
import { readSystemTable } from '../../lib/table/system-tables.js';
import type { Table } from '../../lib/table/table.js';

type Row = { ts: bigint; kind: string; amount: number | null; note: string | null };

const show = (r: Record<string, unknown>) => `${String(r.ts)}/${String(r.kind)}/${String(r.amount)}/${String(r.note)}`;

/** 8 writes, batch i holding ts i*100 .. i*100+49; notes null only in batch 2; kinds 'a'..'c' except batch 5 ('x'). */
async function eightFiles(t: Table): Promise<Row[]> {
  const all: Row[] = [];
  for (let i = 0; i < 8; i++) {
    const rows: Row[] = Array.from({ length: 50 }, (_, j) => ({
      ts: BigInt(i * 100 + j),
      kind: i === 5 ? 'x' : ['a', 'b', 'c'][j % 3],
      amount: j % 7 === 0 ? null : i * 10 + j / 4,
      note: i === 2 ? null : `n${j}`,
    }));
    await t.write(rows);
    all.push(...rows);
  }
  return all;
}

async function readWhere(t: Table, where: string): Promise<{ rows: string[]; explain: ReadExplain }> {
  let explain: ReadExplain | undefined;
  const rows = tableToRows(await t.read({ where, explain: (e) => (explain = e) }), t.schema.fields)
    .map(show)
    .sort();
  return { rows, explain: explain! };
}

const CASES: Array<{ where: string; model: (r: Row) => boolean; skipped: number }> = [
  { where: 'ts >= 350 AND ts < 420', model: (r) => r.ts >= 350n && r.ts < 420n, skipped: 7 },
  { where: 'ts >= 250 AND ts < 420', model: (r) => r.ts >= 250n && r.ts < 420n, skipped: 6 },
  { where: 'note IS NULL', model: (r) => r.note === null, skipped: 7 },
  { where: "kind = 'x' OR ts = 0", model: (r) => r.kind === 'x' || r.ts === 0n, skipped: 6 },
  { where: 'amount > 75', model: (r) => r.amount !== null && r.amount > 75, skipped: 7 },
  {
    where: "kind IN ('b', 'c') AND NOT (ts < 700)",
    model: (r) => (r.kind === 'b' || r.kind === 'c') && !(r.ts < 700n),
    skipped: 7,
  },
  { where: 'amount IS NULL', model: (r) => r.amount === null, skipped: 0 },
];

describe('value-statistics pruning on append tables', () => {
  it('skips the files whose column ranges cannot match, and returns exactly the rows of an unpruned read', async () => {
    // Prepare
    const t = await new FolderCatalog(new MemoryStore()).createTable('db.events', {
      fields: parseSchemaText('ts BIGINT, kind STRING, amount DOUBLE, note STRING'),
      options: {},
    });
    const all = await eightFiles(t);
    const files = await readLiveFiles(t.store, t.path, (await t.snapshots.latest())!);
    expect(files).toHaveLength(8);
    expect(files.every((e) => e.file.valueStats !== undefined)).toBe(true);
    for (const c of CASES) {
      // Act
      const { rows, explain } = await readWhere(t, c.where);
      // Assess
      expect(rows, c.where).toEqual(all.filter(c.model).map(show).sort());
      expect(explain.skippedByValueStats, c.where).toBe(c.skipped);
      expect(explain.filesRead, c.where).toBe(8 - c.skipped);
      expect(await t.count({ where: c.where }), c.where).toBe(rows.length);
    }
  });

  it('a compaction merges the statistics of its inputs: reads still equal the unpruned rows', async () => {
    // Prepare
    const t = await new FolderCatalog(new MemoryStore()).createTable('db.events', {
      fields: parseSchemaText('ts BIGINT, kind STRING, amount DOUBLE, note STRING'),
      options: { 'target-file-size': '1 mb' },
    });
    const all = await eightFiles(t);
    // Act
    await compactTable(t, { full: true });
    // Assess
    const files = await readLiveFiles(t.store, t.path, (await t.snapshots.latest())!);
    expect(files.length).toBeLessThan(8);
    expect(files.every((e) => e.file.valueStats !== undefined)).toBe(true);
    for (const c of CASES)
      expect((await readWhere(t, c.where)).rows, c.where).toEqual(all.filter(c.model).map(show).sort());
    const none = await readWhere(t, 'ts > 100000');
    expect(none.rows).toEqual([]);
    expect(none.explain.skippedByValueStats).toBe(files.length);
  });

  it('the statistics system table (TypeScript API) gives the bounds the pruning uses, equal to the rows', async () => {
    const t = await new FolderCatalog(new MemoryStore()).createTable('db.events', {
      fields: parseSchemaText('ts BIGINT, kind STRING, amount DOUBLE, note STRING'),
      options: {},
    });
    const all = await eightFiles(t);
    const { records } = await readSystemTable(t, 'statistics');
    const by = Object.fromEntries(records.map((r) => [r.column, r]));
    const amounts = all.map((r) => r.amount).filter((a): a is number => a !== null);
    expect(by.ts).toMatchObject({
      record_count: 400,
      file_count: 8,
      files_with_stats: 8,
      null_count: 0,
      min: 0,
      max: 749,
    });
    expect(by.kind).toMatchObject({ min: 'a', max: 'x', null_count: 0 });
    expect(by.amount).toMatchObject({
      null_count: all.length - amounts.length,
      min: Math.min(...amounts),
      max: Math.max(...amounts),
    });
    expect(by.note).toMatchObject({ null_count: 50 });
  });

  it('a primary-key table never prunes by a value column', async () => {
    const t = await new FolderCatalog(new MemoryStore()).createTable('db.kv', {
      fields: parseSchemaText('k INT NOT NULL, v INT'),
      primaryKeys: ['k'],
      options: { bucket: '1' },
    });
    await t.write([{ k: 1, v: 1 }]);
    await t.write([{ k: 1, v: 100 }]);
    // v = 1 is in the first file only, but its key was updated in the second: nothing may be skipped.
    const { rows, explain } = await readWhere(t, 'v = 1');
    expect(rows).toEqual([]);
    expect(explain.skippedByValueStats).toBe(0);
  });
});
