/**
 * Storage errors that are not races (issue 30 §5): a full disk or a read-only warehouse at any PUT
 * of a commit fails the commit at once, naming the cause and the path, with nothing committed; a
 * commit that keeps losing stops after exactly commit.max-retries retries; a retry whose
 * identifier landed in a snapshot that has expired since says so.
 */
import { describe, expect, it } from 'vitest';
import { CommitRetriesExhaustedError, StoreRefusedError } from '../../lib/errors.js';
import { markIdentifierLanded } from '../../lib/snapshot/commit-identifier.js';
import { commit, type CommitRequest } from '../../lib/snapshot/commit.js';
import { snapshotKey } from '../../lib/snapshot/paths.js';
import { SnapshotManager } from '../../lib/snapshot/snapshot-manager.js';
import { folderStoreError } from '../../lib/store/local-store.js';
import { MemoryStore, type StoreOp } from '../../lib/store/memory-store.js';
import { appendRequest, change, testCommitOptions } from '../manifest/factories.js';

const T = 'db.db/storage';
const opts = testCommitOptions({ maxRetries: 30 });

/** The error a folder store throws when the file system answers `code` (a Node system error). */
function fileSystemSays(code: string) {
  return ({ op, key }: { op: StoreOp; key: string }): Error => {
    const system = Object.assign(new Error(`${code}: injected`), { code, errno: -1, syscall: 'open' });
    return folderStoreError(system, '/warehouse', op, key, `/warehouse/${key}`);
  };
}

async function tableWithTwoCommits(): Promise<MemoryStore> {
  const store = new MemoryStore();
  await commit(store, T, appendRequest('w', 'first', [change('a')]), opts);
  await commit(store, T, appendRequest('w', 'second', [change('b')]), opts);
  return store;
}

describe('a non-retryable storage error during a commit', () => {
  const puts: Array<{ where: string; op: StoreOp | StoreOp[]; keyIncludes: string }> = [
    { where: 'a manifest', op: 'put', keyIncludes: '/manifest/manifest-' },
    { where: 'the manifest list', op: ['put', 'putIfAbsent'], keyIncludes: '/manifest/manifest-list-' },
    { where: 'the snapshot', op: 'putIfAbsent', keyIncludes: '/snapshot/snapshot-3' },
  ];
  for (const code of ['ENOSPC', 'EROFS', 'EACCES']) {
    for (const p of puts) {
      it(`${code} at ${p.where}: fails at once naming the cause and the path, nothing committed`, async () => {
        // Prepare
        const store = await tableWithTwoCommits();
        store.injectFault({ op: p.op, keyIncludes: p.keyIncludes, times: 1_000, error: fileSystemSays(code) });
        const retries: string[] = [];
        const req: CommitRequest = appendRequest('w', 'third', [change('c')]);
        // Act
        const failure = await commit(store, T, req, { ...opts, onRetry: (_n, why) => retries.push(why) }).then(
          () => undefined,
          (e: unknown) => e,
        );
        // Assess
        expect(failure).toBeInstanceOf(StoreRefusedError);
        expect((failure as Error).message).toContain(`(${code})`);
        expect((failure as Error).message).toMatch(new RegExp(`${T}/(manifest|snapshot)/`));
        expect(retries).toEqual([]);
        expect(await new SnapshotManager(store, T).latestId()).toBe(2);
        // Nothing half-committed: with the disk fixed, the same commit lands once.
        store.clearFaults();
        const again = await commit(store, T, req, opts);
        expect([again.committed, again.snapshot.id]).toEqual([true, 3]);
      });
    }
  }

  it('a store hiccup that may heal is still retried', async () => {
    const store = await tableWithTwoCommits();
    store.injectFault({ op: 'put', keyIncludes: '/manifest/manifest-', times: 2, error: fileSystemSays('EIO') });
    const retries: string[] = [];
    const done = await commit(store, T, appendRequest('w', 'third', [change('c')]), {
      ...opts,
      onRetry: (_n, why) => retries.push(why),
    });
    expect(done.snapshot.id).toBe(3);
    expect(retries.length).toBeGreaterThanOrEqual(1);
    expect(retries[0]).toContain('EIO');
  });
});

describe('the retry budget of a commit', () => {
  it('gives up after exactly commit.max-retries retries, and says so', async () => {
    const store = await tableWithTwoCommits();
    store.injectConflicts(1_000, 'snapshot-3');
    let waits = 0;
    const failure = await commit(store, T, appendRequest('w', 'third', [change('c')]), {
      ...opts,
      maxRetries: 30,
      maxRetryWaitMs: 2,
      onRetry: () => waits++,
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(failure).toBeInstanceOf(CommitRetriesExhaustedError);
    expect((failure as CommitRetriesExhaustedError).retries).toBe(30);
    expect((failure as Error).message).toMatch(/gave up after 30 retries/);
    expect(waits).toBe(30);
  });
});

describe('a retry whose identifier landed in a snapshot that has expired', () => {
  it('names that snapshot as expired instead of the latest', async () => {
    // Prepare: the identifier lands in snapshot 1; three commits follow; expiry marks the index
    // and deletes snapshot 1 (what expire-snapshots does).
    const store = new MemoryStore();
    const req: CommitRequest = { ...appendRequest('w', 'the-id', [change('a')]), identifierIndex: true };
    await commit(store, T, req, opts);
    for (const id of ['b', 'c', 'd']) await commit(store, T, appendRequest('w', id, [change(id)]), opts);
    await markIdentifierLanded(store, T, 'the-id', 1);
    await store.delete(snapshotKey(T, 1));
    // Act
    const retried = await commit(store, T, { ...req, commitUser: 'another-process' }, opts);
    // Assess
    expect(retried.alreadyCommitted).toBe(true);
    expect(retried.committed).toBe(false);
    expect(retried.expiredSnapshotId).toBe(1);
    expect(await new SnapshotManager(store, T).latestId()).toBe(4);
  });
});
