/**
 * The merged read with whole sections decoded and merged on the merge pool's workers returns
 * exactly what the inline merge returns: random histories (upserts, deletes, key ranges that
 * overlap or not, so buckets hold one or several sections) over keys of several types and every
 * merge engine, read whole, projected, filtered, limited and with deletes kept.
 */
import * as arrow from 'apache-arrow';
import { afterAll, describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { configureDecodePool } from '../../lib/format/decode-pool.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { RowKind, type Row } from '../../lib/schema/types.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { mergePool } from '../../lib/table/merge-pool.js';
import type { ReadOptions } from '../../lib/table/read.js';
import { rng, testSeed, type Rng } from '../helpers/random.js';

interface Layout {
  name: string;
  schema: string;
  keys: string[];
  /** A key at position `at` of the key space (0..599), in this layout's types. */
  key(at: number, r: Rng): Row;
  options?: Record<string, string>;
  deletes: boolean;
  reads: ReadOptions[];
}

const LAYOUTS: Layout[] = [
  {
    name: 'deduplicate, BIGINT key',
    schema: 'k BIGINT NOT NULL, v STRING, n INT',
    keys: ['k'],
    key: (at) => ({ k: BigInt(at - 300) * 4_000_000_007n }),
    deletes: true,
    reads: [{ columns: ['v', 'k'] }, { where: 'n >= 3' }, { keepDeletes: true }, { limit: 17 }],
  },
  {
    name: 'deduplicate, sequence.field, (STRING, DATE) key',
    schema: 'ks STRING NOT NULL, kd DATE NOT NULL, v STRING, n INT',
    keys: ['ks', 'kd'],
    key: (at) => ({
      ks: ['', 'a', 'long-common-prefix-1', 'long-common-prefix-2', '\u{1F600}'][at % 5],
      kd: Math.floor(at / 5),
    }),
    options: { 'sequence.field': 'n' },
    deletes: true,
    reads: [{ columns: ['n'] }, { keepDeletes: true }],
  },
  {
    name: 'first-row, INT key',
    schema: 'k INT NOT NULL, v STRING, n INT',
    keys: ['k'],
    key: (at) => ({ k: at - 300 }),
    options: { 'merge-engine': 'first-row' },
    deletes: false,
    reads: [{ where: 'v IS NULL' }],
  },
  {
    name: 'partial-update, DECIMAL key',
    schema: 'k DECIMAL(10,3) NOT NULL, v STRING, n INT',
    keys: ['k'],
    key: (at) => ({ k: ((at - 300) / 8).toFixed(3) }),
    options: { 'merge-engine': 'partial-update' },
    deletes: false,
    reads: [{ columns: ['k', 'n'] }],
  },
  {
    name: 'aggregation, (INT, STRING) key',
    schema: 'a INT NOT NULL, b STRING NOT NULL, v STRING, n INT',
    keys: ['a', 'b'],
    key: (at) => ({ a: at % 7, b: `b${Math.floor(at / 7)}` }),
    options: {
      'merge-engine': 'aggregation',
      'fields.n.aggregate-function': 'sum',
      'fields.v.aggregate-function': 'max',
    },
    deletes: false,
    reads: [{ where: 'n > 4' }],
  },
];

afterAll(async () => {
  await mergePool().close();
  await configureDecodePool({ restart: true });
});

/** The table's Arrow IPC stream bytes (type, layout and every value). */
function ipc(t: arrow.Table): Buffer {
  return Buffer.from(arrow.tableToIPC(t, 'stream'));
}

describe('merged read on the merge pool', () => {
  it('returns what the inline merge returns, for random histories, every engine, projections, filters and deletes', async () => {
    const seed = testSeed('read-merge-pool');
    const r = rng(seed);
    for (const layout of LAYOUTS) {
      // Prepare: 6 commits, each over a random key range (disjoint ranges make several sections per
      // bucket, overlapping ones merge), one file per bucket and commit.
      const table = await new FolderCatalog(new MemoryStore()).createTable('db.t', {
        fields: parseSchemaText(layout.schema),
        primaryKeys: layout.keys,
        options: { bucket: String(r.int(1, 3)), 'write-only': 'true', ...layout.options },
      });
      for (let c = 0; c < 6; c++) {
        const from = r.int(0, 500),
          width = r.int(20, 600 - from);
        const rows: Row[] = [],
          kinds: number[] = [];
        for (let i = r.int(1, 300); i > 0; i--) {
          rows.push({
            ...layout.key(from + r.int(0, width - 1), r),
            v: r.chance(0.2) ? null : `c${c}-${i}`,
            n: r.int(0, 5),
          });
          kinds.push(layout.deletes && r.chance(0.15) ? RowKind.DELETE : RowKind.INSERT);
        }
        await table.write(rows, { kinds });
      }
      for (const opts of [{}, ...layout.reads]) {
        // Act: inline, then every section on two workers.
        await configureDecodePool({ threads: 0 });
        const inline = await table.read(opts);
        await configureDecodePool({ threads: 2, minBytes: 0 });
        const pooled = await table.read(opts);
        // Assess: the same Arrow bytes.
        const what = `${layout.name}, read ${JSON.stringify(opts)} (seed ${seed})`;
        expect(pooled.numRows, what).toBe(inline.numRows);
        expect(ipc(pooled).equals(ipc(inline)), what).toBe(true);
      }
    }
    expect(mergePool().started).toBeGreaterThan(0);
  });

  it('a store error while a worker reads fails the read as it fails inline', async () => {
    // Prepare: two buckets of overlapping commits, then one data file removed from the store.
    const store = new MemoryStore();
    const table = await new FolderCatalog(store).createTable('db.t', {
      fields: parseSchemaText('k INT NOT NULL, v STRING'),
      primaryKeys: ['k'],
      options: { bucket: '2', 'write-only': 'true' },
    });
    for (let c = 0; c < 2; c++)
      await table.write(Array.from({ length: 200 }, (_, i) => ({ k: i * (c + 1), v: `v${c}` })));
    const files: string[] = [];
    for await (const o of store.list(''))
      if (o.key.endsWith('.parquet') && o.key.includes('bucket-')) files.push(o.key);
    expect(files.length).toBe(4);
    await store.delete(files[1]);
    // Act
    await configureDecodePool({ threads: 0 });
    const inline = await table.read().then(
      () => null,
      (e: unknown) => e as Error,
    );
    await configureDecodePool({ threads: 2, minBytes: 0 });
    const pooled = await table.read().then(
      () => null,
      (e: unknown) => e as Error,
    );
    // Assess: the same error class and message, never rows.
    expect(inline).toBeInstanceOf(Error);
    expect(pooled?.constructor).toBe(inline!.constructor);
    expect(pooled?.message).toBe(inline!.message);
  });

  it('restarting the decode pool restarts the merge threads too: they read the environment afresh', async () => {
    // Prepare: two overlapping commits (one section to merge), merged once on a worker.
    const table = await new FolderCatalog(new MemoryStore()).createTable('db.t', {
      fields: parseSchemaText('k INT NOT NULL, v STRING'),
      primaryKeys: ['k'],
      options: { bucket: '1', 'write-only': 'true' },
    });
    for (let c = 0; c < 2; c++)
      await table.write(Array.from({ length: 200 }, (_, i) => ({ k: i * (c + 1), v: `v${c}` })));
    await configureDecodePool({ threads: 1, minBytes: 0 });
    expect((await table.read()).numRows).toBe(300);
    expect(mergePool().started).toBeGreaterThan(0);
    try {
      // Act: a fault the worker reads from the environment when it starts, then a restart.
      process.env.VARVE_TEST_DECODE_WORKER_FAULT = 'throw';
      await configureDecodePool({ threads: 1, minBytes: 0, restart: true });
      // Assess: the merge thread was stopped, and the next read starts one that sees the fault.
      expect(mergePool().started).toBe(0);
      await expect(table.read()).rejects.toThrow(/injected decoder fault/);
    } finally {
      delete process.env.VARVE_TEST_DECODE_WORKER_FAULT;
      await configureDecodePool({ threads: 1, minBytes: 0, restart: true });
    }
    expect((await table.read()).numRows).toBe(300);
  });
});
