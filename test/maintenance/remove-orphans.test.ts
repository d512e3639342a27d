/**
 * Orphan cleanup: what a crashed commit left is removed once older than the window, a dry run
 * deletes nothing, referenced files and the files of tags, live consumers and pending expiry
 * journals are kept, unknown files are never touched, and unreadable metadata aborts the run.
 */
import { describe, expect, it } from 'vitest';
import { CorruptMetadataError } from '../../lib/errors.js';
import { expireSnapshots } from '../../lib/maintenance/expire-snapshots.js';
import { removeOrphanFiles } from '../../lib/maintenance/remove-orphans.js';
import { readManifestList } from '../../lib/manifest/manifest-list.js';
import { manifestKey } from '../../lib/manifest/table-paths.js';
import { createTag } from '../../lib/snapshot/tags.js';
import { StoreCrashedError, type MemoryStore } from '../../lib/store/memory-store.js';
import { utf8 } from '../../lib/store/object-store.js';
import type { Table } from '../../lib/table/table.js';
import { addConsumer, dataKeys, eightSnapshots, expectVerified, newTable, rowsAt, upsert } from './expiry-fixtures.js';

const DAY = 86_400_000;

/** Runs a commit that dies just before creating its snapshot file; returns the keys it left behind. */
async function crashedCommit(table: Table): Promise<string[]> {
  const store = table.store as MemoryStore;
  const before = new Set(store.keys());
  store.crashAt({ op: 'putIfAbsent', keyIncludes: '/snapshot/snapshot-' });
  await expect(upsert(table, [100, 101], 'lost')).rejects.toThrow(StoreCrashedError);
  store.restart();
  return store.keys().filter((k) => !before.has(k));
}

describe('removeOrphanFiles', () => {
  it('removes what a crashed commit left only once it is older than the window; a dry run deletes nothing', async () => {
    // Prepare
    const table = await newTable();
    const history = await eightSnapshots(table);
    const store = table.store as MemoryStore;
    const left = await crashedCommit(table);
    expect(left.some((k) => k.includes('/bucket-'))).toBe(true);
    expect(left.some((k) => k.includes('/manifest/manifest-list-'))).toBe(true);
    expect(left.some((k) => /\/manifest\/manifest-(?!list)/.test(k))).toBe(true);
    // Act
    const young = await removeOrphanFiles(table);
    const dry = await removeOrphanFiles(table, { dryRun: true, now: Date.now() + 2 * DAY });
    const keysAfterDryRun = store.keys();
    const real = await removeOrphanFiles(table, { now: Date.now() + 2 * DAY });
    // Assess
    expect(young.orphans).toEqual([]);
    expect(young.tooRecent).toBe(left.length);
    expect(dry.orphans.map((o) => o.key).sort()).toEqual([...left].sort());
    expect(dry.deleted).toBe(0);
    expect(keysAfterDryRun).toEqual(expect.arrayContaining(left));
    expect(real.deleted).toBe(left.length);
    expect(store.keys().filter((k) => left.includes(k))).toEqual([]);
    expect(await rowsAt(table)).toEqual(history.get(8));
    await expectVerified(table);
    for (let id = 1; id <= 8; id++) expect(await rowsAt(table, { snapshotId: id })).toEqual(history.get(id));
  });

  it('keeps the files of tags, of live consumers and of pending expiry; removes those of a consumer that is gone', async () => {
    // Prepare
    const table = await newTable();
    const history = await eightSnapshots(table);
    const store = table.store as MemoryStore;
    await createTag(table.store, table.path, 'two', 2);
    await addConsumer(table, 'reader', 8);
    // A live consumer's by-reference split list names a file no snapshot references (any more).
    const orphanData = `${table.path}/bucket-0/data-split-only.parquet`;
    await store.put(orphanData, utf8('not really parquet'));
    await store.put(
      `${table.path}/consumer/consumer-reader@splits/8/bucket-0.json`,
      utf8(JSON.stringify([{ fileName: 'data-split-only.parquet' }])),
    );
    await store.put(`${table.path}/consumer/consumer-reader@progress/bucket-0`, utf8('{}'));
    await store.put(`${table.path}/consumer/consumer-gone@progress/bucket-1`, utf8('{}'));
    const now = Date.now() + 2 * DAY;
    // Snapshots 1..7 expire now, their files only after an hour of grace.
    await expireSnapshots(table, { retainMin: 1, olderThanMs: 0, now, graceMs: 3_600_000, expireConsumers: false });
    const pendingData = dataKeys(store, table).length;
    // Act
    const r = await removeOrphanFiles(table, { olderThanMs: 0, now });
    // Assess
    expect(r.orphans.map((o) => [o.kind, o.key])).toEqual([
      ['consumer', `${table.path}/consumer/consumer-gone@progress/bucket-1`],
    ]);
    expect(store.keys()).toContain(orphanData);
    expect(store.keys()).toContain(`${table.path}/consumer/consumer-reader@progress/bucket-0`);
    expect(dataKeys(store, table).length).toBe(pendingData);
    expect(await rowsAt(table, { tag: 'two' })).toEqual(history.get(2));
    await expectVerified(table);
  });

  it('never touches schema, snapshot, hint, tag or unknown files, however old', async () => {
    // Prepare
    const table = await newTable();
    await eightSnapshots(table);
    await createTag(table.store, table.path, 't', 8);
    const store = table.store as MemoryStore;
    const extra = [
      `${table.path}/README`,
      `${table.path}/snapshot/snapshot-8.tmp`,
      `${table.path}/manifest/notes.txt`,
      `${table.path}/index/x`,
    ];
    for (const k of extra) await store.put(k, utf8('x'));
    for (const k of store.keys()) store.setLastModified(k, 0);
    const before = store.keys();
    // Act
    const r = await removeOrphanFiles(table, { olderThanMs: 0 });
    // Assess
    expect(r.orphans).toEqual([]);
    expect(store.keys()).toEqual(before);
  });

  it('deletes nothing when metadata a snapshot references cannot be read', async () => {
    // Prepare
    const table = await newTable();
    await eightSnapshots(table);
    const store = table.store as MemoryStore;
    const left = await crashedCommit(table);
    const latest = (await table.snapshots.latest())!;
    const manifest = (await readManifestList(store, table.path, latest.baseManifestList))[0].fileName;
    await store.delete(manifestKey(table.path, manifest));
    // Act
    const run = removeOrphanFiles(table, { olderThanMs: 0, now: Date.now() + DAY });
    // Assess
    await expect(run).rejects.toThrow(CorruptMetadataError);
    await expect(removeOrphanFiles(table, { olderThanMs: 0, now: Date.now() + DAY })).rejects.toThrow(
      /deleted nothing: snapshot \d+ cannot be read/,
    );
    expect(store.keys()).toEqual(expect.arrayContaining(left));
  });
});
