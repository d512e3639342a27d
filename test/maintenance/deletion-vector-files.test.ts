/**
 * Deletion-vector files are table files (DV-CONTRACT.md): expiry deletes the indexes and Puffin
 * files no kept snapshot or tag references and keeps the rest (every snapshot left reads the
 * same as before, merge-free and merged); orphan cleanup keeps referenced ones and deletes
 * unreferenced ones; verify checks they exist (--quick) and reads every vector back (CRC), naming
 * a damaged one; `sys files` lists them.
 */
import { describe, expect, it } from 'vitest';
import { pastFloor } from '../helpers/expiry-clock.js';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { tableToRows } from '../../lib/format/columns.js';
import { readDeletionIndex } from '../../lib/manifest/deletion-index.js';
import { compactTable } from '../../lib/maintenance/compact.js';
import { expireSnapshots } from '../../lib/maintenance/expire-snapshots.js';
import { removeOrphanFiles } from '../../lib/maintenance/remove-orphans.js';
import { verifyTable } from '../../lib/maintenance/verify-table.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { RowKind } from '../../lib/schema/types.js';
import { listAll } from '../../lib/store/object-store.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { readSystemTable } from '../../lib/table/system-tables.js';
import type { Table } from '../../lib/table/table.js';
import { rng, testSeed } from '../helpers/random.js';

async function dvTable(): Promise<Table> {
  const catalog = new FolderCatalog(new MemoryStore());
  return catalog.createTable('db.t', {
    fields: parseSchemaText('id INT NOT NULL, v BIGINT'),
    primaryKeys: ['id'],
    // write-only, so the runs pile up between the churn's random compactions: 14 commits may all
    // land without one, past the default stop trigger (8 runs) that stalls a write-only writer.
    options: {
      bucket: '2',
      'deletion-vectors.enabled': 'true',
      'write-only': 'true',
      'num-sorted-run.stop-trigger': '64',
    },
  });
}

/** Random upserts and deletes, and a compaction now and then. */
async function churn(table: Table, seed: number, commits: number): Promise<void> {
  const r = rng(seed);
  for (let c = 0; c < commits; c++) {
    const ids = [...new Set(Array.from({ length: r.int(1, 20) }, () => r.int(1, 40)))];
    await table.write(
      ids.map((id) => ({ id, v: BigInt(r.int(0, 99)) })),
      { kinds: ids.map(() => (r.chance(0.15) ? RowKind.DELETE : RowKind.INSERT)) },
    );
    if (r.chance(0.2)) await compactTable(table, { full: r.chance(0.5) });
  }
}

const rows = (table: Table, t: Parameters<typeof tableToRows>[0]) =>
  tableToRows(t, table.schema.fields)
    .map((x) => `${x.id}=${x.v}`)
    .sort();

async function dvKeys(table: Table): Promise<string[]> {
  return (await listAll(table.store, `${table.path}/`))
    .map((o) => o.key)
    .filter((k) => /\/dv-[^/]+\.puffin$|\/manifest\/deletion-index-/.test(k))
    .sort();
}

/** The DV keys the snapshots present reference. */
async function referencedDvKeys(table: Table): Promise<string[]> {
  const out = new Set<string>();
  for (const id of await table.snapshots.listIds()) {
    const s = (await table.snapshots.tryRead(id))!;
    if (s.deletionVectors === undefined) continue;
    out.add(`${table.path}/manifest/${s.deletionVectors}`);
    for (const ref of await readDeletionIndex(table.store, table.path, s)) out.add(`${table.path}/${ref.dvFile}`);
  }
  return [...out].sort();
}

