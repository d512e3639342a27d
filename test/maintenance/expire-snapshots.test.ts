/**
 * Snapshot expiry: consumers and tags hold what they need, the EARLIEST marker moves before any
 * delete and snapshot files go before their files, the per-run limit, the grace period,
 * changelog files and changelog retention.
 */
import { describe, expect, it } from 'vitest';
import { pastFloor } from '../helpers/expiry-clock.js';
import { SnapshotNotFoundError } from '../../lib/errors.js';
import { expireSnapshots } from '../../lib/maintenance/expire-snapshots.js';
import { journalDir } from '../../lib/maintenance/expiry-journal.js';
import { removeOrphanFiles } from '../../lib/maintenance/remove-orphans.js';
import { readChangelogFiles } from '../../lib/manifest/scan.js';
import { earliestHintKey } from '../../lib/snapshot/paths.js';
import { createTag, deleteTag } from '../../lib/snapshot/tags.js';
import { fromUtf8 } from '../../lib/store/object-store.js';
import type { MemoryStore } from '../../lib/store/memory-store.js';
import {
  addConsumer,
  dataKeys,
  eightSnapshots,
  expectDeltaFilesExist,
  expectVerified,
  newTable,
  rowsAt,
} from './expiry-fixtures.js';

/** Retention that expires everything counts allow: keep 1, no age. */
const aggressive = () => ({ retainMin: 1, olderThanMs: 0, now: pastFloor() });

