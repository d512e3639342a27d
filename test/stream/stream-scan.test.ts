/**
 * The stream scan: every `scan.mode`, both follow-up modes (delta for `changelog-producer = none`,
 * changelog for the others), consumer positions, and no silent loss at expired snapshots.
 */
import { describe, expect, it } from 'vitest';
import { OptionError, SnapshotExpiredError } from '../../lib/errors.js';
import { compactTable } from '../../lib/maintenance/compact.js';
import { writeConsumer } from '../../lib/snapshot/consumer.js';
import { StreamScan } from '../../lib/stream/stream-scan.js';
import type { Table } from '../../lib/table/table.js';
import { drain, makeTable, put } from './fixtures.js';

/** Removes snapshots below `below` the way expiry does (earliest marker first, then the files). */
async function expireBelow(table: Table, below: number): Promise<void> {
  await table.snapshots.writeEarliestHint(below);
  for (let id = 1; id < below; id++) await table.store.delete(table.snapshots.snapshotKey(id));
}

const sorted = (xs: string[]) => [...xs].sort();

describe('StreamScan first plan (scan.mode)', () => {
  it('latest-full (the default) delivers the latest state as +I, then follows', async () => {
    // Prepare
    const t = await makeTable();
    await put(t, [
      [1, 'a'],
      [2, 'b'],
    ]);
    await put(t, [[1, 'A']]);
    await put(t, [[2, null]], { delete: true });
    const scan = new StreamScan(t);
    // Act
    const initial = await drain(scan, t);
    await put(t, [[3, 'c']]);
    const follow = await drain(scan, t);
    // Assess
    expect(initial).toEqual(['+I 1=A']);
    expect(follow).toEqual(['+I 3=c']);
  });

  it('full is an alias of latest-full', async () => {
    const t = await makeTable({ 'scan.mode': 'full' });
    await put(t, [[1, 'a']]);
    await put(t, [[1, 'b']]);
    expect(await drain(new StreamScan(t), t, true)).toEqual(['2: +I 1=b']);
  });

  it('latest delivers only changes committed after the stream started', async () => {
    // Prepare
    const t = await makeTable();
    await put(t, [[1, 'a']]);
    const scan = new StreamScan(t, { mode: 'latest' });
    // Act
    const before = await drain(scan, t);
    await put(t, [
      [1, 'b'],
      [2, 'c'],
    ]);
    // Assess
    expect(before).toEqual([]);
    expect(sorted(await drain(scan, t))).toEqual(['+I 1=b', '+I 2=c']);
  });

  it('latest on an empty table starts at snapshot 1', async () => {
    const t = await makeTable();
    const scan = new StreamScan(t, { mode: 'latest' });
    expect(await drain(scan, t)).toEqual([]);
    await put(t, [[1, 'a']]);
    expect(await drain(scan, t, true)).toEqual(['1: +I 1=a']);
  });

  it('earliest delivers the changes of every snapshot from the earliest one', async () => {
    const t = await makeTable();
    await put(t, [[1, 'a']]);
    await put(t, [[1, 'b']]);
    await put(t, [[1, null]], { delete: true });
    expect(await drain(new StreamScan(t, { mode: 'earliest' }), t, true)).toEqual([
      '1: +I 1=a',
      '2: +I 1=b',
      '3: -D 1=null',
    ]);
  });

  it('from-snapshot delivers the changes from that snapshot on; from-snapshot-full its state first', async () => {
    // Prepare
    const t = await makeTable();
    await put(t, [
      [1, 'a'],
      [2, 'b'],
    ]);
    await put(t, [[1, 'A']]);
    await put(t, [[3, 'c']]);
    // Act
    const changes = await drain(new StreamScan(t, { mode: 'from-snapshot', snapshotId: 2 }), t, true);
    const full = await drain(new StreamScan(t, { mode: 'from-snapshot-full', snapshotId: 2 }), t, true);
    // Assess
    expect(changes).toEqual(['2: +I 1=A', '3: +I 3=c']);
    expect(sorted(full.slice(0, 2))).toEqual(['2: +I 1=A', '2: +I 2=b']);
    expect(full.slice(2)).toEqual(['3: +I 3=c']);
  });

  it('from-snapshot takes its id from the table options (Paimon default mode)', async () => {
    const t = await makeTable({ 'scan.snapshot-id': '2' });
    await put(t, [[1, 'a']]);
    await put(t, [[1, 'b']]);
    expect(await drain(new StreamScan(t), t, true)).toEqual(['2: +I 1=b']);
  });

  it('from-timestamp starts at the first snapshot committed at or after the time', async () => {
    // Prepare
    const t = await makeTable();
    await put(t, [[1, 'a']]);
    const s1 = await t.snapshots.read(1);
    await new Promise((r) => setTimeout(r, 5));
    await put(t, [[1, 'b']]);
    const s2 = await t.snapshots.read(2);
    // Act
    const fromS2 = await drain(new StreamScan(t, { mode: 'from-timestamp', timestampMillis: s2.timeMillis }), t, true);
    const fromBefore = await drain(
      new StreamScan(t, { mode: 'from-timestamp', timestampMillis: s1.timeMillis - 1000 }),
      t,
      true,
    );
    // Assess
    expect(fromS2).toEqual(['2: +I 1=b']);
    expect(fromBefore).toEqual(['1: +I 1=a', '2: +I 1=b']);
  });

  it('refuses from-snapshot without a snapshot id', async () => {
    const t = await makeTable();
    expect(() => new StreamScan(t, { mode: 'from-snapshot' })).toThrow(OptionError);
  });
});

