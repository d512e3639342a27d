/**
 * The merged read with its row groups decoded on the decode pool's workers returns exactly what the
 * inline decode returns: random upserts and deletes over several commits, keys of several types,
 * the key-first merge (deduplicate, with and without sequence.field) and the whole-row merge
 * (partial-update).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import * as arrow from 'apache-arrow';
import { afterAll, describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { configureDecodePool, decodePool } from '../../lib/format/decode-pool.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { RowKind, type Row } from '../../lib/schema/types.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { mergePool } from '../../lib/table/merge-pool.js';
import { rng, testSeed, type Rng } from '../helpers/random.js';

const LAYOUTS: { name: string; schema: string; keys: string[]; key(r: Rng): Row; options?: Record<string, string> }[] =
  [
    {
      name: 'BIGINT key',
      schema: 'k BIGINT NOT NULL, v STRING, n INT',
      keys: ['k'],
      key: (r) => ({ k: BigInt(r.int(-300, 300)) * 4_000_000_007n }),
    },
    {
      name: 'INT key, sequence.field',
      schema: 'k INT NOT NULL, v STRING, n INT',
      keys: ['k'],
      key: (r) => ({ k: r.int(-300, 300) }),
      options: { 'sequence.field': 'n' },
    },
    {
      name: '(STRING, DATE) key',
      schema: 'ks STRING NOT NULL, kd DATE NOT NULL, v STRING, n INT',
      keys: ['ks', 'kd'],
      key: (r) => ({
        ks: r.pick(['', 'a', 'long-common-prefix-1', 'long-common-prefix-2', '\u{1F600}']),
        kd: r.int(0, 60),
      }),
    },
    {
      name: 'DECIMAL key, partial-update',
      schema: 'k DECIMAL(10,3) NOT NULL, v STRING, n INT',
      keys: ['k'],
      key: (r) => ({ k: (r.int(-300, 300) / 8).toFixed(3) }),
      options: { 'merge-engine': 'partial-update' },
    },
  ];

afterAll(async () => {
  await mergePool().close();
  await configureDecodePool({ restart: true });
});

describe('merged read on the decode pool', () => {
  it('returns what the inline decode returns, for random commits of upserts and deletes over keys of several types', async () => {
    const seed = testSeed('read-decode-pool');
    const r = rng(seed);
    for (const layout of LAYOUTS) {
      // Prepare: 5 commits of random upserts and deletes, one file per bucket and commit.
      const catalog = new FolderCatalog(new MemoryStore());
      const table = await catalog.createTable('db.t', {
        fields: parseSchemaText(layout.schema),
        primaryKeys: layout.keys,
        options: { bucket: '2', 'write-only': 'true', ...layout.options },
      });
      for (let c = 0; c < 5; c++) {
        const rows: Row[] = [],
          kinds: number[] = [];
        for (let i = r.int(1, 400); i > 0; i--) {
          rows.push({ ...layout.key(r), v: r.chance(0.2) ? null : `c${c}-${i}`, n: r.int(0, 5) });
          kinds.push(
            layout.options?.['merge-engine'] === undefined && r.chance(0.15) ? RowKind.DELETE : RowKind.INSERT,
          );
        }
        await table.write(rows, { kinds });
      }
      // Act: inline, then every row group on two workers.
      await configureDecodePool({ threads: 0 });
      const inline = await table.read();
      await configureDecodePool({ threads: 2, minBytes: 0 });
      const pooled = await table.read();
      // Assess: the same Arrow bytes.
      const what = `${layout.name} (seed ${seed})`;
      expect(inline.numRows, what).toBeGreaterThan(0);
      expect(
        Buffer.from(arrow.tableToIPC(pooled, 'stream')).equals(Buffer.from(arrow.tableToIPC(inline, 'stream'))),
        what,
      ).toBe(true);
    }
    // Two buckets: each a section, decoded and merged on a merge pool worker.
    expect(decodePool().started + mergePool().started).toBeGreaterThan(0);
  });

  it('a process that read on the workers exits by itself; one whose worker dies fails loudly', () => {
    // Prepare: a script that writes two commits to a folder warehouse and reads them merged, every
    // row group on two workers. A worker left referenced would keep it alive until the backstop.
    const dir = mkdtempSync(join(tmpdir(), 'varve-decode-pool-'));
    const lib = (p: string) => JSON.stringify(pathToFileURL(join(__dirname, '../../lib', p)).href);
    const script = join(dir, 'read.mts');
    writeFileSync(
      script,
      [
        `const { FolderCatalog } = await import(${lib('catalog/folder-catalog.ts')});`,
        `const { LocalStore } = await import(${lib('store/local-store.ts')});`,
        `const { parseSchemaText } = await import(${lib('schema/parse.ts')});`,
        `const { configureDecodePool, decodePool } = await import(${lib('format/decode-pool.ts')});`,
        `const { mergePool } = await import(${lib('table/merge-pool.ts')});`,
        `const table = await new FolderCatalog(new LocalStore(process.env.WAREHOUSE)).createTable('db.t', { fields: parseSchemaText('id BIGINT, v STRING'), primaryKeys: ['id'], options: { bucket: '2' } });`,
        `for (let c = 0; c < 2; c++) await table.write(Array.from({ length: 500 }, (_, i) => ({ id: BigInt(i * (c + 1)), v: 'v' + c })));`,
        `await configureDecodePool({ threads: 2, minBytes: 0 });`,
        `const t = await table.read();`,
        `console.log('rows', t.numRows, 'workers', decodePool().started + mergePool().started);`,
      ].join('\n'),
    );
    const run = (env: Record<string, string>) => {
      const r = spawnSync(process.execPath, ['--import', 'tsx', script], {
        encoding: 'utf8',
        cwd: join(__dirname, '../..'),
        env: { ...process.env, ...env },
        timeout: 600_000,
      });
      return { code: r.status ?? -1, out: r.stdout, err: r.stderr };
    };
    // Act
    const ok = run({ WAREHOUSE: join(dir, 'a') });
    const crashed = run({ WAREHOUSE: join(dir, 'b'), VARVE_TEST_DECODE_WORKER_FAULT: 'exit' });
    // Assess: 750 distinct keys (0..499 and the even ones up to 998).
    expect(ok.code, ok.err).toBe(0);
    expect(ok.out).toMatch(/^rows 750 workers [12]$/m);
    expect(crashed.code).not.toBe(0);
    expect(crashed.err).toMatch(/DecoderWorkerError.*Parquet decoder thread exited with code 70/s);
  });
});
