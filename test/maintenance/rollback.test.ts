/**
 * Rollback to a snapshot or a tag: newer snapshots, tags and the files only they referenced go,
 * consumers past the target move back, commit identifiers of removed snapshots commit again, and
 * a writer that planned on a removed snapshot never brings it back.
 */
import { describe, expect, it } from 'vitest';
import { expireSnapshots } from '../../lib/maintenance/expire-snapshots.js';
import { rollbackTo } from '../../lib/maintenance/rollback.js';
import { snapshotReferences, addReferences } from '../../lib/maintenance/snapshot-references.js';
import { readConsumer } from '../../lib/snapshot/consumer.js';
import { createTag, listTags } from '../../lib/snapshot/tags.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { latestHintKey } from '../../lib/snapshot/paths.js';
import { fromUtf8 } from '../../lib/store/object-store.js';
import { Table } from '../../lib/table/table.js';
import { SnapshotNotFoundError, TagError } from '../../lib/errors.js';
import { processView } from '../helpers/process-view.js';
import { addConsumer, eightSnapshots, expectVerified, newTable, rowsAt, upsert } from './expiry-fixtures.js';

/** Every data, changelog and manifest file key any snapshot or tag of the table references. */
async function referencedFiles(table: Table): Promise<Set<string>> {
  const keep = new Set<string>();
  for (const id of await table.snapshots.listIds()) addReferences(keep, await snapshotReferences(table, await table.snapshots.read(id)));
  for (const { tag } of await listTags(table.store, table.path)) addReferences(keep, await snapshotReferences(table, tag));
  return keep;
}

function fileKeys(store: MemoryStore, table: Table): string[] {
  return store.keys().filter((k) => k.startsWith(`${table.path}/bucket-`) || k.startsWith(`${table.path}/manifest/`));
}

/** A store whose next snapshot-file put first runs `onSnapshotPut` (another process acting meanwhile). */
class RacingStore extends MemoryStore {
  onSnapshotPut?: () => Promise<void>;
  override async putIfAbsent(key: string, body: Uint8Array) {
    const hook = key.includes('/snapshot/snapshot-') ? this.onSnapshotPut : undefined;
    if (hook) this.onSnapshotPut = undefined;
    if (hook) await hook();
    return super.putIfAbsent(key, body);
  }
}

/** A store that runs `afterSnapshotPut` once, right after a snapshot file was created (before its committer goes on). */
class AfterPutStore extends MemoryStore {
  afterSnapshotPut?: (key: string) => Promise<void>;
  override async putIfAbsent(key: string, body: Uint8Array) {
    const created = await super.putIfAbsent(key, body);
    const hook = created && key.includes('/snapshot/snapshot-') ? this.afterSnapshotPut : undefined;
    if (hook) this.afterSnapshotPut = undefined;
    if (hook) await hook(key);
    return created;
  }
}