describe('deletion-vector files in expiry, orphan cleanup, verify', () => {
  it('expiry deletes exactly the vectors no kept snapshot references; every kept snapshot reads as before', async () => {
    const seed = testSeed('deletion-vector-files/expiry');
    const table = await dvTable();
    await churn(table, seed, 14);
    const latest = (await table.snapshots.latest())!;
    const before = new Map<number, string[]>();
    for (let id = latest.id - 3; id <= latest.id; id++)
      before.set(id, rows(table, await table.read({ snapshotId: id })));
    expect((await dvKeys(table)).length, `seed ${seed}`).toBeGreaterThan(0);
    await expireSnapshots(table, { retainMin: 4, retainMax: 4, olderThanMs: 0, now: pastFloor() });
    expect(await table.snapshots.listIds()).toEqual([latest.id - 3, latest.id - 2, latest.id - 1, latest.id]);
    // Nothing leaked, nothing needed lost.
    expect(await dvKeys(table), `seed ${seed}`).toEqual(await referencedDvKeys(table));
    for (const [id, expected] of before) {
      expect(rows(table, await table.read({ snapshotId: id })), `snapshot ${id}, seed ${seed}`).toEqual(expected);
      expect(
        rows(table, await table.read({ snapshotId: id, ignoreDeletionVectors: true })),
        `snapshot ${id} merged, seed ${seed}`,
      ).toEqual(expected);
    }
    expect((await verifyTable(table)).problems).toEqual([]);
  });

  it('orphan cleanup keeps referenced vectors and deletes unreferenced ones', async () => {
    const seed = testSeed('deletion-vector-files/orphans');
    const table = await dvTable();
    await churn(table, seed, 8);
    const expected = rows(table, await table.read());
    const stray = [
      `${table.path}/bucket-0/dv-00000000-0000-0000-0000-000000000000.puffin`,
      `${table.path}/manifest/deletion-index-00000000-0000-0000-0000-000000000000`,
    ];
    for (const k of stray) await table.store.put(k, new Uint8Array([1, 2, 3]));
    const result = await removeOrphanFiles(table, { olderThanMs: 0, now: Date.now() + 1000 });
    const deleted = result.orphans.map((o) => o.key);
    for (const k of stray) expect(deleted).toContain(k);
    expect(await dvKeys(table), `seed ${seed}`).toEqual(await referencedDvKeys(table));
    expect(rows(table, await table.read()), `seed ${seed}`).toEqual(expected);
  });

  it('verify checks existence (quick) and reads every vector back, naming a damaged one', async () => {
    const seed = testSeed('deletion-vector-files/verify');
    const table = await dvTable();
    await churn(table, seed, 6);
    // Old versions superseded: at least one vector.
    await table.write([{ id: 1, v: 1n }]);
    await table.write([{ id: 1, v: 2n }]);
    const ok = await verifyTable(table);
    expect(ok.problems).toEqual([]);
    const latest = (await table.snapshots.latest())!;
    const refs = await readDeletionIndex(table.store, table.path, latest);
    const ref = refs[0];
    // sys files lists each live file's vector and how many rows it deletes.
    const files = await readSystemTable(table, 'files');
    expect(files.columns).toContain('deletion_vector_file');
    expect(files.records.reduce((n, r) => n + (r.deleted_record_count as number), 0)).toBe(
      refs.reduce((n, r) => n + r.cardinality, 0),
    );
    expect(files.records.some((r) => r.deletion_vector_file === `${table.path}/${ref.dvFile}`)).toBe(true);
    const key = `${table.path}/${ref.dvFile}`;
    const bytes = (await table.store.get(key)).body.slice();
    bytes[ref.offset + 9] ^= 0x10;
    await table.store.put(key, bytes);
    const damaged = await verifyTable(table);
    expect(damaged.problems.map((p) => p.problem).join('\n')).toMatch(
      new RegExp(`the deletion vector of ${ref.fileName} in .*dv-.*damaged: .*CRC-32`),
    );
    await expect(table.read()).rejects.toThrow(/CRC-32/);
    expect((await verifyTable(table, { quick: true })).problems).toEqual([]);
    await table.store.delete(key);
    expect((await verifyTable(table, { quick: true })).problems.map((p) => p.problem).join('\n')).toMatch(
      /deletion-vector file .*dv-.*\.puffin is missing/,
    );
  });
});
