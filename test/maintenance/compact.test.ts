/**
 * compactBucket / compactTable on a table: upgrades without rewrite, deletes kept below and
 * dropped at the highest level, idempotent retries, the byte budget and progress reports.
 */
import { parquetMetadata } from 'hyparquet';
import { describe, expect, it } from 'vitest';
import { readChangelogFiles, readLiveFiles } from '../../lib/manifest/scan.js';
import { readDataFileMetadata } from '../../lib/format/data-file.js';
import { COMPACT_COMMIT_USER, compactBucket, compactTable, readBucketFiles } from '../../lib/maintenance/compact.js';
import { COMPACT_ROW_GROUP_ROWS } from '../../lib/maintenance/compact-io.js';
import { dataFileKey } from '../../lib/table/paths.js';
import { RowKind } from '../../lib/schema/types.js';
import type { MemoryStore } from '../../lib/store/memory-store.js';
import { listAll } from '../../lib/store/object-store.js';
import type { Table } from '../../lib/table/table.js';
import { DECODE_BATCH_ROWS } from '../../lib/format/row-group-reader.js';
import { rng, testSeed } from '../helpers/random.js';
import { testTable } from '../helpers/tables.js';
import { liveFilesByBucket, newTable, readState, sorted, writeChanges, type Change } from './fixtures.js';

const upserts = (ids: number[], v: bigint, region = 'eu'): Change[] =>
  ids.map((id) => ({ row: { id, region, v, s: `s${id}` }, kind: RowKind.INSERT }));
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** Data and changelog files in the store that no snapshot references. */
async function unreferencedFiles(table: Table): Promise<string[]> {
  const referenced = new Set<string>();
  const latest = (await table.snapshots.latestId()) ?? 0;
  for (let id = 1; id <= latest; id++) {
    const s = await table.snapshots.read(id);
    for (const e of await readLiveFiles(table.store, table.path, s)) referenced.add(e.file.fileName);
    for (const e of await readChangelogFiles(table.store, table.path, s)) referenced.add(e.file.fileName);
  }
  const files = (await listAll(table.store, `${table.path}/`))
    .map((o) => o.key.split('/').pop()!)
    .filter((n) => /^(data|changelog)-/.test(n));
  return files.filter((n) => !referenced.has(n));
}

describe('compactBucket', () => {
  it('upgrades non-overlapping files to the max level without rewriting them', async () => {
    // Tiny target size: every file counts as large, so nothing is rewritten for being small. The
    // flush rolls its output at that size too (one file per row), so writes must not stall.
    const table = await newTable({
      'write-only': 'true',
      'target-file-size': '1 b',
      'num-sorted-run.stop-trigger': '100',
    });
    await writeChanges(table, upserts(range(1, 10), 1n));
    await writeChanges(table, upserts(range(11, 20), 2n));
    const before = (await liveFilesByBucket(table))
      .get('region=eu#0')!
      .map((e) => e.file.fileName)
      .sort();
    const store = table.store as MemoryStore;
    store.resetCallLog();

    const result = await compactBucket(table, 'region=eu', 0, { full: true });

    expect(before.length).toBeGreaterThanOrEqual(2);
    expect(result.upgradedFiles).toBe(before.length);
    expect(result.bytesOut).toBe(0);
    expect(store.callLog.filter((c) => c.op === 'put' && /\/data-/.test(c.key))).toEqual([]);
    const after = (await liveFilesByBucket(table)).get('region=eu#0')!;
    expect(after.map((e) => e.file.fileName).sort()).toEqual(before);
    expect(after.every((e) => e.file.level === table.options.numLevels - 1)).toBe(true);
    expect((await readState(table)).size).toBe(20);
  });

  it('keeps deletes in an intermediate level and drops them at the highest one', async () => {
    // The lookup producer forces level 0 up into the level below the existing max-level run.
    const table = await newTable({ 'write-only': 'true', 'changelog-producer': 'lookup' });
    await writeChanges(table, upserts(range(1, 10), 1n));
    await compactTable(table);
    await writeChanges(table, [{ row: { id: 3, region: 'eu', v: null, s: null }, kind: RowKind.DELETE }]);

    await compactTable(table);
    const mid = (await liveFilesByBucket(table)).get('region=eu#0')!;
    const level4 = mid.filter((e) => e.file.level === 4);
    expect(level4).toHaveLength(1);
    expect(level4[0].file.deleteRowCount).toBe(1);

    await compactTable(table, { full: true });
    const top = (await liveFilesByBucket(table)).get('region=eu#0')!;
    expect(top.map((e) => [e.file.level, e.file.deleteRowCount])).toEqual([[5, 0]]);
    expect([...(await readState(table)).keys()]).not.toContain('eu|3');
    expect((await readState(table)).size).toBe(9);
  });

  it('commits a retried job once and deletes the files of the duplicate attempt', async () => {
    const table = await newTable({ 'write-only': 'true' });
    for (let i = 0; i < 3; i++) await writeChanges(table, upserts(range(1, 8), BigInt(i)));
    const snapshot = (await table.snapshots.latest())!;
    const entries = await readBucketFiles(table, snapshot, 'region=eu', 0);

    const first = await compactBucket(table, 'region=eu', 0, { full: true, entries });
    const retry = await compactBucket(table, 'region=eu', 0, { full: true, entries });

    expect(first.snapshot?.commitUser).toBe(COMPACT_COMMIT_USER);
    expect(retry.alreadyCommitted).toBe(true);
    expect(retry.snapshot?.id).toBe(first.snapshot?.id);
    expect(await table.snapshots.latestId()).toBe(first.snapshot?.id);
    expect(await unreferencedFiles(table)).toEqual([]);
  });

  it('does nothing when no compaction is due', async () => {
    const table = await newTable({ 'write-only': 'true' });
    await writeChanges(table, upserts([1, 2], 1n));
    const result = await compactBucket(table, 'region=eu', 0);
    expect(result.snapshot).toBeUndefined();
    expect(result.filesIn).toBe(0);
  });
});

