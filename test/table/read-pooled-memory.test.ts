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
import { configureDecodePool } from '../../lib/format/decode-pool.js';
import type { Row } from '../../lib/schema/types.js';
import { LocalStore } from '../../lib/store/local-store.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { rng, testSeed } from '../helpers/random.js';
import { randomHistoryTable } from '../helpers/random-history.js';

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
    const tables = await Promise.all(
      [0, 1, 2].map((i) => randomHistoryTable(r, `t${i}`, randomStore(r), { minCommits: 2 })),
    );
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
