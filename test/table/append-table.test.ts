/**
 * Append tables (no primary key, Paimon's append-only tables): creation rules, rows kept as
 * written (duplicates too) in write order, inserts only, copy-on-write delete, small-file
 * compaction, streamed scan in bounded pieces, consumers and expiry, system tables, and the CLI.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { pastFloor } from '../helpers/expiry-clock.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as arrow from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { InvalidArgumentError, OptionError } from '../../lib/errors.js';
import { tableToRows } from '../../lib/format/columns.js';
import { compactTable } from '../../lib/maintenance/compact.js';
import { expireSnapshots } from '../../lib/maintenance/expire-snapshots.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { RowKind } from '../../lib/schema/types.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { readSplit } from '../../lib/stream/split.js';
import { StreamScan } from '../../lib/stream/stream-scan.js';
import { writeConsumer } from '../../lib/snapshot/consumer.js';
import type { Table } from '../../lib/table/table.js';
import { runVarve } from '../helpers/cli-process.js';

const FIELDS = 'dt STRING NOT NULL, id INT, v STRING';

async function newTable(
  options: Record<string, string> = {},
  catalog = new FolderCatalog(new MemoryStore()),
): Promise<Table> {
  return catalog.createTable('db.log', { fields: parseSchemaText(FIELDS), partitionKeys: ['dt'], options });
}

const rowsOf = async (t: Table, opts: Parameters<Table['read']>[0] = {}) =>
  tableToRows(await t.read(opts), t.schema.fields).map((r) => `${r.dt}/${r.id}/${r.v}`);

describe('append tables', () => {
  it('are created without a primary key: bucket-unaware by default, or hashed on a bucket-key', async () => {
    const unaware = await newTable();
    expect(unaware.schema.primaryKeys).toEqual([]);
    expect(unaware.schema.options.bucket).toBe('-1');
    const hashed = await newTable({ bucket: '4', 'bucket-key': 'id' });
    expect(hashed.options.bucket).toBe(4);
  });

  it('refuse merge and changelog options, a fixed bucket count without bucket-key, and -1 on a primary-key table', async () => {
    await expect(newTable({ 'merge-engine': 'aggregation' })).rejects.toThrow(
      /merge-engine is set on a table without a primary key/,
    );
    await expect(newTable({ 'changelog-producer': 'lookup' })).rejects.toThrow(
      /changelog-producer is set on a table without a primary key/,
    );
    await expect(newTable({ 'sequence.field': 'id' })).rejects.toThrow(OptionError);
    await expect(newTable({ 'fields.id.aggregate-function': 'sum' })).rejects.toThrow(OptionError);
    await expect(newTable({ bucket: '4' })).rejects.toThrow(/needs bucket-key/);
    await expect(newTable({ bucket: '4', 'bucket-key': 'dt' })).rejects.toThrow(/is a partition key/);
    await expect(newTable({ 'bucket-key': 'id' })).rejects.toThrow(/bucket-unaware/);
    await expect(newTable({ bucket: '0' })).rejects.toThrow(/bucket/);
    expect(await newTable({ 'changelog-producer': 'none' })).toBeDefined();
    const catalog = new FolderCatalog(new MemoryStore());
    await expect(
      catalog.createTable('db.pk', {
        fields: parseSchemaText(FIELDS),
        primaryKeys: ['dt', 'id'],
        options: { bucket: '-1' },
      }),
    ).rejects.toThrow(/dynamic bucket mode\) is not supported/);
  });

  it('keep every row as written, duplicates included, in write order within a bucket; reads filter, count, limit and travel in time', async () => {
    const t = await newTable();
    const first = await t.write([
      { dt: 'a', id: 2, v: 'x' },
      { dt: 'a', id: 1, v: 'y' },
      { dt: 'a', id: 2, v: 'x' },
    ]);
    await t.write([
      { dt: 'a', id: 0, v: 'z' },
      { dt: 'b', id: 5, v: null },
    ]);
    expect(await rowsOf(t)).toEqual(['a/2/x', 'a/1/y', 'a/2/x', 'a/0/z', 'b/5/null']);
    expect(await rowsOf(t, { where: "v = 'x'" })).toEqual(['a/2/x', 'a/2/x']);
    expect(await t.count({ where: 'v IS NULL' })).toBe(1);
    expect(await rowsOf(t, { limit: 2 })).toEqual(['a/2/x', 'a/1/y']);
    expect(await rowsOf(t, { snapshotId: first.snapshot!.id })).toEqual(['a/2/x', 'a/1/y', 'a/2/x']);
    // The streamed scan yields the same rows in the same order.
    const scanned: string[] = [];
    for await (const b of t.scan({ batchRows: 2 }))
      for (const r of tableToRows(new arrow.Table(b), t.schema.fields)) scanned.push(`${r.dt}/${r.id}/${r.v}`);
    expect(scanned).toEqual(await rowsOf(t));
  });

  it('take inserts only: a -D or -U record is refused with what to do instead', async () => {
    const t = await newTable();
    await expect(t.write([{ dt: 'a', id: 1, v: 'x' }], { kinds: [RowKind.DELETE] })).rejects.toThrow(
      InvalidArgumentError,
    );
    await expect(t.write([{ dt: 'a', id: 1, v: 'x' }], { kinds: [RowKind.UPDATE_BEFORE] })).rejects.toThrow(
      /takes inserts only/,
    );
    expect(await t.snapshots.latest()).toBeUndefined();
  });

  it('delete --where rewrites only the files holding matching rows, as one OVERWRITE; time travel still sees the rows', async () => {
    const t = await newTable();
    const w = await t.write([
      { dt: 'a', id: 1, v: 'x' },
      { dt: 'a', id: 2, v: 'y' },
      { dt: 'b', id: 3, v: 'x' },
    ]);
    await t.write([{ dt: 'b', id: 4, v: 'y' }]);
    const before = new Set(await liveFileNames(t));
    const d = await t.deleteWhere("v = 'x' AND dt = 'a'");
    expect(d).toMatchObject({ rows: 1, files: 1 });
    expect(d.snapshot!.commitKind).toBe('OVERWRITE');
    expect(await rowsOf(t)).toEqual(['a/2/y', 'b/3/x', 'b/4/y']);
    const after = await liveFileNames(t);
    // Partition b's files are untouched.
    expect(after.filter((f) => before.has(f))).toHaveLength(2);
    expect(await rowsOf(t, { snapshotId: w.snapshot!.id })).toEqual(['a/1/x', 'a/2/y', 'b/3/x']);
    expect((await t.deleteWhere('id > 100')).rows).toBe(0);
    // A delete that empties a file removes it without a replacement.
    expect((await t.deleteWhere("dt = 'b'")).files).toBe(0);
    expect(await rowsOf(t)).toEqual(['a/2/y']);
  });

  it('small-file compaction merges adjacent small files in order, never a large one, and the stream ignores it', async () => {
    const t = await newTable({ 'target-file-size': '64 kb', 'compaction.min.file-num': '3' });
    for (let i = 0; i < 6; i++) await t.write([{ dt: 'a', id: i, v: 'v'.repeat(i) }]);
    const s = await compactTable(t, { full: true });
    expect(s.filesIn).toBe(6);
    expect(s.filesOut).toBe(1);
    expect(await rowsOf(t)).toEqual(['a/0/', 'a/1/v', 'a/2/vv', 'a/3/vvv', 'a/4/vvvv', 'a/5/vvvvv']);
    // Nothing small is left to compact.
    expect((await compactTable(t, { full: true })).filesIn).toBe(0);
    const scan = new StreamScan(t, { mode: 'earliest' });
    const kinds: string[] = [];
    for (let p = await scan.plan(); p; p = await scan.plan()) kinds.push(p.snapshot.commitKind);
    expect(kinds).toEqual(Array(6).fill('APPEND'));
  });

  it('a stream with a consumer emits every appended row in order; expiry keeps what the consumer still needs', async () => {
    const t = await newTable({
      bucket: '2',
      'bucket-key': 'id',
      'snapshot.num-retained.min': '1',
      'snapshot.num-retained.max': '1',
    });
    for (let i = 0; i < 4; i++)
      await t.write([
        { dt: 'a', id: 1, v: `r${i}` },
        { dt: 'a', id: 2, v: `r${i}` },
      ]);
    const scan = new StreamScan(t, { mode: 'earliest', consumerId: 'c1' });
    const first = await scan.plan();
    const rows = tableToRows(await readSplit(scan.table, first!.splits[0]), t.schema.fields);
    expect(rows).toHaveLength(1);
    // The consumer has delivered snapshot 1: expiry keeps 2 onwards for it.
    await writeConsumer(t.store, t.path, 'c1', { nextSnapshot: 2, lastUpdated: Date.now() });
    await expireSnapshots(t, { now: pastFloor() });
    expect(await t.snapshots.earliestId()).toBe(2);
    const seen: string[] = [];
    for (let p = await scan.plan(); p; p = await scan.plan()) {
      for (const split of p.splits)
        for (const r of tableToRows(await readSplit(scan.table, split), t.schema.fields)) seen.push(`${r.id}/${r.v}`);
    }
    expect(seen.filter((x) => x.startsWith('1/'))).toEqual(['1/r1', '1/r2', '1/r3']);
    expect(seen.filter((x) => x.startsWith('2/'))).toEqual(['2/r1', '2/r2', '2/r3']);
  });

  it('system tables describe an append table', async () => {
    const t = await newTable();
    await t.write([
      { dt: 'a', id: 1, v: 'x' },
      { dt: 'a', id: 1, v: 'x' },
    ]);
    const { readSystemTable } = await import('../../lib/table/system-tables.js');
    expect((await readSystemTable(t, 'partitions')).records).toMatchObject([
      { partition: 'dt=a', record_count: 2, file_count: 1 },
    ]);
    expect((await readSystemTable(t, 'files')).records).toHaveLength(1);
    expect((await readSystemTable(t, 'schemas')).records[0]).toMatchObject({ primary_keys: '' });
  });
});

async function liveFileNames(t: Table): Promise<string[]> {
  const { readLiveFiles } = await import('../../lib/manifest/scan.js');
  return (await readLiveFiles(t.store, t.path, (await t.snapshots.latest())!)).map((e) => e.file.fileName);
}

describe('append tables in the CLI', () => {
  it('create without --primary-key, write, read, delete --where, describe; a -D line is refused', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'varve-append-'));
    const varve = (...args: string[]) => runVarve(join(dir, 'wh'), args);
    const c = await varve('create', 'db.events', '--schema', 'ts BIGINT, kind STRING');
    expect(c.out).toMatch(/created db\.events \(append table, bucket-unaware\)/);
    const file = join(dir, 'in.jsonl');
    writeFileSync(
      file,
      ['{"ts": 2, "kind": "click"}', '{"ts": 1, "kind": "view"}', '{"ts": 2, "kind": "click"}'].join('\n') + '\n',
    );
    expect((await varve('write', 'db.events', file)).code).toBe(0);
    const read = await varve('read', 'db.events', '--format', 'jsonl');
    expect(
      read.out
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).ts),
    ).toEqual([2, 1, 2]);
    expect((await varve('delete', 'db.events', '--where', "kind = 'click'")).out).toMatch(/deleted 2 rows/);
    expect((await varve('count', 'db.events')).out.trim()).toBe('1');
    expect((await varve('describe', 'db.events')).out).toMatch(/primary key none \(append table/);
    writeFileSync(file, '{"ts": 1, "kind": "view", "_kind": "-D"}\n');
    const bad = await varve('write', 'db.events', file);
    expect(bad.code).not.toBe(0);
    expect(bad.err).toMatch(/append table takes inserts only/);
    const refused = await varve('create', 'db.bad', '--schema', 'ts BIGINT', '-o', 'merge-engine=first-row');
    expect(refused.err).toMatch(/without a primary key/);
  });
});