describe('compaction output', () => {
  it(`cuts its row groups at ${COMPACT_ROW_GROUP_ROWS.toLocaleString('en')} rows (a reader's decoder holds one group), and reads back exactly`, async () => {
    const table = await newTable({ bucket: '1', 'write-only': 'true' });
    const n = COMPACT_ROW_GROUP_ROWS + 5_000;
    await writeChanges(table, upserts(range(1, n), 1n));
    // Overlapping the first file: the full compaction rewrites both into one file.
    await writeChanges(table, upserts(range(1, 1_000), 2n));
    const before = sorted(await readState(table));

    await compactTable(table, { full: true });

    const files = (await liveFilesByBucket(table)).get('region=eu#0')!;
    expect(files).toHaveLength(1);
    const [file] = files;
    const meta = await readDataFileMetadata(
      table.store,
      dataFileKey(table.path, file.partition, file.bucket, file.file.fileName),
    );
    expect(meta.numRows).toBe(n);
    expect(meta.numRowGroups).toBe(2);
    expect(sorted(await readState(table))).toEqual(before);
  });

  it('merges runs of several decode batches each (decoded into memory reused batch after batch) into exactly the newest rows', async () => {
    const seed = testSeed('compact reused decode memory');
    const r = rng(seed);
    const table = await testTable({
      schema: 'id BIGINT NOT NULL, v BIGINT, s STRING',
      primaryKeys: ['id'],
      options: { bucket: '1', 'write-only': 'true' },
    });
    // The first run holds every key of 4 decode batches; the later ones (2 batches each) only keys
    // from 50,000 on. Below that the first run's rows win alone, and the merge passes them on as
    // views of its decoded memory, not copies: a chunk held past its turn would be overwritten.
    const keys = 4 * DECODE_BATCH_ROWS;
    const expected = new Map<bigint, { v: bigint; s: string }>();
    for (let run = 0; run < 3; run++) {
      const rows = [];
      for (let id = run === 0 ? 0 : 50_000; id < keys; id++) {
        if (run > 0 && !r.chance(0.8)) continue;
        const row = { id: BigInt(id), v: BigInt(run * keys + id), s: `run${run}-${id}-${r.int(0, 1e6)}` };
        rows.push(row);
        expected.set(row.id, { v: row.v, s: row.s });
      }
      await table.write(rows);
    }

    await compactTable(table, { full: true });

    const files = [...(await liveFilesByBucket(table)).values()].flat();
    expect(files).toHaveLength(1);
    const out = await table.read();
    expect(out.numRows, `seed ${seed}`).toBe(expected.size);
    const [id, v, str] = ['id', 'v', 's'].map((c) => out.getChild(c)!);
    const wrong: number[] = [];
    for (let i = 0; i < out.numRows && wrong.length < 5; i++) {
      const want = expected.get(id.get(i) as bigint);
      if (want === undefined || want.v !== v.get(i) || want.s !== str.get(i)) wrong.push(i);
    }
    expect(wrong, `rows of the compacted table that are not the newest (seed ${seed})`).toEqual([]);
  });
});

