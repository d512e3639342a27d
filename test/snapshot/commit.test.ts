import { describe, expect, it } from 'vitest';
import { CommitConflictError, CommitRetriesExhaustedError, InvalidArgumentError } from '../../lib/errors.js';
import { readDeltaEntries, readLiveFiles } from '../../lib/manifest/scan.js';
import { latestHintKey } from '../../lib/snapshot/paths.js';
import { commit, type CommitRequest, type FileChange } from '../../lib/snapshot/commit.js';
import { SnapshotManager } from '../../lib/snapshot/snapshot-manager.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { fromUtf8 } from '../../lib/store/object-store.js';
import { appendRequest, change, testCommitOptions } from '../manifest/factories.js';

const T = 'db.db/commit';
const opts = testCommitOptions();

function compact(
  identifier: string,
  before: FileChange[],
  after: FileChange[],
  extra: Partial<CommitRequest> = {},
): CommitRequest {
  return {
    commitUser: 'compactor',
    commitIdentifier: identifier,
    kind: 'COMPACT',
    schemaId: 0,
    compactBefore: before,
    compactAfter: after,
    ...extra,
  };
}

function l1(name: string, min: number, max: number, seq: [number, number] = [0, 0]): FileChange {
  const rowCount = seq[1] - seq[0] + 1;
  return change(name, {
    level: 1,
    rowCount,
    minKey: [min],
    maxKey: [max],
    minSequenceNumber: seq[0],
    maxSequenceNumber: seq[1],
    fileSource: 'COMPACT',
  });
}

