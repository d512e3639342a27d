/**
 * Compaction under concurrency: two compactions of one bucket (one wins, the other re-plans and
 * finds nothing or compacts what the winner left, and its own outputs are deleted), and APPEND
 * commits racing compactions (never blocked, never lost).
 */
import { describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { CommitConflictError } from '../../lib/errors.js';
import { compactBucket, compactBuckets, compactTable, readBucketFiles } from '../../lib/maintenance/compact.js';
import { readChangelogFiles, readLiveFiles } from '../../lib/manifest/scan.js';
import { RowKind } from '../../lib/schema/types.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { listAll } from '../../lib/store/object-store.js';
import type { Table } from '../../lib/table/table.js';
import { rng, testSeed } from '../helpers/random.js';
import { checkLevels, newTable, readState, sorted, writeChanges, type Change, type State } from './fixtures.js';

const upserts = (ids: number[], v: bigint): Change[] =>
  ids.map((id) => ({ row: { id, region: 'eu', v, s: null }, kind: RowKind.INSERT }));

/** Data and changelog files in the store that no snapshot references. */
async function unreferencedFiles(table: Table): Promise<string[]> {
  const referenced = new Set<string>();
  for (let id = 1; id <= ((await table.snapshots.latestId()) ?? 0); id++) {
    const s = await table.snapshots.read(id);
    for (const e of [
      ...(await readLiveFiles(table.store, table.path, s)),
      ...(await readChangelogFiles(table.store, table.path, s)),
    ])
      referenced.add(e.file.fileName);
  }
  const names = (await listAll(table.store, `${table.path}/`)).map((o) => o.key.split('/').pop()!);
  return names.filter((n) => /^(data|changelog)-/.test(n) && !referenced.has(n));
}

describe('concurrent compactions of one bucket', () => {
  it('one wins; the other re-plans, finds nothing due, and leaves no file behind', async () => {
    const store = new MemoryStore();
    const table = await newTable({ 'write-only': 'true', 'changelog-producer': 'full-compaction' }, store);
    for (let i = 0; i < 6; i++) await writeChanges(table, upserts([1, 2, 3, 4, 5, 6], BigInt(i)));
    const expected = sorted(await readState(table));
    const other = await new FolderCatalog(store).getTable('db.t');
    const snapshot = (await table.snapshots.latest())!;
    const entries = await readBucketFiles(table, snapshot, 'region=eu', 0);
    store.setLatency(1);

    // Both plan from the same snapshot, so the second commit finds its inputs gone. (Two jobs
    // with the very same plan would be one job run twice: the second would find it committed.)
    const results = await Promise.all([
      compactBucket(table, 'region=eu', 0, { full: true, entries }),
      compactBucket(other, 'region=eu', 0, { full: false, entries }),
    ]);
    store.setLatency(0);

    const winners = results.filter((r) => r.snapshot !== undefined);
    expect(winners.every((r) => !r.alreadyCommitted)).toBe(true);
    expect(winners).toHaveLength(1);
    const loser = results.find((r) => r.snapshot === undefined)!;
    expect(loser.attempts).toBe(2);
    expect(sorted(await readState(table))).toEqual(expected);
    expect(await unreferencedFiles(table)).toEqual([]);
    await checkLevels(table, 'after the race');
  });

  it('the loser compacts the new state when the winner left work to do', async () => {
    const store = new MemoryStore();
    const table = await newTable({ 'write-only': 'true' }, store);
    for (let i = 0; i < 6; i++) await writeChanges(table, upserts([1, 2, 3], BigInt(i)));
    const snapshot = (await table.snapshots.latest())!;
    const entries = await readBucketFiles(table, snapshot, 'region=eu', 0);
    // The first job compacts and commits; then more data arrives before the second one commits.
    await compactBucket(table, 'region=eu', 0, { entries });
    for (let i = 0; i < 5; i++) await writeChanges(table, upserts([2, 7], 10n + BigInt(i)));

    const late = await compactBucket(table, 'region=eu', 0, { full: true, entries });

    expect(late.attempts).toBe(2);
    expect(late.snapshot).toBeDefined();
    expect(late.filesIn).toBeGreaterThan(0);
    expect((await readState(table)).get('eu|2')?.v).toBe(14n);
    expect(await unreferencedFiles(table)).toEqual([]);
  });
});

describe('APPEND commits racing compactions', () => {
  it('are never blocked or lost', async () => {
    const seed = testSeed('compact-concurrency/append-race');
    const r = rng(seed);
    const store = new MemoryStore();
    const table = await newTable(
      {
        'write-only': 'true',
        bucket: '2',
        'num-sorted-run.compaction-trigger': '2',
        'num-sorted-run.stop-trigger': '1000',
      },
      store,
    );
    const compactor = await new FolderCatalog(store).getTable('db.t');
    const model: State = new Map();
    store.setLatency(1);
    for (let round = 0; round < 12; round++) {
      const batch: Change[] = [];
      for (let i = r.int(1, 15); i > 0; i--) {
        const id = r.int(1, 30);
        if (batch.some((c) => c.row.id === id)) continue;
        batch.push({ row: { id, region: 'eu', v: BigInt(r.int(0, 99)), s: null }, kind: RowKind.INSERT });
      }
      const [written, compacted] = await Promise.all([
        writeChanges(table, batch),
        compactTable(compactor, { full: r.chance(0.3) }),
      ]);
      for (const c of batch) model.set(`eu|${c.row.id}`, { v: c.row.v as bigint, s: null });
      expect(written.snapshot?.commitKind, `seed ${seed}, round ${round}`).toBe('APPEND');
      // A compaction planned before the append still commits after it: a lost race, not a conflict.
      expect(compacted.conflicts, `seed ${seed}, round ${round}`).toBe(0);
    }
    store.setLatency(0);
    expect(sorted(await readState(table)), `seed ${seed}`).toEqual(sorted(model));
    await checkLevels(table, `seed ${seed}`);
  });
});

describe('a compaction run over several buckets racing a compaction of one of them', () => {
  async function threeBuckets(store: MemoryStore) {
    const table = await newTable({ 'write-only': 'true', bucket: '3' }, store);
    for (let i = 0; i < 6; i++)
      await writeChanges(
        table,
        upserts(
          Array.from({ length: 30 }, (_, k) => k + 1),
          BigInt(i),
        ),
      );
    const snapshot = (await table.snapshots.latest())!;
    const groups = await Promise.all(
      [0, 1, 2].map(async (bucket) => ({
        partition: 'region=eu',
        bucket,
        entries: await readBucketFiles(table, snapshot, 'region=eu', bucket),
      })),
    );
    return { table, groups };
  }

  it('drops the changed bucket from its one commit; the other buckets land, nothing is left behind', async () => {
    const store = new MemoryStore();
    const { table, groups } = await threeBuckets(store);
    const expected = sorted(await readState(table));
    // Another compactor takes bucket 1 after the run planned on the same snapshot.
    await compactBucket(await new FolderCatalog(store).getTable('db.t'), 'region=eu', 1, { full: true });
    const before = (await table.snapshots.latestId())!;

    const run = await compactBuckets(table, groups);

    // One snapshot for buckets 0 and 2; bucket 1, re-planned, has nothing due.
    expect(run.snapshots).toEqual([before + 1]);
    expect(run.conflicted).toEqual([]);
    const byBucket = new Map(run.results.map((r) => [r.bucket, r]));
    expect(byBucket.get(0)?.snapshot?.id).toBe(before + 1);
    expect(byBucket.get(2)?.snapshot?.id).toBe(before + 1);
    expect(byBucket.get(1)?.snapshot).toBeUndefined();
    expect(byBucket.get(1)?.attempts).toBe(2);
    expect(sorted(await readState(table))).toEqual(expected);
    expect(await unreferencedFiles(table)).toEqual([]);
    await checkLevels(table, 'after the race');
  });

  it('gives the changed bucket up after maxAttempts plans: the others land, it is reported with its conflict', async () => {
    const store = new MemoryStore();
    const { table, groups } = await threeBuckets(store);
    const expected = sorted(await readState(table));
    await compactBucket(await new FolderCatalog(store).getTable('db.t'), 'region=eu', 1, { full: true });
    const before = (await table.snapshots.latestId())!;

    // One plan per bucket: bucket 1's conflict uses up the run's budget at once.
    const run = await compactBuckets(table, groups, { maxAttempts: 1 });

    expect(run.snapshots).toEqual([before + 1]);
    expect(run.conflicted.map((c) => c.bucket)).toEqual([1]);
    expect(run.conflicted[0].error).toBeInstanceOf(CommitConflictError);
    expect(run.results.map((r) => r.bucket).sort()).toEqual([0, 2]);
    expect(sorted(await readState(table))).toEqual(expected);
    expect(await unreferencedFiles(table)).toEqual([]);
    // A one-bucket run throws the conflict it gave up on: planned on bucket 0's files the run replaced.
    const stale = groups[0].entries;
    await expect(
      compactBucket(table, 'region=eu', 0, { full: true, entries: stale, maxAttempts: 1 }),
    ).rejects.toBeInstanceOf(CommitConflictError);
  });

  it('re-plans the changed bucket and commits it in a second snapshot when work remains', async () => {
    const store = new MemoryStore();
    const { table, groups } = await threeBuckets(store);
    await compactBucket(table, 'region=eu', 1, { full: true });
    // Bucket 1 is due again: five more runs of one of its keys after its full compaction.
    const inBucket1 = (await readBucketFiles(table, (await table.snapshots.latest())!, 'region=eu', 1))[0].file
      .minKey[1] as number;
    for (let i = 0; i < 5; i++) await writeChanges(table, upserts([inBucket1], 100n + BigInt(i)));
    const expected = sorted(await readState(table));
    const before = (await table.snapshots.latestId())!;

    const run = await compactBuckets(table, groups);

    expect(run.snapshots).toEqual([before + 1, before + 2]);
    const byBucket = new Map(run.results.map((r) => [r.bucket, r]));
    expect(byBucket.get(1)?.attempts).toBe(2);
    expect(byBucket.get(1)?.snapshot?.id).toBe(before + 2);
    expect(sorted(await readState(table))).toEqual(expected);
    expect((await readState(table)).get(`eu|${inBucket1}`)?.v).toBe(104n);
    expect(await unreferencedFiles(table)).toEqual([]);
  });
});