describe('compaction output encodings', () => {
  /** Per column of the bucket's one live file: whether it has a dictionary. */
  async function outputDictionaries(table: Table): Promise<Record<string, boolean>> {
    const files = [...(await liveFilesByBucket(table)).values()].flat();
    expect(files).toHaveLength(1);
    const [f] = files;
    const { body } = await table.store.get(dataFileKey(table.path, f.partition, f.bucket, f.file.fileName));
    const meta = parquetMetadata(body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength) as ArrayBuffer);
    const out: Record<string, boolean> = {};
    for (const g of meta.row_groups)
      for (const c of g.columns) {
        const name = c.meta_data!.path_in_schema.join('.');
        out[name] = (out[name] ?? false) || c.meta_data!.dictionary_page_offset !== undefined;
      }
    return out;
  }

  it('writes a string column of distinct values without a dictionary, unless parquet.enable.dictionary#col asks for one', async () => {
    const cases: Record<string, string>[] = [{}, { 'parquet.enable.dictionary#name': 'true' }];
    for (const options of cases) {
      const table = await testTable({
        schema: 'id BIGINT NOT NULL, name STRING, tag STRING',
        primaryKeys: ['id'],
        options: { bucket: '1', 'write-only': 'true', ...options },
      });
      const expected = new Map<bigint, { name: string; tag: string }>();
      for (let run = 0; run < 3; run++) {
        const rows = [];
        for (let id = run * 2_000; id < run * 2_000 + 6_000; id++) {
          const row = { id: BigInt(id), name: `name-${run}-${id}`, tag: `tag-${id % 5}` };
          rows.push(row);
          expected.set(row.id, row);
        }
        await table.write(rows);
      }

      await compactTable(table, { full: true });

      expect(await outputDictionaries(table)).toMatchObject({
        name: 'parquet.enable.dictionary#name' in options,
        tag: true,
      });
      const out = await table.read();
      expect(out.numRows).toBe(expected.size);
      const [id, name, tag] = ['id', 'name', 'tag'].map((c) => out.getChild(c)!);
      const wrong: number[] = [];
      for (let i = 0; i < out.numRows && wrong.length < 5; i++) {
        const want = expected.get(id.get(i) as bigint);
        if (want === undefined || want.name !== name.get(i) || want.tag !== tag.get(i)) wrong.push(i);
      }
      expect(wrong, 'rows of the compacted table that are not the newest').toEqual([]);
    }
  });
});

describe('compactTable', () => {
  async function threeBuckets(): Promise<Table> {
    const table = await newTable({ 'write-only': 'true', bucket: '3' });
    for (let i = 0; i < 6; i++) await writeChanges(table, upserts(range(1, 30), BigInt(i)));
    return table;
  }

  it('compacts every bucket that is due and reports what it did', async () => {
    const table = await threeBuckets();
    const expected = sorted(await readState(table));
    const progress: Array<[number, number]> = [];

    const summary = await compactTable(table, { onProgress: (p) => progress.push([p.done, p.total]) });

    expect(summary.bucketsChecked).toBe(3);
    expect(summary.bucketsCompacted).toBe(3);
    expect(summary.filesIn).toBe(18);
    expect(summary.bytesIn).toBeGreaterThan(0);
    // One compaction run, one COMPACT snapshot covering all three buckets (was one per bucket).
    expect(summary.snapshots).toHaveLength(1);
    const snapshot = await table.snapshots.read(summary.snapshots[0]);
    expect(snapshot.commitKind).toBe('COMPACT');
    expect(await table.snapshots.latestId()).toBe(snapshot.id);
    expect(progress).toEqual([
      [1, 3],
      [2, 3],
      [3, 3],
    ]);
    expect(sorted(await readState(table))).toEqual(expected);
  });

  it('stops starting buckets once the byte budget is spent, and the next call goes on', async () => {
    const table = await threeBuckets();

    const first = await compactTable(table, { maxBytes: 1 });
    const second = await compactTable(table, { maxBytes: 1 });

    expect(first.bucketsCompacted).toBe(1);
    expect(first.remainingBuckets).toBe(2);
    expect(second.bucketsCompacted).toBe(1);
    expect(second.remainingBuckets).toBe(2);
    // The bucket compacted first has nothing due any more, so it is passed over quickly.
    const third = await compactTable(table);
    expect(third.bucketsCompacted).toBe(1);
  });

  it('compacts only the partition and bucket asked for', async () => {
    const table = await newTable({ 'write-only': 'true', bucket: '2' });
    for (let i = 0; i < 6; i++)
      await writeChanges(table, [...upserts(range(1, 10), 1n, 'eu'), ...upserts(range(1, 10), 1n, 'us')]);

    const summary = await compactTable(table, { partition: { region: 'us' }, bucket: 1 });

    expect(summary.bucketsChecked).toBe(1);
    const levels = await liveFilesByBucket(table);
    expect(levels.get('region=us#1')!.every((e) => e.file.level > 0)).toBe(true);
    expect(levels.get('region=eu#1')!.every((e) => e.file.level === 0)).toBe(true);
    await expect(compactTable(table, { partition: { nope: 'x' } })).rejects.toThrow(/not a partition key/);
  });
});