describe('StreamScan follow-up', () => {
  it('changelog-producer none: reads APPEND snapshots as written; a compaction in the middle yields nothing', async () => {
    // Prepare
    const t = await makeTable();
    const scan = new StreamScan(t, { mode: 'latest' });
    await drain(scan, t);
    await put(t, [
      [1, 'a'],
      [2, 'b'],
    ]);
    // Act
    const compaction = await compactTable(t, { full: true });
    await put(t, [[2, null]], { delete: true });
    const out = await drain(scan, t, true);
    // Assess
    expect(compaction.snapshots.length).toBeGreaterThan(0);
    expect(out.slice(0, 2).sort()).toEqual(['1: +I 1=a', '1: +I 2=b']);
    expect(out.slice(2)).toEqual([`${compaction.snapshots.at(-1)! + 1}: -D 2=null`]);
  });

  it('changelog-producer lookup: the changelog of every write appears (+I, -U/+U, -D), compaction adds nothing', async () => {
    // Prepare
    const t = await makeTable({ 'changelog-producer': 'lookup' });
    const scan = new StreamScan(t, { mode: 'latest' });
    await drain(scan, t);
    // Act
    await put(t, [
      [1, 'a'],
      [2, 'b'],
    ]);
    await put(t, [[1, 'A']]);
    await compactTable(t, { full: true });
    await put(t, [[2, null]], { delete: true });
    const out = await drain(scan, t);
    // Assess
    expect(sorted(out.slice(0, 2))).toEqual(['+I 1=a', '+I 2=b']);
    expect(out.slice(2)).toEqual(['-U 1=a', '+U 1=A', '-D 2=b']);
  });

  it('changelog-producer lookup: a first full plan skips level-0 files, whose changelog comes with their compaction', async () => {
    // Prepare: write-only, so the level-0 files wait for a compaction
    const t = await makeTable({ 'changelog-producer': 'lookup', 'write-only': 'true' });
    await put(t, [[1, 'a']]);
    await compactTable(t);
    await put(t, [
      [1, 'b'],
      [2, 'c'],
    ]);
    const scan = new StreamScan(t);
    // Act
    const initial = await drain(scan, t);
    await compactTable(t);
    const follow = await drain(scan, t);
    // Assess
    expect(initial).toEqual(['+I 1=a']);
    expect(sorted(follow)).toEqual(['+I 2=c', '+U 1=b', '-U 1=a']);
    expect(follow.indexOf('-U 1=a')).toBeLessThan(follow.indexOf('+U 1=b'));
  });

  it('changelog-producer input: the written records of each APPEND snapshot', async () => {
    const t = await makeTable({ 'changelog-producer': 'input' });
    await put(t, [[1, 'a']]);
    await put(t, [[1, 'b']]);
    await put(t, [[1, null]], { delete: true });
    expect(await drain(new StreamScan(t, { mode: 'earliest' }), t, true)).toEqual([
      '1: +I 1=a',
      '2: +I 1=b',
      '3: -D 1=null',
    ]);
  });

  it('changelog-producer full-compaction: changes appear with the next full compaction', async () => {
    // Prepare
    const t = await makeTable({ 'changelog-producer': 'full-compaction' });
    const scan = new StreamScan(t, { mode: 'latest' });
    await drain(scan, t);
    await put(t, [[1, 'a']]);
    // Act
    const beforeCompaction = await drain(scan, t);
    await compactTable(t, { full: true });
    const afterFirst = await drain(scan, t);
    await put(t, [[1, 'b']]);
    await compactTable(t, { full: true });
    const afterSecond = await drain(scan, t);
    // Assess
    expect(beforeCompaction).toEqual([]);
    expect(afterFirst).toEqual(['+I 1=a']);
    expect(afterSecond).toEqual(['-U 1=a', '+U 1=b']);
  });

  it("orders each key's changes by sequence across the files of one snapshot", async () => {
    // Prepare: a tiny write buffer, so one commit flushes several files per bucket
    const t = await makeTable({ 'write-buffer-size': '1 kb', 'write-buffer-spillable': 'false', bucket: '1' });
    const rows: Array<[number, string]> = [];
    for (let i = 0; i < 200; i++) rows.push([i % 7, `v${i}`]);
    const writer = t.newWriter();
    for (const r of rows) writer.write([{ k: BigInt(r[0]), v: r[1] }]);
    await writer.commit();
    await writer.close();
    // Act
    const out = await drain(new StreamScan(t, { mode: 'earliest' }), t);
    // Assess: for each key, the values it got come in write order
    for (let k = 0; k < 7; k++) {
      const got = out.filter((s) => s.startsWith(`+I ${k}=`)).map((s) => Number(s.split('=v')[1]));
      expect(got).toEqual([...got].sort((a, b) => a - b));
      expect(got.at(-1)).toBe(
        rows
          .filter((r) => r[0] === k)
          .map((r) => Number(r[1].slice(1)))
          .at(-1),
      );
    }
  });
});

