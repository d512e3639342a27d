/**
 * A large flush encodes on the encoder pool's threads (lib/format/encoder-pool.ts), a row group
 * per piece: the files are the inline encoder's (pages and footer), a dying worker fails the commit and
 * leaves the table unchanged, and the CLI exits by itself after a write that used workers.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parquetMetadata } from 'hyparquet';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { EncoderWorkerError } from '../../lib/errors.js';
import { tableToRows } from '../../lib/format/columns.js';
import { configureEncoderPool, encoderPool, EncoderPool } from '../../lib/format/encoder-pool.js';
import { readLiveFiles } from '../../lib/manifest/scan.js';
import { WriteBuffer } from '../../lib/mergetree/write-buffer.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { dataFileKey } from '../../lib/table/paths.js';
import type { Table } from '../../lib/table/table.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { allTypeFields, randomRows } from '../format/fixtures.js';
import { runVarve, varveProcess } from '../helpers/cli-process.js';
import { recordCalls } from '../helpers/call-order.js';
import { rng, testSeed } from '../helpers/random.js';
import { testTable } from '../helpers/tables.js';

const FIELDS = allTypeFields();

function newTable(options: Record<string, string> = {}): Promise<Table> {
  return testTable({ schema: FIELDS, primaryKeys: ['id'], options: { bucket: '4', 'write-only': 'true', ...options } });
}

/** Each bucket's one file after a single commit: its bytes before the footer, and its footer's metadata keys sorted. */
async function bucketFiles(table: Table): Promise<Map<number, { pages: Buffer; rows: number }>> {
  const snapshot = await table.snapshots.latest();
  const out = new Map<number, { pages: Buffer; rows: number }>();
  for (const e of await readLiveFiles(table.store, table.path, snapshot!)) {
    const b = (await table.store.get(dataFileKey(table.path, e.partition, e.bucket, e.file.fileName))).body;
    const footer = new DataView(b.buffer, b.byteOffset + b.byteLength - 8, 4).getUint32(0, true);
    const md = parquetMetadata(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer);
    out.set(e.bucket, { pages: Buffer.from(b.subarray(0, b.byteLength - 8 - footer)), rows: Number(md.num_rows) });
  }
  return out;
}

afterAll(async () => {
  delete process.env.VARVE_TEST_ENCODE_WORKER_FAULT;
  await configureEncoderPool({ restart: true });
});

