/**
 * Compaction on the write path: the compaction trigger after a commit, the lookup producer
 * taking level 0 up after every write, full-compaction.delta-commits, and the write stall.
 */
import { describe, expect, it } from 'vitest';
import { WriteStallError } from '../../lib/errors.js';
import { FULL_COMPACTION_PROPERTY, compactTable } from '../../lib/maintenance/compact.js';
import { INLINE_COMPACTION, beforeAppendCommit } from '../../lib/maintenance/compact-trigger.js';
import type { CommitKind } from '../../lib/snapshot/snapshot.js';
import { RowKind } from '../../lib/schema/types.js';
import { Table } from '../../lib/table/table.js';
import { liveFilesByBucket, newTable, readState, writeChanges, type Change } from './fixtures.js';

const upserts = (ids: number[], v: bigint): Change[] =>
  ids.map((id) => ({ row: { id, region: 'eu', v, s: null }, kind: RowKind.INSERT }));

async function kinds(table: Table): Promise<CommitKind[]> {
  const out: CommitKind[] = [];
  for (let id = 1; id <= ((await table.snapshots.latestId()) ?? 0); id++)
    out.push((await table.snapshots.read(id)).commitKind);
  return out;
}

async function sortedRuns(table: Table): Promise<number> {
  const files = (await liveFilesByBucket(table)).get('region=eu#0') ?? [];
  const level0 = files.filter((e) => e.file.level === 0).length;
  return level0 + new Set(files.filter((e) => e.file.level > 0).map((e) => e.file.level)).size;
}

describe('after an APPEND commit', () => {
  it('one lookup-producer write into 18 partition-buckets makes one APPEND and one COMPACT snapshot', async () => {
    const table = await newTable({ 'changelog-producer': 'lookup', bucket: '3' });
    const regions = ['eu', 'us', 'ap', 'sa', 'af', 'oc'];
    const rows: Change[] = regions.flatMap((region) =>
      Array.from({ length: 30 }, (_, i) => ({ row: { id: i, region, v: 1n, s: null }, kind: RowKind.INSERT })),
    );

    await writeChanges(table, rows);

    // Was 19: the APPEND and one COMPACT per partition-bucket.
    expect(await kinds(table)).toEqual(['APPEND', 'COMPACT']);
    const buckets = await liveFilesByBucket(table);
    expect(buckets.size).toBe(18);
    for (const [bucket, files] of buckets)
      expect(
        files.every((e) => e.file.level > 0),
        bucket,
      ).toBe(true);
    const compact = (await table.snapshots.latest())!;
    expect(compact.changelogRecordCount).toBe(180);
  });

  it('compacts a bucket once its sorted runs reach the trigger', async () => {
    const table = await newTable({});
    for (let i = 0; i < 4; i++) await writeChanges(table, upserts([1, 2, 3], BigInt(i)));
    expect(await kinds(table)).toEqual(['APPEND', 'APPEND', 'APPEND', 'APPEND']);

    await writeChanges(table, upserts([1, 2, 3], 9n));

    expect(await kinds(table)).toEqual(['APPEND', 'APPEND', 'APPEND', 'APPEND', 'APPEND', 'COMPACT']);
    expect(await sortedRuns(table)).toBe(1);
    expect((await readState(table)).get('eu|1')?.v).toBe(9n);
  });

  it('takes every level-0 file up after each write under the lookup producer', async () => {
    const table = await newTable({ 'changelog-producer': 'lookup' });
    for (let i = 0; i < 3; i++) {
      await writeChanges(table, upserts([1, 2, 3], BigInt(i)));
      const files = (await liveFilesByBucket(table)).get('region=eu#0')!;
      expect(files.filter((e) => e.file.level === 0)).toEqual([]);
      const latest = (await table.snapshots.latest())!;
      expect(latest.commitKind).toBe('COMPACT');
      expect(latest.changelogManifestList).toBeDefined();
    }
  });

  it('runs a full compaction every full-compaction.delta-commits APPEND commits', async () => {
    const table = await newTable({ 'full-compaction.delta-commits': '2' });
    const full: number[] = [];
    for (let i = 0; i < 6; i++) {
      await writeChanges(table, upserts([1, 2, 3], BigInt(i)));
      const latest = (await table.snapshots.latest())!;
      if (latest.properties?.[FULL_COMPACTION_PROPERTY] === 'true') full.push(i + 1);
    }
    expect(full).toEqual([2, 4, 6]);
  });

  it('leaves compaction to the compaction job on a write-only table', async () => {
    const table = await newTable({ 'write-only': 'true', 'changelog-producer': 'lookup' });
    for (let i = 0; i < 5; i++) await writeChanges(table, upserts([1, 2, 3], BigInt(i)));
    expect(new Set(await kinds(table))).toEqual(new Set(['APPEND']));
  });
});

