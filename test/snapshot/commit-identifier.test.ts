/**
 * Idempotence without a window (issue 10, repro 3): an indexed commit identifier deduplicates
 * across commit users however many commits came in between, at O(1) reads, and every crash point
 * of the index protocol neither blocks a retry nor lets it commit twice.
 */
import { describe, expect, it } from 'vitest';
import { CommitIdentifierAmbiguousError } from '../../lib/errors.js';
import { commit, type CommitRequest } from '../../lib/snapshot/commit.js';
import { readIdentifierIndex } from '../../lib/snapshot/commit-identifier.js';
import { snapshotKey } from '../../lib/snapshot/paths.js';
import { SnapshotManager } from '../../lib/snapshot/snapshot-manager.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { rng, testSeed } from '../helpers/random.js';
import { appendRequest, change, testCommitOptions } from '../manifest/factories.js';

const T = 'db.db/ids';
const opts = testCommitOptions();
let files = 0;

/** An indexed APPEND of one fresh file (a retry in another process writes new files). */
function indexed(user: string, identifier: string): CommitRequest {
  return { ...appendRequest(user, identifier, [change(`f${files++}`)], 1), identifierIndex: true };
}

async function others(store: MemoryStore, n: number): Promise<void> {
  for (let i = 0; i < n; i++) await commit(store, T, appendRequest('other', `o-${files}`, [change(`f${files++}`)], 1), opts);
}

async function carrying(store: MemoryStore, identifier: string): Promise<number[]> {
  const sm = new SnapshotManager(store, T);
  const ids: number[] = [];
  for (const id of await sm.listIds()) if ((await sm.read(id)).commitIdentifier === identifier) ids.push(id);
  return ids;
}

describe('indexed commit identifiers', () => {
  it('a retry under another commit user after 150 other commits commits nothing, with a handful of reads', async () => {
    // Prepare
    const store = new MemoryStore();
    const first = await commit(store, T, indexed('process-a', 'retry-42'), opts);
    await others(store, 150);
    store.resetCallLog();
    // Act
    const retry = await commit(store, T, indexed('process-b', 'retry-42'), opts);
    const calls = { ...store.calls };
    // Assess
    expect(retry).toMatchObject({ alreadyCommitted: true, committed: false });
    expect(retry.snapshot.id).toBe(first.snapshot.id);
    expect(await carrying(store, 'retry-42')).toEqual([first.snapshot.id]);
    // O(1): the latest hint and its neighbours, the index, the snapshot it names — not 150 snapshots.
    expect(calls.get + calls.head + calls.list).toBeLessThanOrEqual(12);
    expect(calls.put).toBe(0);
  });

  it('a crash after writing the index but before the snapshot does not block the retry, which commits once', async () => {
    const store = new MemoryStore();
    await others(store, 3);
    store.crashAt({ op: 'putIfAbsent', keyIncludes: '/snapshot/snapshot-' });
    await expect(commit(store, T, indexed('a', 'x'), opts)).rejects.toThrow();
    store.restart();
    await others(store, 2); // someone else takes the id the crashed attempt named
    const retry = await commit(store, T, indexed('b', 'x'), opts);
    const again = await commit(store, T, indexed('c', 'x'), opts);
    expect(retry).toMatchObject({ committed: true, alreadyCommitted: false });
    expect(again).toMatchObject({ alreadyCommitted: true });
    expect(await carrying(store, 'x')).toEqual([retry.snapshot.id]);
    expect((await readIdentifierIndex(store, T, 'x'))?.index.committed).toBe(retry.snapshot.id);
  });

  it('a crash after the snapshot landed but before the index recorded it is settled by the snapshot the index names', async () => {
    const store = new MemoryStore();
    store.crashAt({ op: 'putIfMatch', keyIncludes: '/commit/identifier-' });
    // The snapshot landed: recording it in the index is best effort, the call still succeeds.
    expect((await commit(store, T, indexed('a', 'y'), opts).catch(() => undefined))?.committed ?? true).toBe(true);
    store.restart();
    expect((await readIdentifierIndex(store, T, 'y'))?.index).toMatchObject({ attempt: 1 });
    expect((await readIdentifierIndex(store, T, 'y'))?.index.committed).toBeUndefined();
    await others(store, 120);
    const retry = await commit(store, T, indexed('b', 'y'), opts);
    expect(retry).toMatchObject({ alreadyCommitted: true, committed: false });
    expect(await carrying(store, 'y')).toEqual([1]);
  });

  it('fails loudly when the attempt the index names expired before it was confirmed', async () => {
    const store = new MemoryStore();
    await others(store, 1);
    store.crashAt({ op: 'putIfAbsent', keyIncludes: '/snapshot/snapshot-' });
    await expect(commit(store, T, indexed('a', 'z'), opts)).rejects.toThrow();
    store.restart();
    await others(store, 3);
    await store.delete(snapshotKey(T, 2)); // expired: whether 'z' was in it cannot be told
    await store.delete(snapshotKey(T, 1));
    await expect(commit(store, T, indexed('b', 'z'), opts)).rejects.toThrow(CommitIdentifierAmbiguousError);
  });

  it('concurrent retries of one identifier under different users, among other committers, land exactly once', async () => {
    const seed = testSeed('commit-identifier race');
    const random = rng(seed);
    for (let round = 0; round < 4; round++) {
      const store = new MemoryStore();
      store.setLatency(1);
      await others(store, 2);
      const id = `race-${round}`;
      const jobs: Promise<unknown>[] = [];
      for (let i = 0; i < 6; i++) {
        jobs.push(new Promise((r) => setTimeout(r, random.int(0, 4))).then(() => commit(store, T, indexed(`u${i}`, id), opts)));
        jobs.push(commit(store, T, appendRequest('other', `n-${round}-${i}`, [change(`f${files++}`)], 1), opts));
      }
      const results = (await Promise.all(jobs)).filter((_, i) => i % 2 === 0) as Awaited<ReturnType<typeof commit>>[];
      const landed = await carrying(store, id);
      expect(landed, `seed ${seed} round ${round}`).toHaveLength(1);
      expect(results.filter((r) => r.committed)).toHaveLength(1);
      expect(new Set(results.map((r) => r.snapshot.id))).toEqual(new Set(landed));
    }
  });
});
