/**
 * Overwrite and bulk changes: INSERT OVERWRITE (dynamic partitions or the whole table), truncate,
 * drop-partition, delete by predicate; OVERWRITE snapshots replace what a concurrent commit added
 * to the same partitions, time travel still reads the old state, and a stream skips them with a
 * warning flag.
 */
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../lib/errors.js';
import { tableToRows } from '../../lib/format/columns.js';
import { StreamScan } from '../../lib/stream/stream-scan.js';
import type { Table } from '../../lib/table/table.js';
import { testTable } from '../helpers/tables.js';

function newTable(options: Record<string, string> = {}): Promise<Table> {
  return testTable({
    schema: 'dt STRING NOT NULL, id INT NOT NULL, v STRING',
    primaryKeys: ['dt', 'id'],
    partitionKeys: ['dt'],
    options: { bucket: '2', ...options },
  });
}

const ids = async (t: Table, snapshotId?: number) =>
  tableToRows(await t.read({ snapshotId }), t.schema.fields)
    .map((r) => `${r.dt}/${r.id}/${r.v}`)
    .sort();

describe('overwrite and bulk changes', () => {
  it('overwrite replaces the partitions written to (dynamic, the default) or the whole table', async () => {
    const t = await newTable();
    const before = await t.write([
      { dt: 'a', id: 1, v: 'x' },
      { dt: 'a', id: 2, v: 'x' },
      { dt: 'b', id: 1, v: 'x' },
    ]);
    const dyn = await t.overwrite([{ dt: 'a', id: 3, v: 'y' }]);
    expect(dyn.snapshot!.commitKind).toBe('OVERWRITE');
    expect(await ids(t)).toEqual(['a/3/y', 'b/1/x']);
    await t.overwrite([{ dt: 'c', id: 9, v: 'z' }], { dynamicPartitionOverwrite: false });
    expect(await ids(t)).toEqual(['c/9/z']);
    // Time travel still reads what was overwritten.
    expect(await ids(t, before.snapshot!.id)).toEqual(['a/1/x', 'a/2/x', 'b/1/x']);
  });

  it('an overwrite replaces rows a concurrent commit added to its partitions after it planned', async () => {
    const t = await newTable();
    await t.write([{ dt: 'a', id: 1, v: 'x' }]);
    const writer = t.newWriter();
    await writer.write([{ dt: 'a', id: 5, v: 'new' }]);
    await t.write([
      { dt: 'a', id: 2, v: 'concurrent' },
      { dt: 'b', id: 2, v: 'other partition' },
    ]);
    await writer.commit(undefined, { overwrite: 'dynamic' });
    await writer.close();
    expect(await ids(t)).toEqual(['a/5/new', 'b/2/other partition']);
  });

  it('truncate empties the table; drop-partition removes matching partitions; both refuse nonsense', async () => {
    const t = await newTable();
    await t.write([
      { dt: 'a', id: 1, v: 'x' },
      { dt: 'b', id: 1, v: 'x' },
      { dt: 'c', id: 1, v: 'x' },
    ]);
    await t.dropPartition({ dt: 'b' });
    expect(await ids(t)).toEqual(['a/1/x', 'c/1/x']);
    await expect(t.dropPartition({ dt: 'b' })).rejects.toThrow(/has no partition dt=b/);
    await expect(t.dropPartition({ id: '1' })).rejects.toThrow(InvalidArgumentError);
    const truncated = await t.truncate();
    expect(truncated.snapshot!.commitKind).toBe('OVERWRITE');
    expect(await ids(t)).toEqual([]);
    expect(await t.count()).toBe(0);
  });

  it('delete --where writes -D for the matching keys only; engines where -D does not remove are refused', async () => {
    const t = await newTable();
    await t.write([
      { dt: 'a', id: 1, v: 'keep' },
      { dt: 'a', id: 2, v: 'drop' },
      { dt: 'b', id: 3, v: 'drop' },
    ]);
    await t.write([
      { dt: 'a', id: 1, v: 'drop' },
      { dt: 'a', id: 1, v: 'keep' },
    ]);
    const result = await t.deleteWhere("v = 'drop'");
    expect(result.rows).toBe(2);
    expect(result.snapshot!.commitKind).toBe('APPEND');
    expect(await ids(t)).toEqual(['a/1/keep']);
    const agg = await newTable({ 'merge-engine': 'first-row' });
    await expect(agg.deleteWhere('id = 1')).rejects.toThrow(/merge-engine=first-row/);
  });

  it('a stream skips an OVERWRITE snapshot and flags it', async () => {
    const t = await newTable();
    await t.write([{ dt: 'a', id: 1, v: 'x' }]);
    const scan = new StreamScan(t, { mode: 'earliest' });
    expect((await scan.plan())!.splits.length).toBe(1);
    await t.truncate();
    await t.write([{ dt: 'a', id: 2, v: 'y' }]);
    const skipped = await scan.plan();
    expect(skipped).toMatchObject({ overwriteSkipped: true, splits: [] });
    expect((await scan.plan())!.snapshot.id).toBe(3);
  });
});