describe('StreamScan positions', () => {
  it('starts at a stored consumer position unless consumer.ignore-progress', async () => {
    // Prepare
    const t = await makeTable();
    await put(t, [[1, 'a']]);
    await put(t, [[1, 'b']]);
    await put(t, [[1, 'c']]);
    await writeConsumer(t.store, t.path, 'c1', { nextSnapshot: 3, lastUpdated: Date.now() });
    // Act
    const resumed = await drain(new StreamScan(t, { consumerId: 'c1', mode: 'earliest' }), t, true);
    const ignored = await drain(
      new StreamScan(t, { consumerId: 'c1', mode: 'earliest', ignoreProgress: true }),
      t,
      true,
    );
    // Assess
    expect(resumed).toEqual(['3: +I 1=c']);
    expect(ignored).toEqual(['1: +I 1=a', '2: +I 1=b', '3: +I 1=c']);
  });

  it('fails with the lost range when the start snapshot has expired, unless skip-to-earliest', async () => {
    // Prepare
    const t = await makeTable();
    const ids: number[] = [];
    for (let i = 1; i <= 6; i++) ids.push(await put(t, [[1, `v${i}`]]));
    await expireBelow(t, ids[4]);
    // Act
    const failing = drain(new StreamScan(t, { mode: 'from-snapshot', snapshotId: 3 }), t);
    const skipping = await drain(
      new StreamScan(t, { mode: 'from-snapshot', snapshotId: 3, onExpired: 'skip-to-earliest' }),
      t,
      true,
    );
    // Assess
    await expect(failing).rejects.toBeInstanceOf(SnapshotExpiredError);
    await expect(failing).rejects.toMatchObject({ lostRange: { from: 3, to: ids[4] } });
    expect(skipping).toEqual([`${ids[4]}: +I 1=v5`, `${ids[5]}: +I 1=v6`]);
  });

  it('fails with the lost range when the next snapshot expires while the stream is behind', async () => {
    // Prepare
    const t = await makeTable();
    await put(t, [[1, 'a']]);
    const scan = new StreamScan(t, { mode: 'earliest' });
    expect(await drain(scan, t)).toEqual(['+I 1=a']);
    for (let i = 2; i <= 5; i++) await put(t, [[1, `v${i}`]]);
    // Act
    await expireBelow(t, 4);
    // Assess
    await expect(drain(scan, t)).rejects.toMatchObject({ name: 'SnapshotExpiredError', lostRange: { from: 2, to: 4 } });
  });
});
