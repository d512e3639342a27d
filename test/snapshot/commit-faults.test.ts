/**
 * Fault injection at every storage call of a commit: whatever fails, and wherever, the table stays
 * readable, a re-run of the same commit lands exactly once, and whatever a failed attempt left
 * behind is referenced by no snapshot.
 */
import { describe, expect, it } from 'vitest';
import { InjectedFaultError, StoreUnavailableError } from '../../lib/errors.js';
import { readManifestFile } from '../../lib/manifest/manifest-file.js';
import { readDeltaEntries, readLiveFiles, readSnapshotLists } from '../../lib/manifest/scan.js';
import { dataFileKey, manifestDir } from '../../lib/manifest/table-paths.js';
import { snapshotKey } from '../../lib/snapshot/paths.js';
import { commit, type CommitOptions, type CommitRequest } from '../../lib/snapshot/commit.js';
import { SnapshotManager } from '../../lib/snapshot/snapshot-manager.js';
import { utf8, type ObjectStore } from '../../lib/store/object-store.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { appendRequest, change, testCommitOptions } from '../manifest/factories.js';
import { allSnapshots, referencedKeys } from './table-checks.js';

const T = 'db.db/faults';
const opts = testCommitOptions({ maxRetries: 5 });
/**
 * Commits stamped ten minutes ago: expiry never removes a snapshot whose successor is younger than
 * a minute (EXPIRY_FLOOR_MS), so a test that deletes snapshots as expiry would needs old ones.
 */
const stampedEarlier = testCommitOptions({ maxRetries: 5, now: () => Date.now() - 10 * 60_000 });
const THE_COMMIT = 'the-commit';

/** An APPEND whose data file is written to the store first, as a writer does. */
async function appendWithData(store: MemoryStore, identifier: string): Promise<CommitRequest> {
  const c = change(`data-${identifier}`, { rowCount: 2, maxSequenceNumber: 1 });
  await store.put(dataFileKey(T, c.partition, c.bucket, c.file.fileName), utf8('parquet bytes'));
  return appendRequest('writer', identifier, [c], 2);
}

/** A table with two commits and the data file of the commit under test already written. */
async function preparedTable(commitOpts: CommitOptions = opts): Promise<{ store: MemoryStore; req: CommitRequest }> {
  const store = new MemoryStore();
  for (const id of ['first', 'second']) await commit(store, T, await appendWithData(store, id), commitOpts);
  return { store, req: await appendWithData(store, THE_COMMIT) };
}

/**
 * With merge-min-count 2 the commit under test (snapshot 3) merges the two manifests before it:
 * the merging commit, whose own entries go into the merged manifest (manifest/merge.ts).
 */
const mergingOpts = testCommitOptions({ maxRetries: 5, manifestMergeMinCount: 2 });

/** Asserts the latest snapshot's data manifests are one file whose two slices hold the merged base and the delta. */
async function assertFoldedMerge(store: MemoryStore, label: string): Promise<void> {
  const latest = (await new SnapshotManager(store, T).latest())!;
  const { base, delta } = await readSnapshotLists(store, T, latest);
  expect(
    base.map((m) => m.fileName),
    label,
  ).toEqual(delta.map((m) => m.fileName));
  expect([base[0].slice, delta[0].slice], label).toEqual([
    [0, 2],
    [2, 3],
  ]);
  // The merged manifest's contents are the union: both earlier files, then the commit's own.
  const whole = await readManifestFile(store, T, base[0].fileName);
  expect(
    whole.map((e) => `${e.kind} ${e.file.fileName}`),
    label,
  ).toEqual(['ADD data-first', 'ADD data-second', `ADD data-${THE_COMMIT}`]);
  expect(
    (await readDeltaEntries(store, T, latest)).map((e) => e.file.fileName),
    label,
  ).toEqual([`data-${THE_COMMIT}`]);
}

async function assertReadable(store: MemoryStore): Promise<void> {
  const latest = await new SnapshotManager(store, T).latest();
  expect(latest).toBeDefined();
  for (const e of await readLiveFiles(store, T, latest!)) {
    expect(await store.head(dataFileKey(T, e.partition, e.bucket, e.file.fileName)), e.file.fileName).toBeDefined();
  }
}

async function carrying(store: MemoryStore, identifier: string): Promise<number> {
  return (await allSnapshots(store, T)).filter((s) => s.commitIdentifier === identifier).length;
}