describe('TableWriter on the encoder pool', () => {
  it('writes the same files as the inline encoder, for random rows of every type with nulls and duplicate keys', async () => {
    // Prepare: random rows (keys drawn from a small range, so keys repeat and merge).
    const seed = testSeed('writer encoder pool');
    const r = rng(seed);
    const rows = randomRows(r, FIELDS, r.int(2000, 6000)).map((row) => ({ ...row, id: BigInt(r.int(0, 3000)) }));
    const inline = await newTable();
    const pooled = await newTable();
    // Act: inline (no threads), then on two workers with every flush parallel.
    await configureEncoderPool({ threads: 0 });
    await inline.write(rows);
    await configureEncoderPool({ threads: 2, minFlushBytes: 0 });
    await pooled.write(rows);
    // Assess
    expect(encoderPool().started).toBeGreaterThan(0);
    const a = await bucketFiles(inline);
    const b = await bucketFiles(pooled);
    expect([...b.keys()].sort()).toEqual([...a.keys()].sort());
    expect(a.size).toBeGreaterThan(1);
    for (const [bucket, f] of a) {
      expect(b.get(bucket)!.rows, `bucket ${bucket}, seed ${seed}`).toBe(f.rows);
      expect(b.get(bucket)!.pages.equals(f.pages), `bucket ${bucket}, seed ${seed}`).toBe(true);
    }
    expect(tableToRows(await pooled.read(), FIELDS)).toEqual(tableToRows(await inline.read(), FIELDS));
  });

  it('gathers the merged rows on the workers: same files and manifest entries as inline, over several writes with deletes, deduplicate and first-row', async () => {
    // Prepare: several writes per commit (several buffered tables per bucket, so a piece gathers
    // from many), keys repeating across them, every row kind; both whole-row engines.
    const seed = testSeed('writer encoder pool, gathered');
    const r = rng(seed);
    const gathered = vi.spyOn(EncoderPool.prototype, 'openGathered');
    try {
      for (const engine of ['deduplicate', 'first-row']) {
        const writes = Array.from({ length: r.int(2, 5) }, () => {
          const rows = randomRows(r, FIELDS, r.int(500, 3000)).map((row) => ({ ...row, id: BigInt(r.int(0, 2500)) }));
          const kinds =
            engine === 'first-row' ? undefined : rows.map(() => (r.chance(0.15) ? 3 : r.chance(0.1) ? 1 : 0));
          return { rows, kinds };
        });
        const options = { 'merge-engine': engine };
        const inline = await newTable(options);
        const pooled = await newTable(options);
        const writeAll = async (table: Table) => {
          const w = table.newWriter();
          for (const x of writes) await w.write(x.rows, x.kinds);
          await w.commit('c');
          await w.close();
        };
        // Act
        await configureEncoderPool({ threads: 0 });
        await writeAll(inline);
        await configureEncoderPool({ threads: 2, minFlushBytes: 0 });
        gathered.mockClear();
        await writeAll(pooled);
        // Assess: every bucket's file went through the gathering workers, and is the inline one.
        const context = `${engine}, seed ${seed}`;
        const a = await bucketFiles(inline);
        const b = await bucketFiles(pooled);
        expect(gathered.mock.calls.length, context).toBe(a.size);
        expect([...b.keys()].sort(), context).toEqual([...a.keys()].sort());
        for (const [bucket, f] of a) {
          expect(b.get(bucket)!.rows, `bucket ${bucket}, ${context}`).toBe(f.rows);
          expect(b.get(bucket)!.pages.equals(f.pages), `bucket ${bucket}, ${context}`).toBe(true);
        }
        // Checksums aside: they cover the footer, whose key-value metadata parquet-rs orders differently per file.
        const entries = async (t: Table) =>
          new Map(
            (await readLiveFiles(t.store, t.path, (await t.snapshots.latest())!)).map((e) => {
              expect(e.file.footerCrc32 !== undefined && e.file.fileCrc32 !== undefined, context).toBe(true);
              return [e.bucket, { ...e.file, fileName: '', creationTime: 0, footerCrc32: 0, fileCrc32: 0 }];
            }),
          );
        expect(await entries(pooled), context).toEqual(await entries(inline));
        expect(tableToRows(await pooled.read(), FIELDS), context).toEqual(tableToRows(await inline.read(), FIELDS));
      }
    } finally {
      gathered.mockRestore();
    }
  });

  it('a pooled flush sorts the next bucket only after the one before posted its row groups (the workers start on the first bucket at once)', async () => {
    const table = await newTable();
    await configureEncoderPool({ threads: 2, minFlushBytes: 0 });
    const order: string[] = [];
    const take = recordCalls(order, WriteBuffer.prototype, 'takeGatherPlan', 'sort');
    const post = recordCalls(order, EncoderPool.prototype, 'post', 'post');
    try {
      await table.write(randomRows(rng(10), FIELDS, 3000));
    } finally {
      take.mockRestore();
      post.mockRestore();
    }
    // Every bucket's sort is followed by its posts before the next sort.
    const sorts = order.filter((x) => x === 'sort').length;
    expect(sorts).toBe(4);
    expect(order.join(' ')).toMatch(/^(sort( post)+ ?){4}$/);
  });

  it("a one-bucket flush spreads the file's row groups over the workers and writes the inline encoder's file", async () => {
    // Prepare: one bucket, more rows than two level-0 row groups (65,536 rows each), keys shuffled.
    const seed = testSeed('writer encoder pool, one bucket');
    const r = rng(seed);
    const n = 140_000;
    const ids = Array.from({ length: n }, (_, i) => i);
    for (let i = n - 1; i > 0; i--) {
      const j = r.int(0, i);
      [ids[i], ids[j]] = [ids[j], ids[i]];
    }
    const rows = ids.map((id) => ({ id: BigInt(id), v: r.chance(0.1) ? null : `v${id % 977}` }));
    const fields = parseSchemaText('id BIGINT NOT NULL, v STRING');
    const open = (name: string) =>
      new FolderCatalog(new MemoryStore()).createTable(name, {
        fields,
        primaryKeys: ['id'],
        options: { bucket: '1', 'write-only': 'true' },
      });
    const inline = await open('db.inline');
    const pooled = await open('db.pooled');
    // Act
    await configureEncoderPool({ threads: 0 });
    await inline.write(rows);
    await configureEncoderPool({ threads: 2, minFlushBytes: 0, restart: true });
    await pooled.write(rows);
    // Assess: both workers took row groups; the file is the inline one (pages; row count), rows equal.
    expect(encoderPool().started, `seed ${seed}`).toBe(2);
    const a = (await bucketFiles(inline)).get(0)!;
    const b = (await bucketFiles(pooled)).get(0)!;
    expect(b.rows).toBe(n);
    expect(b.pages.equals(a.pages), `seed ${seed}`).toBe(true);
    expect(tableToRows(await pooled.read(), fields)).toEqual(tableToRows(await inline.read(), fields));
  });

  it('a bucket holding more than an eighth of write-buffer-size is gathered on the calling thread, not copied for the workers', async () => {
    // Prepare: one bucket of ≈ 17 MB buffered against a 64 MB buffer (its eighth: 8 MB).
    const seed = testSeed('writer encoder pool, large bucket');
    const r = rng(seed);
    const fields = parseSchemaText('id BIGINT NOT NULL, v STRING');
    const pad = 'x'.repeat(100);
    const rows = Array.from({ length: 140_000 }, (_, i) => ({ id: BigInt(r.int(0, 200_000)), v: `${pad}${i}` }));
    const open = (name: string) =>
      new FolderCatalog(new MemoryStore()).createTable(name, {
        fields,
        primaryKeys: ['id'],
        options: { bucket: '1', 'write-only': 'true', 'write-buffer-size': '64 mb' },
      });
    const inline = await open('db.inline');
    const pooled = await open('db.pooled');
    const gathered = vi.spyOn(EncoderPool.prototype, 'openGathered');
    const opened = vi.spyOn(EncoderPool.prototype, 'open');
    try {
      // Act
      await configureEncoderPool({ threads: 0 });
      await inline.write(rows);
      await configureEncoderPool({ threads: 2, minFlushBytes: 0 });
      await pooled.write(rows);
      // Assess: the pool encoded it (row groups sent as gathered slices), the same file.
      expect(gathered, `seed ${seed}`).not.toHaveBeenCalled();
      expect(opened, `seed ${seed}`).toHaveBeenCalledTimes(1);
      const a = (await bucketFiles(inline)).get(0)!;
      const b = (await bucketFiles(pooled)).get(0)!;
      expect(b.pages.equals(a.pages), `seed ${seed}`).toBe(true);
    } finally {
      gathered.mockRestore();
      opened.mockRestore();
    }
  });

  it('a writer with a small write-buffer-size (under 64 MB) encodes inline and starts no worker', async () => {
    await configureEncoderPool({ threads: 2, minFlushBytes: 0, restart: true });
    const table = await newTable({ 'write-buffer-size': '32 mb' });
    await table.write(randomRows(rng(6), FIELDS, 2000));
    expect(encoderPool().started).toBe(0);
    expect((await table.snapshots.latest())!.totalRecordCount).toBe(2000);
  });

  it('a worker dying mid-write fails the commit with EncoderWorkerError and commits nothing', async () => {
    // Prepare: fresh workers that exit at their first piece.
    const table = await newTable();
    await table.write(randomRows(rng(7), FIELDS, 100));
    const before = await table.read();
    process.env.VARVE_TEST_ENCODE_WORKER_FAULT = 'exit';
    await configureEncoderPool({ threads: 2, minFlushBytes: 0, restart: true });
    // Act (workers start at the flush and read the hook then)
    const failed = table.write(randomRows(rng(8), FIELDS, 2000));
    // Assess
    await expect(failed).rejects.toThrow(EncoderWorkerError);
    delete process.env.VARVE_TEST_ENCODE_WORKER_FAULT;
    await expect(failed).rejects.toThrow(/nothing of the write was committed/);
    expect((await table.snapshots.latest())!.id).toBe(1);
    expect(tableToRows(await table.read(), FIELDS)).toEqual(tableToRows(before, FIELDS));
    // The pool recovers: the next write starts healthy workers.
    await configureEncoderPool({ threads: 2, minFlushBytes: 0, restart: true });
    await table.write(randomRows(rng(9), FIELDS, 2000));
    expect((await table.snapshots.latest())!.id).toBe(2);
  });

  it('`varve write` exits by itself after encoding on workers, and fails loudly when a worker dies', async () => {
    // Prepare: a 4-bucket table; the child processes encode every multi-bucket flush on 2 workers.
    const dir = mkdtempSync(join(tmpdir(), 'varve-encoder-cli-'));
    const wh = join(dir, 'wh');
    expect(
      (
        await runVarve(wh, [
          'create',
          'db.t',
          '--schema',
          'id BIGINT, v STRING',
          '--primary-key',
          'id',
          '-o',
          'bucket=4',
        ])
      ).code,
    ).toBe(0);
    const input = join(dir, 'in.jsonl');
    writeFileSync(
      input,
      Array.from({ length: 500 }, (_, i) => JSON.stringify({ id: i, v: `v${i}` })).join('\n') + '\n',
    );
    const env = { VARVE_ENCODE_THREADS: '2', VARVE_ENCODE_MIN_FLUSH_BYTES: '0' };
    // Act: a worker that dies, then a healthy write. A worker left referenced would keep the
    // second process alive until the spawn backstop kills it (code -1).
    const crashed = withEnv({ ...env, VARVE_TEST_ENCODE_WORKER_FAULT: 'exit' }, () =>
      varveProcess(wh, ['write', 'db.t', input]),
    );
    const written = withEnv(env, () => varveProcess(wh, ['write', 'db.t', input]));
    // Assess
    expect(crashed.code, crashed.err).not.toBe(0);
    expect(crashed.err).toMatch(/Parquet encoder thread exited/);
    expect(written.code, written.err).toBe(0);
    expect(written.out).toMatch(/snapshot 1\b/);
    const read = await runVarve(wh, ['read', 'db.t', '--format', 'jsonl']);
    expect(read.out.trim().split('\n')).toHaveLength(500);
  });
});

function withEnv<T>(vars: Record<string, string>, fn: () => T): T {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  Object.assign(process.env, vars);
  try {
    return fn();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}
