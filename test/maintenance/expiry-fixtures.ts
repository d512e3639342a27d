/** Small factories shared by the expiry, consumer expiration and orphan cleanup tests. */
import { expect } from 'vitest';
import { tableToRows } from '../../lib/format/columns.js';
import { compactTable } from '../../lib/maintenance/compact.js';
import { verifyTable } from '../../lib/maintenance/verify-table.js';
import { readDeltaEntries } from '../../lib/manifest/scan.js';
import { RowKind, type Row, type RowKindByte } from '../../lib/schema/types.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import type { ObjectStore } from '../../lib/store/object-store.js';
import { writeConsumer } from '../../lib/snapshot/consumer.js';
import { dataFileKey } from '../../lib/table/paths.js';
import { Table } from '../../lib/table/table.js';
import { testTable } from '../helpers/tables.js';

/** A 2-bucket primary-key table `db.t (id INT, v STRING)` on a memory store; compaction only when a test asks. */
export async function newTable(
  options: Record<string, string> = {},
  store: ObjectStore = new MemoryStore(),
): Promise<Table> {
  return testTable({
    schema: 'id INT NOT NULL, v STRING',
    primaryKeys: ['id'],
    options: { bucket: '2', 'write-only': 'true', 'num-sorted-run.stop-trigger': '1000', ...options },
    store,
  });
}

/** The table's rows at a snapshot (or tag), sorted by id, as plain strings for comparison. */
export async function rowsAt(table: Table, spec: { snapshotId?: number; tag?: string } = {}): Promise<string[]> {
  const t = await table.read(spec);
  return tableToRows(t, table.schema.fields)
    .map((r) => `${String(r.id)}=${String(r.v)}`)
    .sort();
}

/** Upserts `ids` with value `v`, deletes `deletes`, as one commit; returns the snapshot id. */
export async function upsert(table: Table, ids: number[], v: string, deletes: number[] = []): Promise<number> {
  const rows: Row[] = [...ids.map((id) => ({ id, v })), ...deletes.map((id) => ({ id, v: null }))];
  const kinds: RowKindByte[] = [...ids.map(() => RowKind.INSERT), ...deletes.map(() => RowKind.DELETE)];
  const r = await table.write(rows, { kinds });
  return r.snapshot!.id;
}

/**
 * Full compaction of each bucket in a run of its own (COMPACT snapshots whose deltas DELETE
 * files): one snapshot per bucket, so the expiry tests have two COMPACT snapshots to work on.
 */
export async function compactAll(table: Table): Promise<number[]> {
  const out: number[] = [];
  for (let bucket = 0; bucket < Number(table.schema.options.bucket ?? 2); bucket++)
    out.push(...(await compactTable(table, { full: true, bucket })).snapshots);
  return out;
}

/**
 * Snapshots 1..8 exactly: APPENDs 1–3, full compactions 4–5 (one per bucket), APPENDs 6–8.
 * Returns the rows each snapshot held when it was the latest.
 */
export async function eightSnapshots(table: Table): Promise<Map<number, string[]>> {
  const history = new Map<number, string[]>();
  const record = async (id: number) => history.set(id, await rowsAt(table, { snapshotId: id }));
  await record(await upsert(table, [1, 2, 3, 4], 'a'));
  await record(await upsert(table, [2, 5, 6], 'b'));
  await record(await upsert(table, [7], 'c', [1]));
  const compacted = await compactAll(table);
  expect(compacted).toEqual([4, 5]);
  for (const id of compacted) await record(id);
  await record(await upsert(table, [1, 8], 'd'));
  await record(await upsert(table, [3], 'e', [5]));
  await record(await upsert(table, [9, 10], 'f'));
  expect(await table.snapshots.latestId()).toBe(8);
  return history;
}

/** Registers consumer `id` at `nextSnapshot`, last moved at `lastUpdated`. */
export async function addConsumer(
  table: Table,
  id: string,
  nextSnapshot: number,
  lastUpdated = Date.now(),
): Promise<void> {
  await writeConsumer(table.store, table.path, id, {
    nextSnapshot,
    lastUpdated,
    plannedSnapshot: nextSnapshot - 1,
    buckets: {},
  });
}

/** A copy of a memory store (objects and their modification times), for replaying one state many times. */
export async function cloneStore(store: MemoryStore): Promise<MemoryStore> {
  const copy = new MemoryStore();
  for (const key of store.keys()) {
    const o = await store.get(key);
    await copy.put(key, o.body);
    copy.setLastModified(key, o.lastModified);
  }
  return copy;
}

/** The same table over another store. */
export function reopen(table: Table, store: MemoryStore): Table {
  return new Table(store, table.name, table.path, table.schema);
}

/** Asserts verifyTable finds nothing wrong. */
export async function expectVerified(table: Table): Promise<void> {
  const v = await verifyTable(table);
  expect(v.problems).toEqual([]);
  expect(v.ok).toBe(true);
}

/** Asserts every file the delta of snapshot `id` ADDs exists. */
export async function expectDeltaFilesExist(table: Table, id: number): Promise<void> {
  const snapshot = await table.snapshots.read(id);
  for (const e of await readDeltaEntries(table.store, table.path, snapshot)) {
    if (e.kind !== 'ADD') continue;
    expect(
      await table.store.head(dataFileKey(table.path, e.partition, e.bucket, e.file.fileName)),
      `delta file of snapshot ${id}`,
    ).toBeDefined();
  }
}

/** Keys of the table's data files (`bucket-<n>/…`). */
export function dataKeys(store: MemoryStore, table: Table): string[] {
  return store.keys().filter((k) => k.startsWith(`${table.path}/bucket-`));
}
