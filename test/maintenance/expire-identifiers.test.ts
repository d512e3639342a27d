/**
 * Lifetime of commit identifier indexes: expiry deletes an index only once the snapshot holding
 * its commit has expired AND it is older than commit.identifier-retention; a retry inside that
 * lifetime is deduplicated, one after it commits again (as documented).
 */
import { describe, expect, it } from 'vitest';
import { expireSnapshots } from '../../lib/maintenance/expire-snapshots.js';
import { removeOrphanFiles } from '../../lib/maintenance/remove-orphans.js';
import { identifierIndexKey } from '../../lib/snapshot/commit-identifier.js';
import { fromUtf8, listAll, utf8 } from '../../lib/store/object-store.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { BeforeDeleteStore } from '../helpers/before-delete-store.js';
import type { Table } from '../../lib/table/table.js';
import { newTable, rowsAt, upsert } from './expiry-fixtures.js';

const DAY = 86_400_000;

async function indexes(table: Table): Promise<number> {
  return (await listAll(table.store, `${table.path}/commit/identifier-`)).length;
}

/** A table whose first commit carries identifier `retry-42`, followed by `more` plain commits. */
async function identified(more: number): Promise<Table> {
  const table = await newTable({}, new MemoryStore());
  await table.write([{ id: 1, v: 'x' }], { commitIdentifier: 'retry-42' });
  for (let i = 0; i < more; i++) await upsert(table, [100 + i], `v${i}`);
  return table;
}

const expireAll = (table: Table, now: number) =>
  expireSnapshots(table, { now, retainMin: 1, retainMax: 1, olderThanMs: 0 });

describe('commit identifier indexes', () => {
  it('are kept while their snapshot exists, however old', async () => {
    const table = await identified(3);

    const r = await expireSnapshots(table, { now: Date.now() + 30 * DAY, retainMin: 10 });

    expect(r.expiredIdentifiers).toBe(0);
    expect(await indexes(table)).toBe(1);
    // The retry is deduplicated: nothing committed twice.
    const again = await table.write([{ id: 1, v: 'x' }], { commitIdentifier: 'retry-42' });
    expect(again.alreadyCommitted).toBe(true);
  });

  it('are kept inside the retention after their snapshot expired, so a retry is still deduplicated', async () => {
    const table = await identified(3);

    const r = await expireAll(table, Date.now() + 6 * DAY);

    expect(r.expired).toContain(1);
    expect(r.expiredIdentifiers).toBe(0);
    expect(await indexes(table)).toBe(1);
    const before = await table.snapshots.latestId();
    const again = await table.write([{ id: 1, v: 'y' }], { commitIdentifier: 'retry-42' });
    expect(again.alreadyCommitted).toBe(true);
    expect(await table.snapshots.latestId()).toBe(before);
  });

  it('are deleted once their snapshot expired and the retention passed; a retry after that commits again', async () => {
    const table = await identified(3);
    await table.write([{ id: 2, v: 'z' }], { commitIdentifier: 'recent' });

    const r = await expireAll(table, Date.now() + 8 * DAY);

    // retry-42's snapshot (1) expired; `recent` is in the snapshot expiry kept (the latest).
    expect(r.expiredIdentifiers).toBe(1);
    expect(await table.store.head(identifierIndexKey(table.path, 'retry-42'))).toBeUndefined();
    expect(await table.store.head(identifierIndexKey(table.path, 'recent'))).toBeDefined();
    const again = await table.write([{ id: 1, v: 'y' }], { commitIdentifier: 'retry-42' });
    expect(again.alreadyCommitted).toBe(false);
    expect(await rowsAt(table)).toContain('1=y');
  });

  it('commit.identifier-retention sets the lifetime', async () => {
    const table = await newTable({ 'commit.identifier-retention': '1 h' }, new MemoryStore());
    await table.write([{ id: 1, v: 'x' }], { commitIdentifier: 'a' });
    for (let i = 0; i < 2; i++) await upsert(table, [100 + i], `v${i}`);

    expect((await expireAll(table, Date.now() + 30 * 60_000)).expiredIdentifiers).toBe(0);
    expect((await expireAll(table, Date.now() + 2 * 3_600_000)).expiredIdentifiers).toBe(1);
    expect(await indexes(table)).toBe(0);
  });

  it('are never deleted by orphan cleanup, however old', async () => {
    const table = await identified(3);
    await expireAll(table, Date.now() + 6 * DAY);

    await removeOrphanFiles(table, { olderThanMs: 1, now: Date.now() + 60 * DAY });

    expect(await indexes(table)).toBe(1);
    expect((await table.write([{ id: 1, v: 'y' }], { commitIdentifier: 'retry-42' })).alreadyCommitted).toBe(true);
  });

  it('an index re-written after expiry read it is never deleted (conditional delete)', async () => {
    // Prepare: retry-42's index is past its lifetime; a retry re-writes it just before expiry deletes
    // (the store rewrites the index at the delete call, after every check expiry makes before it).
    const store = new BeforeDeleteStore();
    const table = await newTable({}, store);
    await table.write([{ id: 1, v: 'x' }], { commitIdentifier: 'retry-42' });
    for (let i = 0; i < 3; i++) await upsert(table, [100 + i], `v${i}`);
    const key = identifierIndexKey(table.path, 'retry-42');
    const rewritten = JSON.stringify({
      ...JSON.parse(fromUtf8((await store.get(key)).body)),
      updated: Date.now() + 8 * DAY,
    });
    store.beforeDelete(
      (k) => k === key,
      async () => void (await store.put(key, utf8(rewritten))),
    );
    // Act
    const r = await expireAll(table, Date.now() + 8 * DAY);
    // Assess: the re-written index is still there, unchanged.
    expect(store.fired).toBe(1);
    expect(r.expiredIdentifiers).toBe(0);
    expect(fromUtf8((await store.get(key)).body)).toBe(rewritten);
  });
});
