/**
 * What a cold writer reads to route rows (issue 32): each partition's bucket count is the count its
 * live files were written for, found in the manifests of the latest snapshot. A write touching 1
 * of N partitions reads only manifests whose partition range (the manifest list's statistics)
 * holds it, newest first, and stops at the first that names a live file of it: the newest one
 * when the last commit wrote that partition. That is the fall back: a snapshot carrying its
 * partitions' bucket counts (lib/snapshot/bucket-summary.ts, every snapshot varve commits since
 * 2026-12-07 unless over its size cap) answers without a manifest read; each case runs both ways,
 * the latest snapshot's summary taken out for the second (as a table older than it). Counted on
 * the store under a fresh table object, in queue mode (the ingest function's landing: files
 * written, the batch handed on, no commit).
 */
import { describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { BUCKETS_PROPERTY } from '../../lib/snapshot/bucket-summary.js';
import { snapshotKey } from '../../lib/snapshot/paths.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import type { ObjectStore } from '../../lib/store/object-store.js';
import type { CommitMessage } from '../../lib/table/commit-message.js';
import { landRows } from '../../lib/table/land-rows.js';
import { testTable } from '../helpers/tables.js';

const N = 8;
const day = (p: number) => `2024-01-0${p + 1}`;

/** `inner`, with the manifest GETs (key and bytes) recorded in `reads`. */
function manifestReads(inner: ObjectStore, reads: Array<{ key: string; bytes: number }>): ObjectStore {
  return {
    uri: inner.uri,
    get: async (key) => {
      const r = await inner.get(key);
      if (/\/manifest\/manifest-(?!list-)/.test(key)) reads.push({ key, bytes: r.body.length });
      return r;
    },
    getRange: (key, a, b) => inner.getRange(key, a, b),
    head: (key) => inner.head(key),
    put: (key, b) => inner.put(key, b),
    putIfAbsent: (key, b) => inner.putIfAbsent(key, b),
    putIfMatch: (key, b, e) => inner.putIfMatch(key, b, e),
    delete: (key) => inner.delete(key),
    list: (p) => inner.list(p),
  };
}

/** Lands 5 rows of partition `dt` from a fresh table object (queue mode); the manifests it read. */
async function coldWrite(store: MemoryStore, dt: string): Promise<Array<{ key: string; bytes: number }>> {
  const reads: Array<{ key: string; bytes: number }> = [];
  const table = await new FolderCatalog(manifestReads(store, reads)).getTable('db.t');
  const sent: CommitMessage[] = [];
  const rows = Array.from({ length: 5 }, (_, i) => ({ dt, id: BigInt(10_000 + i), v: 'new' }));
  await landRows(
    table,
    rows,
    rows.map(() => 0),
    { commitUser: 'ingest', commitIdentifier: `cold-${dt}`, enqueue: async (m) => void sent.push(m) },
  );
  expect(sent).toHaveLength(1);
  return reads;
}

async function partitioned(store: MemoryStore) {
  return testTable({
    store,
    schema: 'dt STRING, id BIGINT, v STRING',
    primaryKeys: ['dt', 'id'],
    partitionKeys: ['dt'],
    options: { bucket: '2' },
  });
}

describe('routing reads of a cold write to 1 of N partitions', () => {
  it('reads only the newest manifest when every commit wrote every partition', async () => {
    // Prepare: 4 commits, each to all N partitions (every manifest's range covers them all)
    const store = new MemoryStore();
    const t = await partitioned(store);
    for (let c = 0; c < 4; c++)
      await t.write(Array.from({ length: 4 * N }, (_, i) => ({ dt: day(i % N), id: BigInt(c * 100 + i), v: 'x' })));
    const all = await manifestSizes(store, t.path);

    // Act
    const carried = await coldWrite(store, day(3));
    await withoutSummary(store, t.path);
    const reads = await coldWrite(store, day(3));

    // Assess: none with the summary; without, one manifest of the 4 (before: all 4, read as one chunk)
    expect(carried).toHaveLength(0);
    const bytes = reads.reduce((a, r) => a + r.bytes, 0);
    console.log(
      `cold write to 1 of ${N} partitions, interleaved: ${reads.length} of ${all.length} manifests, ${bytes} of ${all.reduce((a, b) => a + b, 0)} bytes`,
    );
    expect(reads).toHaveLength(1);
    expect(all.length).toBe(4);
  });

  it("reads only the partition's manifest when each commit wrote one partition", async () => {
    // Prepare: N commits, one partition each (each manifest's range is its partition)
    const store = new MemoryStore();
    const t = await partitioned(store);
    for (let p = 0; p < N; p++)
      await t.write(Array.from({ length: 20 }, (_, i) => ({ dt: day(p), id: BigInt(i), v: 'x' })));
    const all = await manifestSizes(store, t.path);

    // Act
    const carried = await coldWrite(store, day(3));
    await withoutSummary(store, t.path);
    const reads = await coldWrite(store, day(3));

    // Assess: none with the summary; without, the one manifest whose range holds the partition, whatever its age
    expect(carried).toHaveLength(0);
    const bytes = reads.reduce((a, r) => a + r.bytes, 0);
    console.log(
      `cold write to 1 of ${N} partitions, one per commit: ${reads.length} of ${all.length} manifests, ${bytes} of ${all.reduce((a, b) => a + b, 0)} bytes`,
    );
    expect(reads).toHaveLength(1);
    expect(all.length).toBe(N);
  });
});

/** The sizes of the table's manifests (not the lists). */
async function manifestSizes(store: MemoryStore, tablePath: string): Promise<number[]> {
  const sizes: number[] = [];
  for await (const o of store.list(`${tablePath}/manifest/`))
    if (!/manifest-list-/.test(o.key)) sizes.push((await store.get(o.key)).body.length);
  return sizes;
}

/** Takes the per-bucket summary out of the latest snapshot (as a table older than it has none). */
async function withoutSummary(store: MemoryStore, tablePath: string): Promise<void> {
  const table = await new FolderCatalog(store).getTable('db.t');
  const latest = (await table.snapshots.latest())!;
  expect(latest.properties?.[BUCKETS_PROPERTY]).toBeDefined();
  const { [BUCKETS_PROPERTY]: _, ...rest } = latest.properties!;
  await store.put(
    snapshotKey(tablePath, latest.id),
    new TextEncoder().encode(JSON.stringify({ ...latest, properties: rest })),
  );
}
