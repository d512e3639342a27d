/**
 * A warm container's opened table after another process dropped the table and created it again
 * at the same location (lib/aws/tables.ts): inside the minute a container keeps its table, input
 * written for the new table (commit messages name its UUID) makes it open the table again; after
 * the minute, the table opened again gets caches of its own (snapshot manager, manifest cache),
 * never the dropped table's. Either way its next commit is the new table's next snapshot, holding
 * the new table's rows. Randomized (seed printed): histories of both tables, bucket counts, when.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { openCatalog } from '../../lib/catalog/open-catalog.js';
import { tableToRows } from '../../lib/format/columns.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import type { Table } from '../../lib/table/table.js';
import { rng, testSeed, type Rng } from '../helpers/random.js';

const MINUTE = 60_000;
const NOW = Date.UTC(2026, 11, 7, 12);
const TRIALS = process.env.VARVE_STRESS === '1' ? 24 : 8;

afterEach(() => {
  vi.useRealTimers();
});

/** Commits `n` writes of random keys from `from` on, each v = `tag`; returns the rows written last per key. */
async function writes(r: Rng, table: Table, n: number, tag: string, rows: Map<bigint, string>): Promise<void> {
  for (let i = 0; i < n; i++) {
    const keys = [...new Set(Array.from({ length: r.int(1, 8) }, () => BigInt(r.int(1, 40))))];
    await table.write(keys.map((id) => ({ id, v: `${tag}-${i}` })) as never);
    for (const id of keys) rows.set(id, `${tag}-${i}`);
  }
}

async function rowsOf(table: Table): Promise<Map<bigint, string>> {
  const rows = tableToRows(await table.read(), table.schema.fields);
  return new Map(rows.map((row) => [row.id as bigint, row.v as string]));
}

describe("a warm container's table after the table was dropped and created again", () => {
  it("commits the new table's next snapshot, with the new table's rows, inside and after the minute", async () => {
    const seed = testSeed('warm-table-identity');
    const r = rng(seed);
    vi.useFakeTimers({ toFake: ['Date'] });
    for (let trial = 0; trial < TRIALS; trial++) {
      // Prepare: a container that opened and wrote the table; another process drops it, creates
      // it again (maybe with another bucket count) and writes to it.
      vi.setSystemTime(NOW);
      const warehouse = join(mkdtempSync(join(tmpdir(), 'varve-warm-identity-')), 'wh');
      const other = openCatalog(warehouse);
      const create = () =>
        other.createTable('db.t', {
          fields: parseSchemaText('id BIGINT NOT NULL, v STRING'),
          primaryKeys: ['id'],
          options: { bucket: String(r.int(1, 3)), 'write-only': 'true', 'num-sorted-run.stop-trigger': '1000' },
        });
      await create();
      vi.resetModules();
      const tables = await import('../../lib/aws/tables.js');
      const env = { VARVE_WAREHOUSE: warehouse, VARVE_TABLE: 'db.t' };
      const warm = await tables.openTable(env, 'commit');
      await writes(r, warm, r.int(1, 5), 'old', new Map());
      await other.dropTable('db.t');
      const recreated = await create();
      const expected = new Map<bigint, string>();
      const before = r.int(0, 6);
      await writes(r, recreated, before, 'new', expected);
      const inside = r.chance(0.5);
      vi.setSystemTime(NOW + (inside ? r.int(0, MINUTE - 1) : MINUTE + r.int(0, MINUTE)));

      // Act: the container's next invocation, inside the minute with input for the new table.
      const uuids = inside ? new Set([recreated.schema.tableUuid!]) : undefined;
      const table = await tables.openTable(env, 'commit', undefined, undefined, uuids);
      await writes(r, table, 1, 'next', expected);

      // Assess
      const where = `seed ${seed}, trial ${trial}: ${before} snapshots in the new table, ${inside ? 'inside' : 'after'} the minute`;
      expect(table.schema.tableUuid, where).toBe(recreated.schema.tableUuid);
      expect(await recreated.snapshots.listIds(), where).toEqual(Array.from({ length: before + 1 }, (_, i) => i + 1));
      expect(await rowsOf(await recreated.latest()), where).toEqual(expected);
    }
  });

  it('keeps its table, without a request, while the input names its UUID or none', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(NOW);
    const warehouse = join(mkdtempSync(join(tmpdir(), 'varve-warm-identity-')), 'wh');
    const created = await openCatalog(warehouse).createTable('db.t', {
      fields: parseSchemaText('id BIGINT NOT NULL, v STRING'),
      primaryKeys: ['id'],
    });
    vi.resetModules();
    const tables = await import('../../lib/aws/tables.js');
    const env = { VARVE_WAREHOUSE: warehouse, VARVE_TABLE: 'db.t' };
    const first = await tables.openTable(env, 'commit');
    vi.setSystemTime(NOW + MINUTE - 1);
    expect(await tables.openTable(env, 'commit', undefined, undefined, new Set([created.schema.tableUuid!]))).toBe(
      first,
    );
    expect(await tables.openTable(env, 'commit', undefined, undefined, new Set())).toBe(first);
  });
});