describe.each([
  ['a plain commit', opts],
  ['a commit that merges manifests', mergingOpts],
])('%s under a crash at every storage call', (what, opts) => {
  it('leaves a readable table, lands exactly once on re-run, and leaves only unreferenced files behind', async () => {
    // Prepare: the call log of a clean commit.
    const clean = await preparedTable(opts);
    clean.store.resetCallLog();
    await commit(clean.store, T, clean.req, opts);
    const calls = clean.store.callLog.map((c) => `${c.op} ${c.key}`);
    // Either way three metadata PUTs beside the LATEST hint (this committer is cold): a merge
    // takes the commit's entries into its manifest.
    expect(
      calls.filter((c) => /^put/.test(c) && !c.endsWith('/LATEST')),
      what,
    ).toHaveLength(3);
    if (opts === mergingOpts) await assertFoldedMerge(clean.store, 'clean run');
    const commitPoint = calls.findIndex((c) => c.startsWith('putIfAbsent') && c.includes('snapshot/snapshot-3'));
    expect(commitPoint).toBeGreaterThan(0);
    console.log(`a clean commit makes ${calls.length} storage calls:\n  ${calls.join('\n  ')}`);

    const outcomes: string[] = [];
    for (let k = 1; k <= calls.length; k++) {
      for (const when of ['before', 'after'] as const) {
        const label = `crash ${when} call ${k} (${calls[k - 1]})`;
        const { store, req } = await preparedTable(opts);
        const keysBefore = new Set(store.keys());
        store.crashAt({ nth: k, when });

        // Act
        const error = await commit(store, T, req, opts).then(
          () => undefined,
          (e: unknown) => e,
        );
        store.restart();

        // Assess: the crash either failed the commit, or came after the commit point (hint write).
        const landed = (await carrying(store, THE_COMMIT)) === 1;
        const pastCommitPoint = k - 1 > commitPoint || (k - 1 === commitPoint && when === 'after');
        expect(landed, label).toBe(pastCommitPoint);
        if (error === undefined) expect(k - 1, label).toBeGreaterThan(commitPoint);
        await assertReadable(store);

        const leftovers = store.keys().filter((key) => !keysBefore.has(key) && key.startsWith(manifestDir(T)));
        const referenced = await referencedKeys(store, T);
        const orphans = leftovers.filter((key) => !referenced.has(key));
        if (!landed) expect(orphans, label).toEqual(leftovers);
        else expect(orphans, label).toEqual([]);

        const rerun = await commit(store, T, req, opts);
        expect(rerun.alreadyCommitted, label).toBe(landed);
        expect(await carrying(store, THE_COMMIT), label).toBe(1);
        const after = await referencedKeys(store, T);
        expect(
          orphans.filter((key) => after.has(key)),
          label,
        ).toEqual([]);
        await assertReadable(store);
        if (opts === mergingOpts) await assertFoldedMerge(store, label);
        outcomes.push(
          `${when} ${k}: ${error === undefined ? 'returned' : (error as Error).name}, landed=${landed}, orphans=${orphans.length}`,
        );
      }
    }
    console.log(`${what}: crash matrix (${outcomes.length} runs):\n  ${outcomes.join('\n  ')}`);
  });
});

