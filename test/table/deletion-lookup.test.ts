/**
 * The lookup of deletion-vector maintenance (lib/table/deletion-lookup.ts): its decoded-column
 * cache stays within its share of `compaction.memory-budget`, and an older file's row groups
 * whose key statistics miss the commit's keys are not fetched. The vectors stay exact either way.
 */
import * as arrow from 'apache-arrow';
import { afterAll, describe, expect, it } from 'vitest';
import { configureEncoderPool, encoderPool } from '../../lib/format/encoder-pool.js';
import { readParquetFooter } from '../../lib/format/row-group-reader.js';
import { readLiveFiles } from '../../lib/manifest/scan.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { lookupCacheBytes } from '../../lib/table/deletion-lookup.js';
import { dataFileKey } from '../../lib/table/paths.js';
import type { Table } from '../../lib/table/table.js';
import { rng, testSeed } from '../helpers/random.js';
import { testTable } from '../helpers/tables.js';

/** Rows id = from … to - 1 (every `step`-th), v = `${tag}${id}`. */
function rows(from: number, to: number, tag: string, step = 1): arrow.Table {
  const ids: bigint[] = [];
  const vs: string[] = [];
  for (let i = from; i < to; i += step) {
    ids.push(BigInt(i));
    vs.push(`${tag}${i}`);
  }
  return new arrow.Table({
    id: arrow.makeVector(BigInt64Array.from(ids)),
    v: arrow.vectorFromArray(vs, new arrow.Utf8()),
  });
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

/** The rows as sorted `id=v` texts. */
function texts(t: arrow.Table): string[] {
  const ids = t.getChild('id')!.toArray() as BigInt64Array;
  const vs = t.getChild('v')!.toArray() as string[];
  return Array.from(ids, (id, i) => `${id}=${vs[i]}`).sort();
}

function dvTable(store: MemoryStore, budget: string, more: Record<string, string> = {}): Promise<Table> {
  return testTable({
    schema: 'id BIGINT NOT NULL, v STRING',
    primaryKeys: ['id'],
    options: {
      bucket: '1',
      'deletion-vectors.enabled': 'true',
      'write-only': 'true',
      'compaction.memory-budget': budget,
      ...more,
    },
    store,
  });
}

/** Keys of the objects read (whole or by range) from `store` from now on. */
function recordReads(store: MemoryStore): Set<string> {
  const read = new Set<string>();
  const get = store.get.bind(store);
  const getRange = store.getRange.bind(store);
  store.get = (key) => (read.add(key), get(key));
  store.getRange = (key, start, end) => (read.add(key), getRange(key, start, end));
  return read;
}

afterAll(async () => {
  await configureEncoderPool({ restart: true });
});

describe('deletion-vector lookup', () => {
  it('keeps its decoded-column cache within a quarter of compaction.memory-budget', async () => {
    const store = new MemoryStore();
    const budget = 4 * 1024 * 1024;
    const table = await dvTable(store, '4 mb');
    const expected = new Map<number, string>();
    let cachedOnce = false;
    // Each commit's file decodes to ≈ 340 KB of merge columns: more commits than the 1 MB share holds.
    for (let c = 0; c < 8; c++) {
      const from = c * 5_000;
      await write(table, rows(from, from + 20_000, `c${c}-`));
      for (let i = from; i < from + 20_000; i++) expected.set(i, `c${c}-${i}`);
      const cached = lookupCacheBytes(store);
      expect(cached, `after commit ${c}`).toBeLessThanOrEqual(budget / 4);
      cachedOnce ||= cached > 0;
    }
    expect(cachedOnce, 'the cache held files').toBe(true);
    const want = [...expected].map(([id, v]) => `${id}=${v}`).sort();
    expect(texts(await table.read())).toEqual(want);
    expect(texts(await table.read({ ignoreDeletionVectors: true }))).toEqual(want);
  });

  // The writer held each level-0 file's merge columns sorted as it encoded the file (inline, or
  // gathered for the encoder pool's workers): it hands them over, and the commit reads none back.
  for (const pooled of [false, true]) {
    it(`looks the keys of a commit's new files up without reading them back (${pooled ? 'encoder pool' : 'inline encoder'})`, async () => {
      await configureEncoderPool(pooled ? { threads: 2, minFlushBytes: 0 } : { threads: 0 });
      const store = new MemoryStore();
      // A write buffer large enough for the pool's flush.
      const table = await dvTable(store, '256 mb', { bucket: '2', 'write-buffer-size': '64 mb' });
      await write(table, rows(0, 20_000, 'a'));
      const before = new Set(
        (await readLiveFiles(store, table.path, (await table.snapshots.latest())!)).map((e) => e.file.fileName),
      );
      const read = recordReads(store);
      await write(table, rows(10_000, 30_000, 'b', 3));
      if (pooled) expect(encoderPool().started, 'the pool encoded the files').toBeGreaterThan(0);
      const snapshot = (await table.snapshots.latest())!;
      const added = (await readLiveFiles(store, table.path, snapshot)).filter((e) => !before.has(e.file.fileName));
      expect(added.length, 'the second commit added a file per bucket').toBe(2);
      for (const e of added) {
        const key = dataFileKey(table.path, e.partition, e.bucket, e.file.fileName);
        expect(read.has(key), `${e.file.fileName} was read back`).toBe(false);
      }
      const want = [...rows(0, 20_000, 'a').toArray()].map((r) => `${r.id}=a${r.id}`);
      const wantMap = new Map(want.map((t) => [t.split('=')[0], t]));
      for (let i = 10_000; i < 30_000; i += 3) wantMap.set(String(i), `${i}=b${i}`);
      const got = texts(await table.read());
      expect(got).toEqual([...wantMap.values()].sort());
      expect(got).toEqual(texts(await table.read({ ignoreDeletionVectors: true })));
    });
  }

  it('looks up a commit larger than its memory budget in key-range chunks, exactly (random keys and file splits)', async () => {
    const seed = testSeed('deletion-vector lookup in chunks');
    const r = rng(seed);
    const store = new MemoryStore();
    // 1 MB budget: a chunk's added columns hold at most 256 KB (≈ 15,000 rows of id, _SEQUENCE_NUMBER,
    // _VALUE_KIND) or a row group per file; each commit adds 250,000 rows in several level-0 files of
    // several row groups (65,536 rows) each (an unspillable write buffer), whose key ranges overlap
    // (keys in random order): the files are read a row group at a time, in many key-range chunks.
    const table = await dvTable(store, '1 mb', { 'write-buffer-size': '3 mb', 'write-buffer-spillable': 'false' });
    const model = new Map<number, string>();
    const seen = new Set<string>();
    for (let c = 0; c < 2; c++) {
      const ids: number[] = [];
      for (let i = 0; i < 250_000; i++) ids.push(r.int(0, 400_000));
      const vs = ids.map((_, i) => `${c}.${i}`);
      const w = table.newWriter();
      try {
        // In slices: the buffer fills and flushes a level-0 file several times per commit.
        for (let at = 0; at < ids.length; at += 10_000) {
          await w.writeArrow(
            new arrow.Table({
              id: arrow.makeVector(BigInt64Array.from(ids.slice(at, at + 10_000), BigInt)),
              v: arrow.vectorFromArray(vs.slice(at, at + 10_000), new arrow.Utf8()),
            }),
          );
        }
        await w.commit();
      } finally {
        await w.close();
      }
      ids.forEach((id, i) => model.set(id, vs[i]));
      const files = await readLiveFiles(store, table.path, (await table.snapshots.latest())!);
      const added = files.filter((f) => !seen.has(f.file.fileName));
      for (const f of files) seen.add(f.file.fileName);
      expect(added.length, `commit ${c} wrote several files, seed ${seed}`).toBeGreaterThan(1);
      expect(Math.max(...added.map((f) => f.file.rowCount)), 'a file of several row groups').toBeGreaterThan(65_536);
      const want = [...model].map(([id, v]) => `${id}=${v}`).sort();
      expect(texts(await table.read()), `commit ${c}, seed ${seed}`).toEqual(want);
    }
    expect(texts(await table.read({ ignoreDeletionVectors: true })), `seed ${seed}`).toEqual(
      [...model].map(([id, v]) => `${id}=${v}`).sort(),
    );
  });

  it("does not fetch an older file's row groups whose key statistics miss the commit's keys", async () => {
    const store = new MemoryStore();
    const fetched: Array<{ key: string; start: number; end: number }> = [];
    const getRange = store.getRange.bind(store);
    store.getRange = (key, start, end) => {
      fetched.push({ key, start, end });
      return getRange(key, start, end);
    };
    // A budget whose cache share cannot hold the first file: its lookup decodes by range.
    // Dictionary pages kept for `v` (unique strings, written plain by default), so the file is large
    // enough for the premise below.
    const table = await dvTable(store, '4 mb', { 'parquet.enable.dictionary': 'true' });
    // Three whole row groups (65,536 rows each): the last one and the footer fill the footer read's 64 KiB.
    await write(table, rows(0, 196_608, 'a'));
    const first = (await readLiveFiles(store, table.path, (await table.snapshots.latest())!))[0];
    const firstKey = dataFileKey(table.path, first.partition, first.bucket, first.file.fileName);
    const footer = await readParquetFooter({
      size: first.file.fileSize,
      name: firstKey,
      read: (s, e) => getRange(firstKey, s, e),
    });
    expect(footer.rowGroups.length, 'the first file has several row groups').toBe(3);

    fetched.length = 0;
    await write(table, rows(196_000, 196_608, 'b', 7));
    const ofFirst = fetched.filter((f) => f.key === firstKey);
    expect(ofFirst.length, 'the first file was looked up').toBeGreaterThan(0);
    for (let g = 0; g < footer.rowGroups.length - 1; g++) {
      const chunks = footer.chunks[g];
      const start = Math.min(...chunks.map((c) => c.start));
      const end = Math.max(...chunks.map((c) => c.start + c.length));
      for (const f of ofFirst)
        expect(f.end <= start || f.start >= end, `row group ${g}: fetched [${f.start}, ${f.end})`).toBe(true);
    }
    const got = texts(await table.read());
    expect(got).toEqual(texts(await table.read({ ignoreDeletionVectors: true })));
    expect(got.length).toBe(196_608);
    expect(got.filter((r) => r.includes('=b')).length).toBe(Math.ceil(608 / 7));
  });
});
