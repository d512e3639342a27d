import { describe, expect, it } from 'vitest';
import { CorruptMetadataError, ObjectNotFoundError, SnapshotNotFoundError } from '../../lib/errors.js';
import { earliestHintKey, latestHintKey, snapshotKey } from '../../lib/snapshot/paths.js';
import { commit } from '../../lib/snapshot/commit.js';
import { SnapshotManager } from '../../lib/snapshot/snapshot-manager.js';
import { fromUtf8, utf8, type ObjectStore } from '../../lib/store/object-store.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { appendRequest, change, testCommitOptions } from '../manifest/factories.js';
import { processView } from '../helpers/process-view.js';

const T = 'db.db/snaps';

/** A table with `n` APPEND snapshots committed at times 100, 200, … */
async function tableWith(n: number): Promise<{ store: MemoryStore; sm: SnapshotManager }> {
  const store = new MemoryStore();
  for (let i = 1; i <= n; i++) {
    await commit(store, T, appendRequest('u', `c${i}`, [change(`f${i}`)]), testCommitOptions({ now: () => i * 100 }));
  }
  return { store, sm: new SnapshotManager(store, T) };
}

function listed(store: MemoryStore): boolean {
  return store.callLog.some((c) => c.op === 'list');
}

describe('SnapshotManager', () => {
  it('finds nothing in an empty table', async () => {
    const sm = new SnapshotManager(new MemoryStore(), T);
    expect(await sm.latestId()).toBeUndefined();
    expect(await sm.earliestId()).toBeUndefined();
    expect(await sm.latest()).toBeUndefined();
    await expect(sm.read(1)).rejects.toThrow(/no snapshot yet/);
  });

  it('trusts a LATEST hint that checks out, without listing', async () => {
    const { store, sm } = await tableWith(3);
    await store.put(latestHintKey(T), utf8('3'));
    store.resetCallLog();
    expect(await sm.latestId()).toBe(3);
    expect(listed(store)).toBe(false);
  });

  it('gallops forward from a lagging LATEST hint without listing', async () => {
    // Prepare: warm committers do not write the hint; here it says 1 of 5.
    const { store, sm } = await tableWith(5);
    await store.put(latestHintKey(T), utf8('1'));
    store.resetCallLog();
    // Act / Assess
    expect(await sm.latestId()).toBe(5);
    expect(listed(store)).toBe(false);
    // 2, then 1 (asked after 2's answer: see gallopFrom), then 3, 5 and the absent 9, then 7 and 6
    // (absent) between 5 and 9
    expect(store.callLog.filter((c) => c.op === 'head').map((c) => Number(/snapshot-(\d+)$/.exec(c.key)![1]))).toEqual([
      2, 1, 3, 5, 9, 7, 6,
    ]);
  });

  it.each([1, 2, 3, 63, 64, 65, 1000, 4097])(
    'finds the latest of a hint lagging by %i in about 2·log2 HEADs, never by listing',
    async (lag) => {
      // Prepare: snapshot files 10 … 10 + lag (their content is never read: the lookup only HEADs)
      const store = new MemoryStore();
      for (let id = 10; id <= 10 + lag; id++) await store.put(snapshotKey(T, id), utf8('{}'));
      await store.put(latestHintKey(T), utf8('10'));
      store.resetCallLog();
      // Act / Assess
      expect(await new SnapshotManager(store, T).latestId()).toBe(10 + lag);
      expect(listed(store)).toBe(false);
      expect(store.callLog.filter((c) => c.op === 'head').length).toBeLessThanOrEqual(
        2 * Math.ceil(Math.log2(lag + 1)) + 3,
      );
    },
  );

  it('a manager that has seen snapshot N walks from N without reading the hint', async () => {
    const { store, sm } = await tableWith(3);
    expect(await sm.latestId()).toBe(3);
    await commit(store, T, appendRequest('u', 'c4', [change('f4')]), testCommitOptions({ now: () => 400 }));
    store.resetCallLog();
    expect(await sm.latestId()).toBe(4);
    expect(store.callLog.map((c) => c.op).sort()).toEqual(['head', 'head', 'head']);
  });

  it('a committer writes the LATEST hint only when its lookup found it behind; a warm one does not', async () => {
    // Prepare: a table whose hint is current (3), and a cold committer (a caching manager)
    const { store } = await tableWith(3);
    expect(fromUtf8((await store.get(latestHintKey(T))).body)).toBe('3');
    const first = new SnapshotManager(store, T, { cacheSnapshots: true });
    // Act: the cold commit over the current hint (three metadata PUTs: the hint is not written)
    await commit(store, T, appendRequest('u', 'c4', [change('f4')]), testCommitOptions({ snapshotManager: first }));
    const afterCurrent = fromUtf8((await store.get(latestHintKey(T))).body);
    // Act: another cold committer now finds the hint one behind, commits, then stays warm
    const second = new SnapshotManager(store, T, { cacheSnapshots: true });
    const opts = testCommitOptions({ snapshotManager: second });
    await commit(store, T, appendRequest('u', 'c5', [change('f5')]), opts);
    const afterBehind = fromUtf8((await store.get(latestHintKey(T))).body);
    for (let i = 6; i <= 7; i++) await commit(store, T, appendRequest('u', `c${i}`, [change(`f${i}`)]), opts);
    // Assess: written by the commit that found it behind only, and a cold reader still finds 7
    expect(afterCurrent).toBe('3');
    expect(afterBehind).toBe('5');
    expect(fromUtf8((await store.get(latestHintKey(T))).body)).toBe('5');
    expect(await new SnapshotManager(store, T).latestId()).toBe(7);
  });

  it.each([
    ['missing', undefined],
    ['ahead of the table', '9'],
    ['garbage', 'abc'],
  ])('lists when the LATEST hint is %s', async (_what, hint) => {
    const { store, sm } = await tableWith(3);
    if (hint === undefined) await store.delete(latestHintKey(T));
    else await store.put(latestHintKey(T), utf8(hint));
    store.resetCallLog();
    expect(await sm.latestId()).toBe(3);
    expect((await sm.latest())?.id).toBe(3);
    expect(listed(store)).toBe(true);
  });

  it('walks forward past a listing that missed a new snapshot', async () => {
    // Prepare: a listing taken just before snapshot-3 landed (it omits it).
    const { store } = await tableWith(3);
    await store.delete(latestHintKey(T));
    const staleListing: ObjectStore = {
      ...processView(store),
      async *list(prefix: string) {
        for await (const o of store.list(prefix)) if (!o.key.endsWith('snapshot-3')) yield o;
      },
    };
    // Act / Assess
    expect(await new SnapshotManager(staleListing, T).latestId()).toBe(3);
  });

  it('ignores an EARLIEST hint that points at a deleted snapshot', async () => {
    const { store, sm } = await tableWith(4);
    await store.put(earliestHintKey(T), utf8('1'));
    await store.delete(snapshotKey(T, 1));
    await store.delete(snapshotKey(T, 2));
    expect(await sm.earliestId()).toBe(3);
    await store.put(earliestHintKey(T), utf8('3'));
    store.resetCallLog();
    expect(await sm.earliestId()).toBe(3);
    expect(listed(store)).toBe(false);
  });

  it('names the available range when a snapshot has expired', async () => {
    const { store, sm } = await tableWith(4);
    await store.delete(snapshotKey(T, 1));
    const err = await sm.read(1).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SnapshotNotFoundError);
    expect((err as SnapshotNotFoundError).available).toEqual({ earliest: 2, latest: 4 });
    expect((err as Error).message).toMatch(/expired.*2\.\.4/);
    await expect(sm.read(7)).rejects.toThrow(/not been committed.*2\.\.4/);
    expect(await sm.tryRead(1)).toBeUndefined();
    expect(await sm.listIds()).toEqual([2, 3, 4]);
  });

  it('reports a damaged or misplaced snapshot file as corrupt metadata', async () => {
    const { store, sm } = await tableWith(3);
    const third = (await store.get(snapshotKey(T, 3))).body;
    await store.put(snapshotKey(T, 2), third);
    await expect(sm.read(2)).rejects.toThrow(CorruptMetadataError);
    await expect(sm.read(2)).rejects.toThrow(/holds snapshot id 3, expected 2/);
    await store.put(snapshotKey(T, 2), utf8('{"version":1,"id":2}'));
    await expect(sm.read(2)).rejects.toThrow(/snapshot file memory:\/\/[^/]+\/db.db\/snaps\/snapshot\/snapshot-2/);
    await store.put(snapshotKey(T, 2), utf8('not json'));
    await expect(sm.read(2)).rejects.toThrow(CorruptMetadataError);
  });

  it('finds the snapshot at or before a time by binary search', async () => {
    const { sm } = await tableWith(9);
    expect(await sm.snapshotAtOrBefore(50)).toBeUndefined();
    expect((await sm.snapshotAtOrBefore(100))?.id).toBe(1);
    expect((await sm.snapshotAtOrBefore(250))?.id).toBe(2);
    expect((await sm.snapshotAtOrBefore(700))?.id).toBe(7);
    expect((await sm.snapshotAtOrBefore(899))?.id).toBe(8);
    expect((await sm.snapshotAtOrBefore(10_000))?.id).toBe(9);
  });

  it('restarts a time lookup when expiry removes a snapshot under it', async () => {
    const { store, sm } = await tableWith(9);
    // The first read of snapshot-5 (the first probe) finds it gone, as if expiry had just run.
    store.injectFault({
      op: 'get',
      keyIncludes: 'snapshot/snapshot-5',
      nth: 1,
      error: () => new ObjectNotFoundError('snapshot-5'),
    });
    expect((await sm.snapshotAtOrBefore(650))?.id).toBe(6);
  });

  it('answers relative to the earliest snapshot still present', async () => {
    const { store, sm } = await tableWith(5);
    await store.delete(snapshotKey(T, 1));
    await store.delete(snapshotKey(T, 2));
    expect(await sm.snapshotAtOrBefore(250)).toBeUndefined();
    expect((await sm.snapshotAtOrBefore(350))?.id).toBe(3);
  });

  it('keeps timeMillis non-decreasing even when a committer clock runs behind', async () => {
    const store = new MemoryStore();
    const times = [500, 300, 700];
    for (let i = 0; i < 3; i++) {
      await commit(
        store,
        T,
        appendRequest('u', `c${i}`, [change(`f${i}`)]),
        testCommitOptions({ now: () => times[i] }),
      );
    }
    const sm = new SnapshotManager(store, T);
    expect((await Promise.all([1, 2, 3].map((id) => sm.read(id)))).map((s) => s.timeMillis)).toEqual([500, 500, 700]);
  });

  it('writes hints best effort: a failing hint write does not fail the commit', async () => {
    const store = new MemoryStore();
    store.injectFault({ op: 'put', keyIncludes: 'snapshot/LATEST', times: 100 });
    const { snapshot } = await commit(store, T, appendRequest('u', 'c1', [change('f1')]), testCommitOptions());
    expect(snapshot.id).toBe(1);
    expect(await new SnapshotManager(store, T).latestId()).toBe(1);
  });
});