describe('rollbackTo', () => {
  it('removes newer snapshots, their tags and files, resets consumers past the target, and the table goes on from there', async () => {
    // Prepare: APPENDs 1–3, compactions 4–5, APPENDs 6–8; tags on 2 and 7; consumers at 8 and 3.
    const table = await newTable({ 'changelog-producer': 'input' });
    const history = await eightSnapshots(table);
    await createTag(table.store, table.path, 'two', 2);
    await createTag(table.store, table.path, 'seven', 7);
    await addConsumer(table, 'ahead', 8);
    await addConsumer(table, 'behind', 3);
    // Act
    const r = await rollbackTo(table, { snapshotId: 5 });
    // Assess
    expect(r.removedSnapshots).toEqual([8, 7, 6]);
    expect(r.removedTags).toEqual(['seven']);
    expect(r.resetConsumers).toEqual([{ id: 'ahead', from: 8, to: 6 }]);
    expect(r.deleted.dataFiles).toBeGreaterThan(0);
    expect(r.deleted.changelogFiles).toBeGreaterThan(0);
    expect(await table.snapshots.listIds()).toEqual([1, 2, 3, 4, 5]);
    expect(await table.snapshots.latestId()).toBe(5);
    expect(fromUtf8((await table.store.get(latestHintKey(table.path))).body)).toBe('5');
    expect(await rowsAt(table)).toEqual(history.get(5));
    expect(await rowsAt(table, { tag: 'two' })).toEqual(history.get(2));
    expect((await readConsumer(table.store, table.path, 'behind'))!.nextSnapshot).toBe(3);
    expect((await readConsumer(table.store, table.path, 'ahead'))!.nextSnapshot).toBe(6);
    // Only files (data, changelog, manifests) a remaining snapshot or tag references are left.
    expect(fileKeys(table.store as MemoryStore, table).sort()).toEqual([...(await referencedFiles(table))].sort());
    await expectVerified(table);
    // The next commit is snapshot 6 again, on the rolled-back state.
    expect(await upsert(table, [42], 'z')).toBe(6);
    expect(await rowsAt(table)).toEqual([...history.get(5)!, '42=z'].sort());
    await expectVerified(table);
  });

  it('goes back to a tag, writing back its snapshot when that has expired', async () => {
    const table = await newTable();
    const history = await eightSnapshots(table);
    await createTag(table.store, table.path, 'three', 3);
    await expireSnapshots(table, { retainMin: 2, olderThanMs: 0, now: Date.now() + 3_600_000 });
    expect(await table.snapshots.earliestId()).toBe(7);
    const r = await rollbackTo(table, { tag: 'three' });
    expect(r.restoredFromTag).toBe(true);
    expect(r.removedSnapshots).toEqual([8, 7]);
    expect(await table.snapshots.listIds()).toEqual([3]);
    expect(await table.snapshots.earliestId()).toBe(3);
    expect(await rowsAt(table)).toEqual(history.get(3));
    await expectVerified(table);
    expect(await upsert(table, [99], 'y')).toBe(4);
    expect(await rowsAt(table)).toEqual([...history.get(3)!, '99=y'].sort());
    expect(await rowsAt(table, { tag: 'three' })).toEqual(history.get(3));
  });

  it('refuses a target that does not exist, naming what does', async () => {
    const table = await newTable();
    await upsert(table, [1], 'a');
    await expect(rollbackTo(table, { snapshotId: 9 })).rejects.toThrow(SnapshotNotFoundError);
    await expect(rollbackTo(table, { snapshotId: 9 })).rejects.toThrow(/available snapshots .* 1\.\.1/);
    await expect(rollbackTo(table, { tag: 'nope' })).rejects.toThrow(TagError);
  });

  it('lets a commit identifier of a removed snapshot commit again, and still deduplicates it after', async () => {
    const table = await newTable();
    await upsert(table, [1], 'a');
    const first = await table.write([{ id: 2, v: 'b' }], { commitIdentifier: 'batch-7' });
    expect(first.snapshot!.id).toBe(2);
    await rollbackTo(table, { snapshotId: 1 });
    const again = await table.write([{ id: 2, v: 'b' }], { commitIdentifier: 'batch-7' });
    expect(again.alreadyCommitted).toBe(false);
    expect(again.snapshot!.id).toBe(2);
    const third = await table.write([{ id: 2, v: 'b' }], { commitIdentifier: 'batch-7' });
    expect(third.alreadyCommitted).toBe(true);
    expect(await rowsAt(table)).toEqual(['1=a', '2=b']);
  });

  it('a retry in the process that committed an identifier, after another process rolled that snapshot back and reused its id, commits again', async () => {
    // Prepare: process A commits batch-7 as snapshot 2 (its snapshot cache keeps it); process B
    // rolls back to 1 and commits another batch, which takes id 2 again.
    const store = new MemoryStore();
    const a = await newTable({}, store);
    await upsert(a, [1], 'a');
    expect((await a.write([{ id: 2, v: 'b' }], { commitIdentifier: 'batch-7' })).snapshot!.id).toBe(2);
    const b = new Table(store, a.name, a.path, a.schema);
    await rollbackTo(b, { snapshotId: 1 });
    expect(await upsert(b, [3], 'c')).toBe(2);
    // Act: A retries batch-7 (its earlier commit is not in the table any more).
    const retry = await a.write([{ id: 2, v: 'b' }], { commitIdentifier: 'batch-7' });
    // Assess: committed again, not "already committed" from A's cached snapshot 2.
    expect(retry.alreadyCommitted).toBe(false);
    expect(await rowsAt(b)).toEqual(['1=a', '2=b', '3=c']);
    expect((await a.write([{ id: 2, v: 'b' }], { commitIdentifier: 'batch-7' })).alreadyCommitted).toBe(true);
    await expectVerified(b);
  });

  it('a retry that loses the race for a reused id does not take its own cached, rolled-back snapshot there for the commit', async () => {
    // Prepare: A commits batch-7 as snapshot 3 (cached); B rolls back to 1 and commits snapshot 2.
    const store = new RacingStore();
    const a = await newTable({}, store);
    await upsert(a, [1], 'a');
    await upsert(a, [2], 'removed');
    expect((await a.write([{ id: 7, v: 'g' }], { commitIdentifier: 'batch-7' })).snapshot!.id).toBe(3);
    const b = new Table(processView(store), a.name, a.path, a.schema);
    await rollbackTo(b, { snapshotId: 1 });
    expect(await upsert(b, [3], 'c')).toBe(2);
    // Act: A's retry takes the index over for snapshot 3, but B creates 3 just before A's put.
    store.onSnapshotPut = async () => void (await upsert(b, [4], 'd'));
    const retry = await a.write([{ id: 7, v: 'g' }], { commitIdentifier: 'batch-7' });
    // Assess: A read forward past B's snapshot 3 (not its cached old 3) and committed batch-7 as 4.
    expect(retry.alreadyCommitted).toBe(false);
    expect(retry.snapshot!.id).toBe(4);
    expect(await rowsAt(b)).toEqual(['1=a', '3=c', '4=d', '7=g']);
    await expectVerified(b);
  });

  it('a rollback right after a warm writer\'s commit: its next commit (base unchecked, seen moments ago) is withdrawn and lands on the target', async () => {
    // Prepare: writer A commits snapshot 3; B rolls back to 1 at once, so A's base (3, made by A
    // moments ago, which it does not HEAD again) is gone and its next id 4 is free.
    const store = new MemoryStore();
    const a = await newTable({}, store);
    await upsert(a, [1], 'a');
    await upsert(a, [2], 'b');
    await upsert(a, [3], 'removed');
    const b = new Table(store, a.name, a.path, a.schema);
    await rollbackTo(b, { snapshotId: 1 });
    // Act
    const id = await upsert(a, [4], 'd');
    // Assess: landed on the target, nothing of the removed snapshots is back, no gap left behind
    expect(id).toBe(2);
    expect(await b.snapshots.listIds()).toEqual([1, 2]);
    expect(await rowsAt(b)).toEqual(['1=a', '4=d']);
    await expectVerified(b);
  });

  it('while a writer\'s snapshot on a removed base exists (until it withdraws it), a reader that knew the removed latest does not take it for the latest', async () => {
    // Prepare: reader C knows snapshot 3; B rolls back to 1; warm writer A (base 3, seen moments
    // ago, not checked again) creates snapshot 4 on it and withdraws it after its parent check.
    const store = new AfterPutStore();
    const a = await newTable({}, store);
    await upsert(a, [1], 'a');
    await upsert(a, [2], 'b');
    await upsert(a, [3], 'removed');
    const c = new Table(processView(store), a.name, a.path, a.schema);
    expect(await rowsAt(c)).toEqual(['1=a', '2=b', '3=removed']);
    await rollbackTo(new Table(processView(store), a.name, a.path, a.schema), { snapshotId: 1 });
    const inWindow: Array<{ created: string; latest?: number; rows: string[] }> = [];
    store.afterSnapshotPut = async (key) => {
      inWindow.push({ created: key.slice(key.lastIndexOf('/') + 1), latest: await c.snapshots.latestId(), rows: await rowsAt(c) });
      // A reader coming through a listing (no hint) sees the same.
      await store.delete(latestHintKey(a.path));
      const cold = new Table(processView(store), a.name, a.path, a.schema);
      inWindow.push({ created: 'cold reader', latest: await cold.snapshots.latestId(), rows: await rowsAt(cold) });
    };
    // Act
    const id = await upsert(a, [4], 'd');
    // Assess: in the window snapshot 4 existed, and both readers saw snapshot 1; A landed as 2.
    expect(inWindow).toEqual([
      { created: 'snapshot-4', latest: 1, rows: ['1=a'] },
      { created: 'cold reader', latest: 1, rows: ['1=a'] },
    ]);
    expect(id).toBe(2);
    expect(await rowsAt(c)).toEqual(['1=a', '4=d']);
  });

  it('a writer holding a removed snapshot as its base does not bring it back, even once its id exists again', async () => {
    // Prepare: writer A committed snapshot 3 and keeps it cached as its base.
    const store = new MemoryStore();
    const a = await newTable({}, store);
    await upsert(a, [1], 'a');
    await upsert(a, [2], 'b');
    await upsert(a, [3], 'removed');
    const b = new Table(store, a.name, a.path, a.schema);
    // Act: B rolls back to 1 and commits twice (ids 2 and 3 exist again); A commits on its stale base.
    await rollbackTo(b, { snapshotId: 1 });
    await upsert(b, [4], 'd');
    await upsert(b, [5], 'e');
    const id = await upsert(a, [6], 'f');
    // Assess: A's commit landed on B's snapshot 3; nothing of the removed snapshots is back.
    expect(id).toBe(4);
    expect(await rowsAt(b)).toEqual(['1=a', '4=d', '5=e', '6=f']);
    await expectVerified(b);
  });

  it('a commit racing the rollback on a removed snapshot is withdrawn by the writer and landed on the target', async () => {
    // Prepare: the writer's snapshot-file put waits for a rollback that removes its base.
    const store = new RacingStore();
    const writer = await newTable({}, store);
    await upsert(writer, [1], 'a');
    await upsert(writer, [2], 'removed');
    const admin = new Table(store, writer.name, writer.path, writer.schema);
    store.onSnapshotPut = async () => {
      await rollbackTo(admin, { snapshotId: 1 });
    };
    // Act: the writer planned snapshot 3 on snapshot 2; the rollback removes 2 before the put.
    const id = await upsert(writer, [3], 'c');
    // Assess
    expect(id).toBe(2);
    expect(await admin.snapshots.listIds()).toEqual([1, 2]);
    expect(await rowsAt(admin)).toEqual(['1=a', '3=c']);
    await expectVerified(admin);
  });
});
