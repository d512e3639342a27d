import { describe, expect, it } from 'vitest';
import { readChangelogFiles, readDeltaEntries, readLiveFiles } from '../../lib/manifest/scan.js';
import { manifestDir } from '../../lib/manifest/table-paths.js';
import { commit } from '../../lib/snapshot/commit.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { appendRequest, change, testCommitOptions } from './factories.js';

const T = 'db.db/scan';

async function appendTo(store: MemoryStore, id: string, partition: string, bucket: number, totalBuckets = 2) {
  const req = appendRequest('u', id, [change(`data-${id}`, { rowCount: 2 }, { partition, bucket, totalBuckets })]);
  return (await commit(store, T, req, testCommitOptions())).snapshot;
}

function names(entries: { file: { fileName: string } }[]): string[] {
  return entries.map((e) => e.file.fileName).sort();
}

function manifestReads(store: MemoryStore): string[] {
  return store.callLog
    .filter(
      (c) => c.op === 'get' && c.key.startsWith(manifestDir(T) + 'manifest-') && !c.key.includes('manifest-list-'),
    )
    .map((c) => c.key);
}

describe('scan', () => {
  it('reads the live files of a snapshot with deletes applied', async () => {
    // Prepare
    const store = new MemoryStore();
    await appendTo(store, '1', 'p=1', 0);
    await appendTo(store, '2', 'p=1', 0);
    await appendTo(store, '3', 'p=2', 1);
    const compacted = await commit(
      store,
      T,
      {
        commitUser: 'c',
        commitIdentifier: 'compact-1',
        kind: 'COMPACT',
        schemaId: 0,
        compactBefore: [change('data-1', { rowCount: 2 }, { partition: 'p=1', bucket: 0, totalBuckets: 2 })],
        compactAfter: [
          change(
            'data-c',
            { rowCount: 2, level: 1, fileSource: 'COMPACT' },
            { partition: 'p=1', bucket: 0, totalBuckets: 2 },
          ),
        ],
      },
      testCommitOptions(),
    );
    // Act
    const files = await readLiveFiles(store, T, compacted.snapshot);
    const delta = await readDeltaEntries(store, T, compacted.snapshot);
    // Assess
    expect(names(files)).toEqual(['data-2', 'data-3', 'data-c']);
    expect(files.every((e) => e.kind === 'ADD')).toBe(true);
    expect(delta.map((e) => `${e.kind} ${e.file.fileName}`)).toEqual(['DELETE data-1', 'ADD data-c']);
  });

  it('filters by partition and bucket and skips manifests that cannot match', async () => {
    const store = new MemoryStore();
    await appendTo(store, '1', 'p=1', 0);
    await appendTo(store, '2', 'p=2', 1);
    await appendTo(store, '3', 'p=3', 0);
    const last = await appendTo(store, '4', 'p=2', 0);

    store.resetCallLog();
    const p2 = await readLiveFiles(store, T, last, { partition: (p) => p === 'p=2' });
    expect(names(p2)).toEqual(['data-2', 'data-4']);
    // Each commit's delta manifest holds one partition: only the two of p=2 are read.
    expect(manifestReads(store)).toHaveLength(2);

    store.resetCallLog();
    const b1 = await readLiveFiles(store, T, last, { buckets: new Set([1]) });
    expect(names(b1)).toEqual(['data-2']);
    expect(manifestReads(store)).toHaveLength(1);

    const ranged = await readLiveFiles(store, T, last, {
      partition: (p) => p >= 'p=2',
      partitionRange: (_min, max) => max >= 'p=2',
    });
    expect(names(ranged)).toEqual(['data-2', 'data-3', 'data-4']);
  });

  it('filters by a set of buckets and skips the manifests whose bucket range holds none of them', async () => {
    // Prepare: one manifest per bucket of 4 (as per-bucket compactions write), then one spanning 0..3
    const store = new MemoryStore();
    for (const b of [0, 1, 2, 3]) await appendTo(store, `b${b}`, '', b, 4);
    const spanning = appendRequest('u', 'span', [
      change('data-s0', { rowCount: 2 }, { partition: '', bucket: 0, totalBuckets: 4 }),
      change('data-s3', { rowCount: 2 }, { partition: '', bucket: 3, totalBuckets: 4 }),
    ]);
    const last = (await commit(store, T, spanning, testCommitOptions())).snapshot;

    // Act
    store.resetCallLog();
    const b12 = await readLiveFiles(store, T, last, { buckets: new Set([1, 2]) });
    const reads12 = manifestReads(store).length;
    store.resetCallLog();
    const b13 = await readLiveFiles(store, T, last, { buckets: new Set([1, 3]) });
    const reads13 = manifestReads(store).length;

    // Assess: buckets 1 and 2 are in two manifests of their own and inside the spanning one's range
    // (0..3), which is read and yields nothing of theirs; buckets 1 and 3 likewise
    expect(names(b12)).toEqual(['data-b1', 'data-b2']);
    expect(reads12).toBe(3);
    expect(names(b13)).toEqual(['data-b1', 'data-b3', 'data-s3']);
    expect(reads13).toBe(3);
  });

  it('reads changelog files with absolute sequence numbers, and none when a snapshot has no changelog', async () => {
    const store = new MemoryStore();
    const first = await appendTo(store, '1', '', 0, 1);
    const req = appendRequest('u', '2', [change('data-2', { rowCount: 3 })]);
    req.batches![0].changelogFiles = [change('changelog-2', { rowCount: 3 })];
    const { snapshot } = await commit(store, T, req, testCommitOptions());
    const log = await readChangelogFiles(store, T, snapshot);
    expect(names(log)).toEqual(['changelog-2']);
    expect(log[0].file).toMatchObject({ sequenceBase: 2, minSequenceNumber: 2, maxSequenceNumber: 4 });
    expect(snapshot.changelogRecordCount).toBe(3);
    expect(await readChangelogFiles(store, T, first)).toEqual([]);
  });
});
