import { describe, expect, it } from 'vitest';
import { SnapshotNotFoundError, TagError } from '../../lib/errors.js';
import { snapshotKey, tagKey } from '../../lib/snapshot/paths.js';
import { commit } from '../../lib/snapshot/commit.js';
import { SnapshotManager } from '../../lib/snapshot/snapshot-manager.js';
import { createTag, deleteTag, listTags, readTag } from '../../lib/snapshot/tags.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { appendRequest, change, testCommitOptions } from '../manifest/factories.js';

const T = 'db.db/tags';

async function tableWith(n: number): Promise<MemoryStore> {
  const store = new MemoryStore();
  for (let i = 1; i <= n; i++)
    await commit(store, T, appendRequest('u', `c${i}`, [change(`f${i}`)]), testCommitOptions());
  return store;
}

async function tagError(p: Promise<unknown>): Promise<TagError> {
  const e = await p.catch((x: unknown) => x);
  expect(e).toBeInstanceOf(TagError);
  return e as TagError;
}

describe('tags', () => {
  it('hold the snapshot JSON plus tagCreateTime, and outlive the snapshot file', async () => {
    // Prepare
    const store = await tableWith(3);
    const snapshot = await new SnapshotManager(store, T).read(2);
    // Act
    const created = await createTag(store, T, 'v1', 2, () => 1234);
    await store.delete(snapshotKey(T, 2));
    const read = await readTag(store, T, 'v1');
    // Assess
    expect(created).toEqual({ ...snapshot, tagCreateTime: 1234 });
    expect(read).toEqual(created);
  });

  it('accept a snapshot already read', async () => {
    const store = await tableWith(2);
    const s = await new SnapshotManager(store, T).read(2);
    expect((await createTag(store, T, 'latest-one', s)).id).toBe(2);
  });

  it('are created once: a duplicate name is already-exists', async () => {
    const store = await tableWith(2);
    await createTag(store, T, 'v1', 1);
    const e = await tagError(createTag(store, T, 'v1', 2));
    expect(e.kind).toBe('already-exists');
    expect((await readTag(store, T, 'v1')).id).toBe(1);
  });

  it('are listed by name and deleted', async () => {
    const store = await tableWith(3);
    await createTag(store, T, 'b', 3);
    await createTag(store, T, 'a', 1);
    expect((await listTags(store, T)).map((t) => [t.name, t.tag.id])).toEqual([
      ['a', 1],
      ['b', 3],
    ]);
    await deleteTag(store, T, 'a');
    expect((await listTags(store, T)).map((t) => t.name)).toEqual(['b']);
    expect(await store.head(tagKey(T, 'a'))).toBeUndefined();
    expect((await tagError(deleteTag(store, T, 'a'))).kind).toBe('not-found');
    expect((await tagError(readTag(store, T, 'nope'))).kind).toBe('not-found');
  });

  it.each(['', 'a/b', '..', 'x..y', ' padded', 'back\\slash', 'nl\n'])('reject the name %j', async (name) => {
    const store = await tableWith(1);
    expect((await tagError(createTag(store, T, name, 1))).kind).toBe('invalid-argument');
  });

  it('cannot name a snapshot that does not exist', async () => {
    const store = await tableWith(2);
    await store.delete(snapshotKey(T, 1));
    await expect(createTag(store, T, 'old', 1)).rejects.toThrow(SnapshotNotFoundError);
    const stale = { ...(await new SnapshotManager(store, T).read(2)), id: 1 };
    await expect(createTag(store, T, 'old', stale)).rejects.toThrow(SnapshotNotFoundError);
    expect(await listTags(store, T)).toEqual([]);
  });
});