describe('write stall (num-sorted-run.stop-trigger)', () => {
  const stalling = {
    'write-only': 'true',
    'num-sorted-run.compaction-trigger': '2',
    'num-sorted-run.stop-trigger': '3',
  };

  it('refuses a write into a bucket over the stop trigger on a write-only table, until compaction catches up', async () => {
    const table = await newTable(stalling);
    for (let i = 0; i < 4; i++) await writeChanges(table, upserts([1, 2], BigInt(i)));

    const stalled = writeChanges(table, upserts([1, 2], 9n));

    await expect(stalled).rejects.toThrow(WriteStallError);
    await expect(stalled).rejects.toThrow(/4 sorted runs.*stop-trigger \(3\).*varve compact db\.t/);
    expect(await table.snapshots.latestId()).toBe(4);
    await compactTable(table);
    await writeChanges(table, upserts([1, 2], 9n));
    expect((await readState(table)).get('eu|1')?.v).toBe(9n);
  });

  it('stalls every concurrent writer into the bucket over the trigger, and only those, until a compaction lands', async () => {
    const table = await newTable(stalling);
    for (let i = 0; i < 4; i++) await writeChanges(table, upserts([1, 2], BigInt(i)));
    const into = (region: string, v: bigint): Change[] => [
      { row: { id: 7, region, v, s: null }, kind: RowKind.INSERT },
    ];

    // Writers of one table object check the same snapshot side by side (the counts are shared).
    const results = await Promise.allSettled([
      writeChanges(table, into('eu', 10n)),
      writeChanges(table, into('us', 11n)),
      writeChanges(table, into('eu', 12n)),
      writeChanges(table, into('us', 13n)),
    ]);

    expect(results.map((r) => r.status)).toEqual(['rejected', 'fulfilled', 'rejected', 'fulfilled']);
    for (const r of [results[0], results[2]])
      expect((r as PromiseRejectedResult).reason).toBeInstanceOf(WriteStallError);
    await compactTable(table);
    await Promise.all([writeChanges(table, into('eu', 14n)), writeChanges(table, into('us', 15n))]);
    const state = await readState(table);
    expect([state.get('eu|7')?.v, state.get('us|7')?.v]).toEqual([14n, 15n]);
  });

  it('compacts the bucket first when the table is not write-only', async () => {
    const table = await newTable(stalling);
    for (let i = 0; i < 4; i++) await writeChanges(table, upserts([1, 2], BigInt(i)));
    // The same table seen by a writer that compacts (as if write-only were switched off).
    const writer = new Table(
      table.store,
      table.name,
      table.path,
      { ...table.schema, options: { ...table.schema.options, 'write-only': 'false' } },
      INLINE_COMPACTION,
    );

    await beforeAppendCommit(writer, [{ partition: 'region=eu', bucket: 0 }]);

    expect((await table.snapshots.latest())!.commitKind).toBe('COMPACT');
    expect(await sortedRuns(table)).toBeLessThanOrEqual(3);
    await writeChanges(writer, upserts([1, 2], 9n));
    expect((await readState(table)).get('eu|2')?.v).toBe(9n);
  });
});
