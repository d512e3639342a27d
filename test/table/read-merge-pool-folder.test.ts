/**
 * The merge pool's workers read a folder table's files themselves (merge-pool.ts): random
 * histories read on the workers return the inline merge's bytes without the calling thread serving
 * one range, every file they opened is closed again (/proc/self/fd: worker threads share the
 * process's descriptors), and a file missing from the folder fails the read with the store's own
 * error, as inline, leaving nothing open.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as arrow from 'apache-arrow';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { configureDecodePool } from '../../lib/format/decode-pool.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { RowKind, type Row } from '../../lib/schema/types.js';
import { LocalStore } from '../../lib/store/local-store.js';
import { mergePool } from '../../lib/table/merge-pool.js';
import type { ReadOptions } from '../../lib/table/read.js';
import type { Table } from '../../lib/table/table.js';
import { openFilesUnder } from '../helpers/open-files.js';
import { rng, testSeed, type Rng } from '../helpers/random.js';

const scratch = mkdtempSync(join(tmpdir(), 'varve-merge-pool-folder-'));
afterAll(async () => {
  await mergePool().close();
  await configureDecodePool({ restart: true });
  rmSync(scratch, { recursive: true, force: true });
});
afterEach(() => vi.restoreAllMocks());

/** The table's Arrow IPC stream bytes (type, layout and every value). */
function ipc(t: arrow.Table): Buffer {
  return Buffer.from(arrow.tableToIPC(t, 'stream'));
}

/** A folder table of `buckets` buckets with 5 random commits (upserts and deletes over overlapping and disjoint key ranges). */
async function randomTable(dir: string, r: Rng, buckets: number): Promise<{ store: LocalStore; table: Table }> {
  const store = new LocalStore(dir);
  const table = await new FolderCatalog(store).createTable('db.t', {
    fields: parseSchemaText('k BIGINT NOT NULL, v STRING, n INT'),
    primaryKeys: ['k'],
    options: { bucket: String(buckets), 'write-only': 'true' },
  });
  for (let c = 0; c < 5; c++) {
    const from = r.int(0, 400),
      width = r.int(20, 500 - from);
    const rows: Row[] = [],
      kinds: number[] = [];
    for (let i = r.int(1, 400); i > 0; i--) {
      rows.push({
        k: BigInt(from + r.int(0, width - 1)) * 7_000_000_001n,
        v: r.chance(0.2) ? null : `c${c}-${i}`,
        n: i,
      });
      kinds.push(r.chance(0.1) ? RowKind.DELETE : RowKind.INSERT);
    }
    await table.write(rows, { kinds });
  }
  return { store, table };
}

/** `read` with the calling thread's ranged reads of the folder counted. */
async function countingRanges<T>(read: () => Promise<T>): Promise<{ result: T | Error; ranges: number }> {
  const open = vi.spyOn(LocalStore.prototype, 'openRanges');
  const get = vi.spyOn(LocalStore.prototype, 'getRange');
  try {
    const result = await read().catch((e: unknown) => e as Error);
    return { result, ranges: open.mock.calls.length + get.mock.calls.length };
  } finally {
    open.mockRestore();
    get.mockRestore();
  }
}

describe('merged read on the merge pool, table in a folder', () => {
  it('workers read the files themselves: the inline bytes, no range served by the calling thread, no file left open', async () => {
    const seed = testSeed('read-merge-pool-folder');
    const r = rng(seed);
    for (let t = 0; t < 3; t++) {
      // Prepare: a random history in its own folder.
      const dir = join(scratch, `t${t}`);
      const { table } = await randomTable(dir, r, r.int(2, 4));
      for (const opts of [{}, { keepDeletes: true }, { columns: ['v'] }, { where: 'n > 100' }] as ReadOptions[]) {
        const what = `table ${t}, read ${JSON.stringify(opts)} (seed ${seed})`;
        // Act: inline, then every section on two workers.
        await configureDecodePool({ threads: 0 });
        const inline = await table.read(opts);
        await configureDecodePool({ threads: 2, minBytes: 0 });
        const { result: pooled, ranges } = await countingRanges(() => table.read(opts));
        // Assess
        if (pooled instanceof Error) throw pooled;
        expect(ipc(pooled).equals(ipc(inline)), what).toBe(true);
        expect(ranges, what).toBe(0);
        expect(openFilesUnder(dir), what).toEqual([]);
      }
    }
    expect(mergePool().started).toBeGreaterThan(0);
  });

  it('a file missing from the folder fails the read with the store error the inline read throws, and leaves nothing open', async () => {
    const seed = testSeed('read-merge-pool-folder-missing');
    const r = rng(seed);
    // Prepare: a random history, then one of its data files deleted.
    const dir = join(scratch, 'missing');
    const { store, table } = await randomTable(dir, r, 2);
    const files: string[] = [];
    for await (const o of store.list(''))
      if (o.key.endsWith('.parquet') && o.key.includes('bucket-')) files.push(o.key);
    expect(files.length).toBeGreaterThan(2);
    await unlink(join(dir, r.pick(files)));
    // Act
    await configureDecodePool({ threads: 0 });
    const inline = await table.read().catch((e: unknown) => e as Error);
    await configureDecodePool({ threads: 2, minBytes: 0 });
    const { result: pooled, ranges } = await countingRanges(() => table.read());
    // Assess: the same error class and message (the calling thread's store threw it), never rows.
    expect(inline, `seed ${seed}`).toBeInstanceOf(Error);
    expect(pooled, `seed ${seed}`).toBeInstanceOf(inline.constructor as new () => Error);
    expect((pooled as Error).message, `seed ${seed}`).toBe((inline as Error).message);
    expect(ranges, `seed ${seed}`).toBeGreaterThan(0);
    expect(openFilesUnder(dir), `seed ${seed}`).toEqual([]);
  });
});