describe('expireSnapshots', () => {
  it('a lagging consumer at snapshot 3 holds expiry: only 1–2 go, and 3..8 stay readable with their delta files', async () => {
    // Prepare
    const held = await newTable();
    const free = await newTable();
    const history = await eightSnapshots(held);
    await eightSnapshots(free);
    await addConsumer(held, 'slow', 3);
    // Act
    const r = await expireSnapshots(held, aggressive());
    const rFree = await expireSnapshots(free, aggressive());
    // Assess
    expect(r.expired).toEqual([1, 2]);
    expect(r.heldBy).toBe('consumer');
    expect(r.heldByConsumer).toEqual({ id: 'slow', nextSnapshot: 3 });
    expect(await held.snapshots.earliestId()).toBe(3);
    expect(rFree.expired).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(await free.snapshots.listIds()).toEqual([8]);
    await expectVerified(held);
    for (let id = 3; id <= 8; id++) {
      expect(await rowsAt(held, { snapshotId: id })).toEqual(history.get(id));
      await expectDeltaFilesExist(held, id);
    }
    expect(await rowsAt(free)).toEqual(history.get(8));
    await expectVerified(free);
  });

  it('deletes the data files compaction replaced once no retained snapshot needs them', async () => {
    // Prepare
    const table = await newTable();
    await eightSnapshots(table);
    const store = table.store as MemoryStore;
    const before = dataKeys(store, table).length;
    // Act
    const r = await expireSnapshots(table, aggressive());
    // Assess: the level-0 files of snapshots 1–3 were compacted away in 4–5 and are now gone.
    expect(r.deleted.dataFiles).toBeGreaterThan(0);
    expect(dataKeys(store, table).length).toBe(before - r.deleted.dataFiles);
    expect(r.deletedFiles).toBe(
      r.deleted.dataFiles + r.deleted.changelogFiles + r.deleted.manifests + r.deleted.manifestLists,
    );
    const orphans = await removeOrphanFiles(table, { olderThanMs: 0, dryRun: true, now: Date.now() + 1000 });
    expect(orphans.orphans).toEqual([]);
  });

  it('a tag keeps its snapshot readable after expiry; once deleted, orphan cleanup reclaims its files', async () => {
    // Prepare
    const table = await newTable();
    const history = await eightSnapshots(table);
    await createTag(table.store, table.path, 'before-compaction', 2);
    // Act
    await expireSnapshots(table, aggressive());
    // Assess
    expect(await table.snapshots.listIds()).toEqual([8]);
    expect(await rowsAt(table, { tag: 'before-compaction' })).toEqual(history.get(2));
    await expectVerified(table);
    // Act: without the tag its files are unreferenced.
    await deleteTag(table.store, table.path, 'before-compaction');
    const orphans = await removeOrphanFiles(table, { olderThanMs: 0, now: Date.now() + 1000 });
    // Assess
    expect(orphans.deleted).toBeGreaterThan(0);
    expect(await rowsAt(table)).toEqual(history.get(8));
    await expectVerified(table);
  });

  it('moves EARLIEST before deleting anything, and deletes snapshot files (oldest first) before their files', async () => {
    // Prepare
    const table = await newTable();
    await eightSnapshots(table);
    const store = table.store as MemoryStore;
    store.resetCallLog();
    // Act
    await expireSnapshots(table, aggressive());
    // Assess
    const log = store.callLog;
    const markerWrite = log.findIndex((c) => c.key === earliestHintKey(table.path) && c.op.startsWith('put'));
    const deletes = log.map((c, i) => ({ ...c, i })).filter((c) => c.op === 'delete');
    const snapshotDeletes = deletes.filter((c) => c.key.includes('/snapshot/snapshot-'));
    const fileDeletes = deletes.filter((c) => !c.key.includes('/snapshot/') && !c.key.includes('/expiry/'));
    expect(markerWrite).toBeGreaterThanOrEqual(0);
    expect(markerWrite).toBeLessThan(deletes[0].i);
    expect(snapshotDeletes.map((c) => Number(c.key.split('-').pop()))).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(snapshotDeletes[snapshotDeletes.length - 1].i).toBeLessThan(fileDeletes[0].i);
    expect(fromUtf8((await store.get(earliestHintKey(table.path))).body)).toBe('8');
    expect(store.keys().some((k) => k.startsWith(journalDir(table.path)))).toBe(false);
  });

  it('a reader asking for an expired snapshot fails with the available range', async () => {
    // Prepare
    const table = await newTable();
    await eightSnapshots(table);
    await expireSnapshots(table, { ...aggressive(), retainMin: 3 });
    // Act
    const read = table.read({ snapshotId: 2 });
    // Assess
    await expect(read).rejects.toThrow(SnapshotNotFoundError);
    await expect(table.read({ snapshotId: 2 })).rejects.toThrow(/6\.\.8/);
  });

  it('expires at most `limit` snapshots per run; the next run continues', async () => {
    // Prepare
    const table = await newTable({ 'snapshot.expire.limit': '3' });
    const history = await eightSnapshots(table);
    // Act
    const first = await expireSnapshots(table, aggressive());
    const second = await expireSnapshots(table, aggressive());
    const third = await expireSnapshots(table, aggressive());
    // Assess
    expect(first.expired).toEqual([1, 2, 3]);
    expect(first.heldBy).toBe('limit');
    expect(second.expired).toEqual([4, 5, 6]);
    expect(third.expired).toEqual([7]);
    expect(await rowsAt(table)).toEqual(history.get(8));
    await expectVerified(table);
  });

  it('keeps the newest snapshots and those replaced within the time window', async () => {
    // Prepare
    const table = await newTable();
    await eightSnapshots(table);
    // Act: a 1 h window keeps everything committed in the last hour, whatever the counts say.
    const byTime = await expireSnapshots(table, { retainMin: 1, olderThanMs: 3_600_000 });
    const byCount = await expireSnapshots(table, { ...aggressive(), retainMin: 4 });
    const byMax = await expireSnapshots(table, {
      retainMin: 1,
      retainMax: 2,
      olderThanMs: 3_600_000,
      now: pastFloor(),
    });
    // Assess
    expect(byTime.expired).toEqual([]);
    expect(byTime.heldBy).toBe('time');
    expect(byCount.expired).toEqual([1, 2, 3, 4]);
    expect(byMax.expired).toEqual([5, 6]);
    expect(await table.snapshots.listIds()).toEqual([7, 8]);
  });

  it('with a grace period, snapshots expire at once and their files go in a later run', async () => {
    // Prepare
    const table = await newTable();
    const history = await eightSnapshots(table);
    const store = table.store as MemoryStore;
    const dataBefore = dataKeys(store, table).length;
    const now = pastFloor();
    // Act
    const first = await expireSnapshots(table, { retainMin: 1, olderThanMs: 0, now, graceMs: 60_000 });
    const early = await expireSnapshots(table, { retainMin: 1, olderThanMs: 0, now: now + 30_000, graceMs: 60_000 });
    const dataWhileWaiting = dataKeys(store, table).length;
    const later = await expireSnapshots(table, { retainMin: 1, olderThanMs: 0, now: now + 60_000, graceMs: 60_000 });
    // Assess
    expect(first.expired).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(first.pendingFiles).toBeGreaterThan(0);
    expect(first.deletedFiles).toBe(0);
    expect(early.expired).toEqual([]);
    expect(early.deletedFiles).toBe(0);
    expect(dataWhileWaiting).toBe(dataBefore);
    expect(later.deletedFiles).toBe(first.pendingFiles);
    expect(dataKeys(store, table).length).toBeLessThan(dataBefore);
    expect(store.keys().some((k) => k.startsWith(journalDir(table.path)))).toBe(false);
    expect(await rowsAt(table)).toEqual(history.get(8));
    await expectVerified(table);
  });

  it('deletes the changelog files of expired snapshots and keeps those of retained ones', async () => {
    // Prepare
    const table = await newTable({ 'changelog-producer': 'input' });
    await eightSnapshots(table);
    const changelogOf = async (id: number) =>
      readChangelogFiles(table.store, table.path, await table.snapshots.read(id));
    expect((await changelogOf(1)).length).toBeGreaterThan(0);
    // Act
    const r = await expireSnapshots(table, { ...aggressive(), retainMin: 2 });
    // Assess
    expect(r.expired).toEqual([1, 2, 3, 4, 5, 6]);
    expect(r.deleted.changelogFiles).toBeGreaterThan(0);
    expect((await changelogOf(7)).length).toBeGreaterThan(0);
    await expectVerified(table);
  });

  it('a larger changelog retention keeps long-lived changelogs, not the snapshots', async () => {
    // Prepare
    const table = await newTable({ 'changelog-producer': 'input', 'changelog.num-retained.min': '5' });
    await eightSnapshots(table);
    // Act
    const r = await expireSnapshots(table, aggressive());
    // Assess: snapshots 1..7 expire; 4..7 leave a changelog (5 retained counting snapshot 8).
    expect(r.expired).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(r.changelogDecoupled).toBe(true);
    expect(r.changelogsWritten).toEqual([4, 5, 6, 7]);
    expect(await table.snapshots.listIds()).toEqual([8]);
  });

  it('two expiry runs at once leave a consistent table, and the next run leaves no garbage', async () => {
    // Prepare
    const table = await newTable({ 'changelog-producer': 'input' });
    const history = await eightSnapshots(table);
    const store = table.store as MemoryStore;
    store.setLatency(1);
    // Act
    const [a, b] = await Promise.all([
      expireSnapshots(table, { ...aggressive(), retainMin: 3 }),
      expireSnapshots(table, aggressive()),
    ]);
    store.setLatency(0);
    await expectVerified(table);
    const after = await expireSnapshots(table, aggressive());
    // Assess
    expect(new Set([...a.expired, ...b.expired, ...after.expired])).toEqual(new Set([1, 2, 3, 4, 5, 6, 7]));
    expect(await table.snapshots.listIds()).toEqual([8]);
    expect(await rowsAt(table)).toEqual(history.get(8));
    await expectVerified(table);
    const orphans = await removeOrphanFiles(table, { olderThanMs: 0, dryRun: true, now: Date.now() + 1000 });
    expect(orphans.orphans).toEqual([]);
  });

  it('writes a valid EARLIEST even when nothing expires, and does nothing on an empty table', async () => {
    // Prepare
    const empty = await newTable();
    const table = await newTable();
    await eightSnapshots(table);
    // Act
    const none = await expireSnapshots(empty, aggressive());
    const kept = await expireSnapshots(table, { retainMin: 10 });
    // Assess
    expect(none.expired).toEqual([]);
    expect(none.earliest).toBeUndefined();
    expect(kept.expired).toEqual([]);
    expect(kept.earliest).toBe(1);
    expect(fromUtf8((await table.store.get(earliestHintKey(table.path))).body)).toBe('1');
  });
});