describe('commit under non-crash faults', () => {
  it('retries 409s on the snapshot write transparently', async () => {
    const { store, req } = await preparedTable();
    store.injectConflicts(3, 'snapshot/snapshot-3');
    const reasons: string[] = [];
    const r = await commit(store, T, req, { ...opts, onRetry: (_n, why) => reasons.push(why) });
    expect(r).toMatchObject({ committed: true, attempts: 1 });
    expect(r.snapshot.id).toBe(3);
    expect(reasons).toHaveLength(3);
    expect(await carrying(store, THE_COMMIT)).toBe(1);
  });

  it.each([
    ['retryable', () => new StoreUnavailableError('connection reset after the request was sent')],
    ['non-retryable', () => new InjectedFaultError('response lost')],
  ])('resolves an ambiguous snapshot write (%s error after it took effect) by its identity', async (_what, error) => {
    const { store, req } = await preparedTable();
    store.injectFault({ op: 'putIfAbsent', keyIncludes: 'snapshot/snapshot-3', when: 'after', error });
    const r = await commit(store, T, req, opts);
    expect(r).toMatchObject({ committed: true, alreadyCommitted: false });
    expect(r.snapshot.id).toBe(3);
    expect(await new SnapshotManager(store, T).listIds()).toEqual([1, 2, 3]);
  });

  it('recognises its own late-landing snapshot after losing the retry', async () => {
    // The write landed but threw, and reading snapshot-3 back failed too: the commit retries,
    // loses the race for snapshot-3 to itself, and must recognise its own commit uuid there.
    const { store, req } = await preparedTable();
    store.injectFault({
      op: 'putIfAbsent',
      keyIncludes: 'snapshot/snapshot-3',
      when: 'after',
      error: () => new StoreUnavailableError('timeout'),
    });
    store.injectFault({
      op: 'get',
      keyIncludes: 'snapshot/snapshot-3',
      nth: 1,
      error: () => new StoreUnavailableError('timeout'),
    });
    const r = await commit(store, T, req, opts);
    expect(r).toMatchObject({ committed: true });
    expect(r.snapshot.id).toBe(3);
    expect(await new SnapshotManager(store, T).listIds()).toEqual([1, 2, 3]);
  });

  it('fails on a non-retryable error before the snapshot write, and the re-run lands', async () => {
    const { store, req } = await preparedTable();
    store.injectFault({
      op: 'putIfAbsent',
      keyIncludes: 'snapshot/snapshot-3',
      when: 'before',
      error: () => new InjectedFaultError('disk on fire'),
    });
    await expect(commit(store, T, req, opts)).rejects.toThrow(InjectedFaultError);
    expect(await carrying(store, THE_COMMIT)).toBe(0);
    expect((await commit(store, T, req, opts)).committed).toBe(true);
    expect(await carrying(store, THE_COMMIT)).toBe(1);
  });

  it('never re-creates an expired snapshot id after a very slow attempt', async () => {
    // Prepare: attempt A reads snapshot 2 as its base, then stalls before writing; meanwhile
    // snapshots 3 and 4 land and expiry deletes 1..3, so "snapshot-3" is free again. All were
    // committed long enough ago for expiry to delete them (stampedEarlier).
    const { store, req } = await preparedTable(stampedEarlier);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let stalled!: () => void;
    const reached = new Promise<void>((r) => (stalled = r));
    const slow: ObjectStore = {
      uri: store.uri,
      get: (k) => store.get(k),
      getRange: (k, a, b) => store.getRange(k, a, b),
      head: (k) => store.head(k),
      put: async (k, b) => {
        if (k.includes('manifest-list-')) {
          stalled();
          await gate;
        }
        return store.put(k, b);
      },
      putIfAbsent: (k, b) => store.putIfAbsent(k, b),
      putIfMatch: (k, b, e) => store.putIfMatch(k, b, e),
      delete: (k) => store.delete(k),
      list: (p) => store.list(p),
    };
    const a = commit(slow, T, req, stampedEarlier);
    await reached;
    await commit(store, T, await appendWithData(store, 'b'), stampedEarlier);
    await commit(store, T, await appendWithData(store, 'c'), stampedEarlier);
    for (const id of [1, 2, 3]) await store.delete(snapshotKey(T, id));
    // Act
    await new Promise((r) => setTimeout(r, 1100));
    release();
    const r = await a;
    // Assess
    expect(r.snapshot.id).toBe(5);
    expect(await new SnapshotManager(store, T).listIds()).toEqual([4, 5]);
  });

  it('a warm committer idle while its known snapshot expired checks it first and lands on the latest, never on an expired id', async () => {
    // Prepare: a warm committer (caching manager) makes snapshot 3; others commit 4..6; expiry
    // deletes 1..4, so "snapshot-4" (its next id) is free again. It stays idle past the time a
    // base is trusted unchecked (SLOW_ATTEMPT_MS, 1 s). All were committed long enough ago for
    // expiry to delete them (stampedEarlier).
    const { store, req } = await preparedTable(stampedEarlier);
    const sm = new SnapshotManager(store, T, { cacheSnapshots: true });
    const warm = { ...stampedEarlier, snapshotManager: sm };
    expect((await commit(store, T, await appendWithData(store, 'warm-1'), warm)).snapshot.id).toBe(3);
    for (const id of ['o4', 'o5', 'o6']) await commit(store, T, await appendWithData(store, id), stampedEarlier);
    for (const id of [1, 2, 3, 4]) await store.delete(snapshotKey(T, id));
    await new Promise((r) => setTimeout(r, 1100));
    store.resetCallLog();
    // Act
    const r = await commit(store, T, req, warm);
    // Assess: one attempt (the base was found gone before anything was planned on it), on 6
    expect(r.snapshot.id).toBe(7);
    expect(r.attempts).toBe(1);
    expect(store.callLog.filter((c) => c.op === 'putIfAbsent').map((c) => c.key)).toEqual([snapshotKey(T, 7)]);
    expect(await new SnapshotManager(store, T).listIds()).toEqual([5, 6, 7]);
    await assertReadable(store);
  });

  it('retries a failed manifest write and leaves the half-written file unreferenced', async () => {
    const { store, req } = await preparedTable();
    const keysBefore = new Set(store.keys());
    store.injectFault({
      op: 'put',
      keyIncludes: 'manifest/manifest-',
      nth: 1,
      when: 'after',
      error: () => new StoreUnavailableError('slow down'),
    });
    const r = await commit(store, T, req, opts);
    expect(r.committed).toBe(true);
    const referenced = await referencedKeys(store, T);
    const orphans = store
      .keys()
      .filter((k) => !keysBefore.has(k) && k.startsWith(manifestDir(T)) && !referenced.has(k));
    expect(orphans.length).toBeGreaterThan(0);
    expect(await carrying(store, THE_COMMIT)).toBe(1);
  });
});
