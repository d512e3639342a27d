/**
 * Idempotence without a window (issue 10, repro 3): an indexed commit identifier deduplicates
 * across commit users however many commits came in between, at O(1) reads, and every crash point
 * of the index protocol neither blocks a retry nor lets it commit twice.
 */
import { describe, expect, it } from 'vitest';
import { CommitIdentifierAmbiguousError } from '../../lib/errors.js';
import { commit, type CommitRequest } from '../../lib/snapshot/commit.js';
import { carriesIdentifier, identifierIndexKey, readIdentifierIndex } from '../../lib/snapshot/commit-identifier.js';
import { snapshotKey } from '../../lib/snapshot/paths.js';
import { SnapshotManager } from '../../lib/snapshot/snapshot-manager.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { utf8, type ObjectStore } from '../../lib/store/object-store.js';
import { processView } from '../helpers/process-view.js';
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
  for (let i = 0; i < n; i++)
    await commit(store, T, appendRequest('other', `o-${files}`, [change(`f${files++}`)], 1), opts);
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
    // The index names the retry's snapshot; only expiry marks it `committed` (before deleting it).
    expect((await readIdentifierIndex(store, T, 'x'))?.index).toMatchObject({
      attempt: retry.snapshot.id,
      expiryMarks: true,
    });
    expect((await readIdentifierIndex(store, T, 'x'))?.index.committed).toBeUndefined();
  });

  it('an identified commit writes its index once, before the snapshot; a retry settles it by the snapshot the index names', async () => {
    const store = new MemoryStore();
    store.resetCallLog();
    expect((await commit(store, T, indexed('a', 'y'), opts)).committed).toBe(true);
    expect(store.callLog.filter((c) => c.key.includes('/commit/identifier-')).map((c) => c.op)).toEqual([
      'putIfAbsent',
    ]);
    expect((await readIdentifierIndex(store, T, 'y'))?.index).toMatchObject({ attempt: 1 });
    expect((await readIdentifierIndex(store, T, 'y'))?.index.committed).toBeUndefined();
    await others(store, 120);
    const retry = await commit(store, T, indexed('b', 'y'), opts);
    expect(retry).toMatchObject({ alreadyCommitted: true, committed: false });
    expect(await carrying(store, 'y')).toEqual([1]);
  });

  it('an unmarked attempt whose snapshot expired did not land (expiry marks before deleting): the retry commits once', async () => {
    const store = new MemoryStore();
    await others(store, 1);
    store.crashAt({ op: 'putIfAbsent', keyIncludes: '/snapshot/snapshot-' });
    await expect(commit(store, T, indexed('a', 'z'), opts)).rejects.toThrow();
    store.restart();
    await others(store, 3);
    // Snapshot 2 (the attempt's id, taken by another commit) expired; expiry had nothing to mark.
    await store.delete(snapshotKey(T, 1));
    await store.delete(snapshotKey(T, 2));
    const retry = await commit(store, T, indexed('b', 'z'), opts);
    expect(retry).toMatchObject({ committed: true, alreadyCommitted: false });
    expect(await carrying(store, 'z')).toEqual([retry.snapshot.id]);
  });

  it('fails loudly for an index of an older varve (no expiryMarks) whose attempt expired unconfirmed', async () => {
    const store = new MemoryStore();
    await others(store, 1);
    store.crashAt({ op: 'putIfAbsent', keyIncludes: '/snapshot/snapshot-' });
    await expect(commit(store, T, indexed('a', 'old'), opts)).rejects.toThrow();
    store.restart();
    // As an older varve wrote it: its committer marked after the snapshot, best effort.
    const { index } = (await readIdentifierIndex(store, T, 'old'))!;
    delete index.expiryMarks;
    await store.put(identifierIndexKey(T, 'old'), utf8(JSON.stringify(index)));
    await others(store, 3);
    await store.delete(snapshotKey(T, 1));
    await store.delete(snapshotKey(T, 2)); // expired: whether 'old' was in it cannot be told
    await expect(commit(store, T, indexed('b', 'old'), opts)).rejects.toThrow(CommitIdentifierAmbiguousError);
  });

  it.each([
    ['a single retry loses to a group commit carrying its identifier', 'group', 'single'],
    ['a group commit loses to the single retry of one of its batches', 'single', 'group'],
    ["a group commit loses to another process's group commit carrying one of its batches", 'group', 'group'],
  ] as const)(
    '%s: the loser finds it, nothing twice (the holder writes the index no more after its snapshot)',
    async (_what, winnerKind, loserKind) => {
      // Prepare: two committers in two processes, each paused right before creating its snapshot.
      // The first (the winner) claims g1 naming snapshot 3; the second settles the index (3 is not
      // created yet) and takes it over naming 3 too. A group commit carries g1 as a batch with g2/g3.
      const store = new MemoryStore();
      await others(store, 2);
      const paused = (): { store: ObjectStore; reached: Promise<void>; release: () => void } => {
        let reach!: () => void;
        let release!: () => void;
        const reached = new Promise<void>((r) => (reach = r));
        const released = new Promise<void>((r) => (release = r));
        const putIfAbsent = async (k: string, b: Uint8Array) => {
          if (k.includes('/snapshot/snapshot-')) {
            reach();
            await released;
          }
          return store.putIfAbsent(k, b);
        };
        return { store: { ...processView(store), putIfAbsent }, reached, release };
      };
      const request = (kind: 'group' | 'single', other: string): CommitRequest =>
        kind === 'single'
          ? indexed('retry', 'g1')
          : {
              ...appendRequest('group', `round-${other}`, []),
              batches: [0, 1].map(() => ({ rowCount: 1, newFiles: [change(`f${files++}`)], changelogFiles: [] })),
              batchIdentifiers: ['g1', other],
            };
      const winner = paused();
      const loser = paused();
      const won = commit(winner.store, T, request(winnerKind, 'g2'), opts);
      await winner.reached;
      const lost = commit(loser.store, T, request(loserKind, 'g3'), opts);
      await loser.reached;
      // Act: the winner creates snapshot 3, then the loser tries 3 and reloads.
      winner.release();
      const first = await won;
      loser.release();
      const second = await lost;
      // Assess: g1 is in exactly one snapshot, the winner's; nothing else lost.
      expect(first.snapshot.id).toBe(3);
      const sm = new SnapshotManager(store, T);
      const all = await Promise.all((await sm.listIds()).map((n) => sm.read(n)));
      const holders = (id: string) => all.filter((x) => carriesIdentifier(x, id)).map((x) => x.id);
      expect(holders('g1')).toEqual([3]);
      if (loserKind === 'single') expect(second).toMatchObject({ alreadyCommitted: true, committed: false });
      else {
        expect(second.landedBefore?.get(0)?.snapshot?.id).toBe(3);
        expect(holders('g3')).toEqual([4]);
      }
    },
  );

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
        jobs.push(
          new Promise((r) => setTimeout(r, random.int(0, 4))).then(() => commit(store, T, indexed(`u${i}`, id), opts)),
        );
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
