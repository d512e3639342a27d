/**
 * Merged reads decode their row groups into regions reused from one section and read to the next
 * (PooledBatchMemory): a result never shares memory another read then writes into. Random
 * histories (upserts and deletes, winners in every run) of several tables, read inline one after
 * another and interleaved: every result equals a model of the newest version per key when read,
 * and still holds the same bytes after all the other reads. Tables in a folder (LocalStore) merge
 * their sections one after another (each into the memory the one before gave back), tables in
 * memory several at once: both are drawn.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as arrow from 'apache-arrow';
import { afterAll, describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { configureDecodePool } from '../../lib/format/decode-pool.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { RowKind, type Row } from '../../lib/schema/types.js';
import { LocalStore } from '../../lib/store/local-store.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import type { Table } from '../../lib/table/table.js';
import { rng, testSeed } from '../helpers/random.js';

const dirs: string[] = [];

afterAll(async () => {
  await configureDecodePool({ restart: true });
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A store in memory, or in a fresh folder. */
function randomStore(r: ReturnType<typeof rng>): MemoryStore | LocalStore {
  if (r.chance(0.5)) return new MemoryStore();
  const dir = mkdtempSync(join(tmpdir(), 'varve-pooled-read-'));
  dirs.push(dir);
  return new LocalStore(dir);
}

/** A table with a random history; its model is the newest row per key (absent when deleted). */
async function randomTable(
  r: ReturnType<typeof rng>,
  name: string,
): Promise<{ table: Table; model: Map<number, Row> }> {
  const table = await new FolderCatalog(randomStore(r)).createTable(`db.${name}`, {
    fields: parseSchemaText('k INT NOT NULL, v STRING, n BIGINT, f DOUBLE'),
    primaryKeys: ['k'],
    options: { bucket: String(r.int(1, 3)), 'write-only': 'true' },
  });
  const model = new Map<number, Row>();
  const keys = r.int(50, 3000);
  for (let c = 0, commits = r.int(2, 6); c < commits; c++) {
    const rows: Row[] = [];
    const kinds: number[] = [];
    const seen = new Set<number>();
    // Some commits rewrite every key: the newest run then wins whole, and the result takes its decoded columns as they are.
    const whole = c === 0 || r.chance(0.3);
    for (let i = whole ? keys : r.int(1, keys); i > 0; i--) {
      const k = whole ? i : r.int(1, keys);
      if (seen.has(k)) continue;
      seen.add(k);
      const row: Row = { k, v: r.chance(0.2) ? null : `${name}-${c}-${k}`, n: BigInt(c * 1000 + k), f: k / (c + 1) };
      const del = c > 0 && !whole && r.chance(0.1);
      rows.push(row);
      kinds.push(del ? RowKind.DELETE : RowKind.INSERT);
      if (del) model.delete(k);
      else model.set(k, row);
    }
    await table.write(rows, { kinds });
  }
  return { table, model };
}

/** The rows in key order (a read returns them bucket by bucket). */
function rowsOf(t: arrow.Table): Row[] {
  return t
    .toArray()
    .map((x) => ({ k: x.k, v: x.v, n: x.n, f: x.f }))
    .sort((a, b) => a.k - b.k);
}

describe('merged reads into pooled decode memory', () => {
  it('return the model, and keep their bytes while later reads reuse the memory (randomized)', async () => {
    const seed = testSeed('read-pooled-memory');
    const r = rng(seed);
    await configureDecodePool({ threads: 0 });
    const tables = await Promise.all([0, 1, 2].map((i) => randomTable(r, `t${i}`)));
    const kept: { what: string; result: arrow.Table; bytes: Buffer }[] = [];
    for (let round = 0; round < 12; round++) {
      // Act: one read, or several at once (their sections' decodes interleave).
      const picks = Array.from({ length: r.int(1, 3) }, () => r.int(0, tables.length - 1));
      const results = await Promise.all(picks.map((i) => tables[i].table.read()));
      // Assess: each equals its model now; its bytes are checked again after every later read.
      picks.forEach((i, j) => {
        const what = `round ${round} table t${i} (seed ${seed})`;
        const expected = [...tables[i].model.values()].sort((a, b) => (a.k as number) - (b.k as number));
        expect(rowsOf(results[j]), what).toEqual(expected);
        kept.push({ what, result: results[j], bytes: Buffer.from(arrow.tableToIPC(results[j], 'stream')) });
      });
    }
    for (const k of kept) expect(Buffer.from(arrow.tableToIPC(k.result, 'stream')).equals(k.bytes), k.what).toBe(true);
  });
});