describe('commit', () => {
  it('creates snapshot 1, assigns sequence numbers and counts rows', async () => {
    // Prepare
    const store = new MemoryStore();
    const req = appendRequest('u', 'c1', [change('a', { rowCount: 3, minSequenceNumber: 0, maxSequenceNumber: 2 })], 3);
    // Act
    const result = await commit(store, T, req, opts);
    // Assess
    expect(result).toMatchObject({ committed: true, alreadyCommitted: false, attempts: 1 });
    expect(result.snapshot).toMatchObject({
      id: 1,
      commitUser: 'u',
      commitIdentifier: 'c1',
      commitKind: 'APPEND',
      nextSequenceNumber: 3,
      totalRecordCount: 3,
      deltaRecordCount: 3,
    });
    expect(result.snapshot.properties?.['varve.commit-uuid']).toMatch(/^[0-9a-f-]{36}$/);
    // A committer that looked the latest up (here: a cold one) writes the LATEST hint (snapshot-manager.ts).
    expect(fromUtf8((await store.get(latestHintKey(T))).body)).toBe('1');
  });

  it('gives each batch of a group commit its own consecutive sequence base', async () => {
    const store = new MemoryStore();
    await commit(store, T, appendRequest('u', 'c1', [change('a', { rowCount: 5, maxSequenceNumber: 4 })], 5), opts);
    const req: CommitRequest = {
      commitUser: 'group',
      commitIdentifier: 'g1',
      kind: 'APPEND',
      schemaId: 0,
      batches: [
        {
          rowCount: 4,
          newFiles: [
            change('b1', { rowCount: 2, maxSequenceNumber: 1 }),
            change('b2', { rowCount: 2, minSequenceNumber: 2, maxSequenceNumber: 3 }),
          ],
          changelogFiles: [],
        },
        { rowCount: 2, newFiles: [change('c1', { rowCount: 2, maxSequenceNumber: 1 })], changelogFiles: [] },
      ],
    };
    const { snapshot } = await commit(store, T, req, opts);
    const files = Object.fromEntries(
      (await readDeltaEntries(store, T, snapshot)).map((e) => [e.file.fileName, e.file]),
    );
    expect(files.b1).toMatchObject({ sequenceBase: 5, minSequenceNumber: 5, maxSequenceNumber: 6 });
    expect(files.b2).toMatchObject({ sequenceBase: 5, minSequenceNumber: 7, maxSequenceNumber: 8 });
    expect(files.c1).toMatchObject({ sequenceBase: 9, minSequenceNumber: 9, maxSequenceNumber: 10 });
    expect(snapshot).toMatchObject({ nextSequenceNumber: 11, totalRecordCount: 11, deltaRecordCount: 6 });
  });

  it('keeps compaction output absolute and only raises nextSequenceNumber past it', async () => {
    const store = new MemoryStore();
    await commit(
      store,
      T,
      appendRequest('u', 'c1', [change('a', { rowCount: 4, maxSequenceNumber: 3, maxKey: [3] })], 4),
      opts,
    );
    const { snapshot } = await commit(
      store,
      T,
      compact(
        'k1',
        [change('a', { rowCount: 4, sequenceBase: 0, maxSequenceNumber: 3, maxKey: [3] })],
        [l1('a-l1', 0, 3, [0, 3])],
        { compactChangelog: [] },
      ),
      opts,
    );
    expect(snapshot).toMatchObject({
      commitKind: 'COMPACT',
      nextSequenceNumber: 4,
      deltaRecordCount: 0,
      totalRecordCount: 4,
    });
    const raised = await commit(store, T, compact('k2', [l1('a-l1', 0, 3, [0, 3])], [l1('a-l2', 0, 3, [0, 9])]), opts);
    expect(raised.snapshot.nextSequenceNumber).toBe(10);
  });

  it('commits an identity once: a repeat finds the earlier snapshot and writes nothing', async () => {
    const store = new MemoryStore();
    const req = appendRequest('u', 'c1', [change('a')]);
    const first = await commit(store, T, req, opts);
    await commit(store, T, appendRequest('u', 'c2', [change('b')]), opts);
    const keys = store.keys();
    const again = await commit(store, T, req, opts);
    expect(again).toMatchObject({ alreadyCommitted: true, committed: false, attempts: 0 });
    expect(again.snapshot).toEqual(first.snapshot);
    expect(store.keys()).toEqual(keys);
  });

  it('lands a commit once when two calls with the same identity race', async () => {
    const store = new MemoryStore();
    await commit(store, T, appendRequest('u', 'c0', [change('z')]), opts);
    store.setLatency(2);
    const req = appendRequest('u', 'c1', [change('a')]);
    const results = await Promise.all([commit(store, T, req, opts), commit(store, T, req, opts)]);
    store.setLatency(0);
    expect(results.map((r) => r.committed).sort()).toEqual([false, true]);
    expect(results[0].snapshot.id).toBe(results[1].snapshot.id);
    expect(await new SnapshotManager(store, T).listIds()).toEqual([1, 2]);
  });

  it('refuses files already live when a replay is older than the dedup window', async () => {
    const store = new MemoryStore();
    const req = appendRequest('u', 'c1', [change('a')]);
    await commit(store, T, req, opts);
    for (let i = 2; i <= 4; i++) await commit(store, T, appendRequest('u', `c${i}`, [change(`f${i}`)]), opts);
    await expect(commit(store, T, req, { ...opts, dedupLookback: 2 })).rejects.toThrow(/already live/);
    await expect(commit(store, T, req, { ...opts, dedupLookback: 2 })).rejects.toThrow(CommitConflictError);
  });

  it('skips empty commits unless asked, and refuses them on an empty table', async () => {
    const store = new MemoryStore();
    const empty: CommitRequest = { commitUser: 'u', commitIdentifier: 'e', kind: 'APPEND', schemaId: 0, batches: [] };
    await expect(commit(store, T, empty, opts)).rejects.toThrow(InvalidArgumentError);
    await commit(store, T, appendRequest('u', 'c1', [change('a')]), opts);
    const keys = store.keys();
    const skipped = await commit(store, T, empty, opts);
    expect(skipped).toMatchObject({ committed: false, alreadyCommitted: false, attempts: 0 });
    expect(skipped.snapshot.id).toBe(1);
    expect(store.keys()).toEqual(keys);
    const forced = await commit(store, T, { ...empty, allowEmpty: true }, opts);
    expect(forced.snapshot).toMatchObject({ id: 2, deltaRecordCount: 0, totalRecordCount: 1 });
  });

  it.each<[string, CommitRequest]>([
    ['an APPEND that removes files', { ...appendRequest('u', 'x', [change('a')]), compactBefore: [change('a')] }],
    [
      'a COMPACT with new batches',
      { ...compact('x', [], [l1('b', 0, 1)]), batches: [{ rowCount: 1, newFiles: [change('a')], changelogFiles: [] }] },
    ],
    ['a batch file numbered past its batch', appendRequest('u', 'x', [change('a', { maxSequenceNumber: 7 })], 3)],
    ['a batch file with a sequence base', appendRequest('u', 'x', [change('a', { sequenceBase: 4 })])],
    ['the same file twice', appendRequest('u', 'x', [change('a'), change('a')])],
    ['a bucket outside totalBuckets', appendRequest('u', 'x', [change('a', {}, { bucket: 2, totalBuckets: 2 })])],
    ['no identifier', { ...appendRequest('u', '', [change('a')]) }],
  ])('rejects %s', async (_what, req) => {
    await expect(commit(new MemoryStore(), T, req, opts)).rejects.toThrow(InvalidArgumentError);
  });

  it('keeps the bucket count of a partition, unless the whole partition is overwritten', async () => {
    const store = new MemoryStore();
    const at = (bucket: number, totalBuckets: number) => ({ partition: 'dt=1', bucket, totalBuckets });
    await commit(store, T, appendRequest('u', 'c1', [change('a', {}, at(0, 2))]), opts);
    await commit(
      store,
      T,
      appendRequest('u', 'c2', [change('other', {}, { partition: 'dt=2', bucket: 3, totalBuckets: 4 })]),
      opts,
    );
    const wrong = commit(store, T, appendRequest('u', 'c3', [change('b', {}, at(1, 4))]), opts);
    await expect(wrong).rejects.toThrow(CommitConflictError);
    await expect(commit(store, T, appendRequest('u', 'c3', [change('b', {}, at(1, 4))]), opts)).rejects.toThrow(
      /has 2 buckets.*4 buckets/,
    );
    await expect(
      commit(store, T, appendRequest('u', 'c4', [change('b', {}, at(0, 2)), change('c', {}, at(0, 4))]), opts),
    ).rejects.toThrow(CommitConflictError);
    const overwrite: CommitRequest = {
      commitUser: 'u',
      commitIdentifier: 'ow',
      kind: 'OVERWRITE',
      schemaId: 0,
      compactBefore: [change('a', {}, at(0, 2))],
      batches: [{ rowCount: 1, newFiles: [change('b', {}, at(3, 4))], changelogFiles: [] }],
    };
    const { snapshot } = await commit(store, T, overwrite, opts);
    expect((await readLiveFiles(store, T, snapshot)).map((e) => [e.file.fileName, e.totalBuckets]).sort()).toEqual([
      ['b', 4],
      ['other', 4],
    ]);
  });

  it('carries the watermark forward as a maximum', async () => {
    const store = new MemoryStore();
    await commit(store, T, { ...appendRequest('u', 'c1', [change('a')]), watermark: 50 }, opts);
    const { snapshot: s2 } = await commit(
      store,
      T,
      { ...appendRequest('u', 'c2', [change('b')]), watermark: 20 },
      opts,
    );
    const { snapshot: s3 } = await commit(store, T, appendRequest('u', 'c3', [change('c')]), opts);
    expect([s2.watermark, s3.watermark]).toEqual([50, 50]);
  });

  it('gives up after maxRetries of 409s, and retries them transparently below', async () => {
    const store = new MemoryStore();
    store.injectConflicts(3, 'snapshot-1');
    const retries: string[] = [];
    const ok = await commit(store, T, appendRequest('u', 'c1', [change('a')]), {
      ...opts,
      onRetry: (_n, why) => retries.push(why),
    });
    expect(ok.snapshot.id).toBe(1);
    expect(retries).toHaveLength(3);
    store.injectConflicts(100, 'snapshot-2');
    await expect(commit(store, T, appendRequest('u', 'c2', [change('b')]), { ...opts, maxRetries: 4 })).rejects.toThrow(
      CommitRetriesExhaustedError,
    );
    expect(await new SnapshotManager(store, T).latestId()).toBe(1);
    store.clearFaults();
    store.injectConflicts(100, 'snapshot-2');
    await expect(commit(store, T, appendRequest('u', 'c2', [change('b')]), { ...opts, timeoutMs: 0 })).rejects.toThrow(
      /gave up after 0 retries/,
    );
  });

  it('retries a lost race on the snapshots that landed during its backoff: commits landing meanwhile do not starve it', async () => {
    // Prepare: a rival (another process) commits during every backoff of the committer under
    // test, and once just before its first snapshot put; each store call of the committer waits
    // until the rival's commit has landed, so the interleaving is the same on any machine.
    const store = new MemoryStore();
    await commit(store, T, appendRequest('rival', 'r0', [change('r0')]), opts);
    let rival: Promise<unknown> = Promise.resolve();
    let rivals = 0;
    const startRival = () => {
      const n = ++rivals;
      rival = commit(store, T, appendRequest('rival', `r${n}`, [change(`r${n}`)]), opts);
    };
    let firstSnapshotPut = true;
    const gated = new Proxy(store, {
      get(target, prop) {
        const v = Reflect.get(target, prop) as unknown;
        if (typeof v !== 'function') return v;
        if (prop === 'list') return (v as (...a: unknown[]) => unknown).bind(target); // a generator: not gated
        return async (...args: unknown[]) => {
          if (prop === 'putIfAbsent' && firstSnapshotPut && String(args[0]).includes('/snapshot/snapshot-')) {
            firstSnapshotPut = false;
            startRival();
          }
          await rival;
          return (v as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    const retries: string[] = [];

    // Act
    const r = await commit(gated, T, appendRequest('u', 'c1', [change('a')]), {
      ...opts,
      maxRetries: 5,
      onRetry: (_n, why) => {
        retries.push(why);
        startRival();
      },
    });

    // Assess: one lost race, one backoff (during which snapshot 3 landed), then snapshot 4
    expect(retries).toEqual(['lost the race for snapshot 2; retrying after snapshot 2']);
    expect(r).toMatchObject({ committed: true, attempts: 2 });
    expect(r.snapshot.id).toBe(4);
    expect((await new SnapshotManager(store, T).latest())?.commitIdentifier).toBe('c1');
  });

  it('refuses a snapshot manager made for another table', async () => {
    const store = new MemoryStore();
    const other = new SnapshotManager(store, 'db.db/other');
    await expect(
      commit(store, T, appendRequest('u', 'c1', [change('a')]), { ...opts, snapshotManager: other }),
    ).rejects.toThrow(InvalidArgumentError);
  });
});

describe('commit conflicts', () => {
  async function tableWithL0(store: MemoryStore): Promise<void> {
    await commit(store, T, appendRequest('u', 'c1', [change('a', { minKey: [0], maxKey: [10] })]), opts);
    await commit(store, T, appendRequest('u', 'c2', [change('b', { minKey: [5], maxKey: [20] })]), opts);
  }

  it('fails the second of two compactions removing the same file, without retrying', async () => {
    const store = new MemoryStore();
    await tableWithL0(store);
    await commit(store, T, compact('k1', [change('a', { minKey: [0], maxKey: [10] })], [l1('x', 0, 10)]), opts);
    const retried: string[] = [];
    const second = commit(store, T, compact('k2', [change('a', { minKey: [0], maxKey: [10] })], [l1('y', 0, 10)]), {
      ...opts,
      onRetry: (_n, r) => retried.push(r),
    });
    await expect(second).rejects.toThrow(CommitConflictError);
    await expect(commit(store, T, compact('k3', [change('a')], [l1('z', 0, 10)]), opts)).rejects.toThrow(
      /no longer live.*bucket-0\/a/,
    );
    expect(retried).toEqual([]);
    expect(await new SnapshotManager(store, T).latestId()).toBe(3);
  });

  it('fails a compaction whose level-1 output overlaps another level-1 file', async () => {
    const store = new MemoryStore();
    await tableWithL0(store);
    await commit(store, T, compact('k1', [change('a', { minKey: [0], maxKey: [10] })], [l1('x', 0, 10)]), opts);
    const overlapping = compact('k2', [change('b', { minKey: [5], maxKey: [20] })], [l1('y', 10, 20)]);
    await expect(commit(store, T, overlapping, opts)).rejects.toThrow(/overlap in key range on level 1/);
    const apart = compact('k3', [change('b', { minKey: [5], maxKey: [20] })], [l1('y', 11, 20)]);
    expect((await commit(store, T, apart, opts)).snapshot.id).toBe(4);
  });

  it('lands both an APPEND and a COMPACT that race for the same snapshot id', async () => {
    const store = new MemoryStore();
    await tableWithL0(store);
    store.setLatency(2);
    const [appended, compacted] = await Promise.all([
      commit(store, T, appendRequest('u', 'c3', [change('c')]), opts),
      commit(store, T, compact('k1', [change('a', { minKey: [0], maxKey: [10] })], [l1('x', 0, 10)]), opts),
    ]);
    store.setLatency(0);
    expect(new Set([appended.snapshot.id, compacted.snapshot.id])).toEqual(new Set([3, 4]));
    expect(appended.attempts + compacted.attempts).toBeGreaterThanOrEqual(3); // one of them lost the race
    const latest = (await new SnapshotManager(store, T).latest())!;
    expect((await readLiveFiles(store, T, latest)).map((e) => e.file.fileName).sort()).toEqual(['b', 'c', 'x']);
  });
});
