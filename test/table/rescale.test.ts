/**
 * Bucket rescale: `alter --set bucket=N` applies to new partitions only (an existing partition
 * keeps the bucket count its files record, so writes never mix counts); `rescale` rewrites whole
 * partitions into N buckets as one OVERWRITE snapshot with the same rows and sequence order;
 * consumers that have not caught up block it unless forced; append tables with a bucket-key keep
 * their per-key order; the CLI command.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as arrow from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { InvalidArgumentError } from '../../lib/errors.js';
import { tableToRows } from '../../lib/format/columns.js';
import { compactTable } from '../../lib/maintenance/compact.js';
import { readLiveFiles } from '../../lib/manifest/scan.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { RowKind } from '../../lib/schema/types.js';
import { writeConsumer } from '../../lib/snapshot/consumer.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { readAuditLog } from '../../lib/table/audit-log.js';
import { RESCALE_PROPERTY } from '../../lib/table/rescale.js';
import type { Table } from '../../lib/table/table.js';
import { runVarve } from '../helpers/cli-process.js';
import { testTable } from '../helpers/tables.js';

function newTable(options: Record<string, string> = {}): Promise<Table> {
  return testTable({
    schema: 'dt STRING NOT NULL, id INT NOT NULL, v STRING',
    primaryKeys: ['dt', 'id'],
    partitionKeys: ['dt'],
    options: { bucket: '2', ...options },
  });
}

const state = async (t: Table, snapshotId?: number) =>
  tableToRows(await t.read({ snapshotId }), t.schema.fields)
    .map((r) => `${r.dt}/${r.id}/${r.v}`)
    .sort();

/** Bucket counts of each partition's live files (a partition with two counts shows both). */
async function layout(t: Table): Promise<Record<string, number[]>> {
  const out: Record<string, Set<number>> = {};
  for (const e of await readLiveFiles(t.store, t.path, (await t.snapshots.latest())!))
    (out[e.partition] ??= new Set()).add(e.totalBuckets);
  return Object.fromEntries(Object.entries(out).map(([p, s]) => [p, [...s].sort()]));
}

const rows = (dt: string, ids: number[], v: string) => ids.map((id) => ({ dt, id, v }));

describe('bucket rescale', () => {
  it('alter --set bucket applies to new partitions; writes into an old partition keep its count', async () => {
    let t = await newTable();
    await t.write([...rows('a', [1, 2, 3, 4, 5], 'x'), ...rows('b', [1, 2], 'x')]);
    t = (await t.alter([{ kind: 'set-option', key: 'bucket', value: '4' }])).table;
    // Without a rewrite, partition a keeps 2 buckets: this write must not fail or mix counts.
    await t.write([...rows('a', [1, 6, 7], 'y'), ...rows('c', [1, 2, 3, 4, 5, 6], 'y')]);
    const arrowTable = new arrow.Table({
      dt: arrow.vectorFromArray(['a', 'd'], new arrow.Utf8()),
      id: arrow.vectorFromArray([8, 1], new arrow.Int32()),
      v: arrow.vectorFromArray(['z', 'z'], new arrow.Utf8()),
    });
    const w = t.newWriter();
    await w.writeArrow(arrowTable);
    await w.commit();
    expect(await layout(t)).toEqual({ 'dt=a': [2], 'dt=b': [2], 'dt=c': [4], 'dt=d': [4] });
    expect((await state(t)).filter((r) => r.startsWith('a/'))).toEqual([
      'a/1/y',
      'a/2/x',
      'a/3/x',
      'a/4/x',
      'a/5/x',
      'a/6/y',
      'a/7/y',
      'a/8/z',
    ]);
    // Compaction of an old partition keeps its count too.
    await compactTable(t, { full: true });
    expect((await layout(t))['dt=a']).toEqual([2]);
    // An overwrite replaces the whole partition: it takes the table's count (Paimon's way to rescale).
    await t.overwrite(rows('b', [1, 2, 3], 'o'));
    expect((await layout(t))['dt=b']).toEqual([4]);
  });

  it("writes that wait for a partition's bucket count keep their call order, awaited or not", async () => {
    let t = await newTable();
    await t.write(rows('a', [1], 'v0'));
    t = (await t.alter([{ kind: 'set-option', key: 'bucket', value: '3' }])).table;
    const w = t.newWriter();
    // Not awaited: the first write to each partition looks its bucket count up before buffering.
    for (let i = 1; i <= 6; i++) void w.write([{ dt: i % 2 ? 'a' : 'n', id: 1, v: `v${i}` }]);
    await w.commit();
    expect(await state(t)).toEqual(['a/1/v5', 'n/1/v6']);
    expect(await layout(t)).toEqual({ 'dt=a': [2], 'dt=n': [3] });
  });

  it('rescale --partition rewrites the merged state into N buckets as one OVERWRITE; later writes still win; time travel sees the old layout', async () => {
    const t = await newTable();
    const first = await t.write([...rows('a', [1, 2, 3, 4, 5, 6], 'x'), ...rows('b', [1, 2], 'x')]);
    await t.write(rows('a', [2, 3], 'y'));
    await t.write([{ dt: 'a', id: 4, v: null }], { kinds: [RowKind.DELETE] });
    const before = await state(t);
    const r = await t.rescale({ buckets: 3, partition: { dt: 'a' } });
    expect(r).toMatchObject({ partitions: ['dt=a'], rows: 5, optionChanged: false });
    expect(r.snapshot!.commitKind).toBe('OVERWRITE');
    expect(r.snapshot!.properties?.[RESCALE_PROPERTY]).toBe('3');
    expect(await layout(t)).toEqual({ 'dt=a': [3], 'dt=b': [2] });
    expect(await state(t)).toEqual(before);
    expect(t.options.bucket).toBe(2);
    // Sequence numbers were kept: a new version of a rescaled key wins, and the table still merges.
    await t.write(rows('a', [2, 9], 'z'));
    expect((await state(t)).filter((x) => x.startsWith('a/'))).toEqual([
      'a/1/x',
      'a/2/z',
      'a/3/y',
      'a/5/x',
      'a/6/x',
      'a/9/z',
    ]);
    await compactTable(t, { full: true });
    expect((await state(t)).filter((x) => x.startsWith('a/'))).toEqual([
      'a/1/x',
      'a/2/z',
      'a/3/y',
      'a/5/x',
      'a/6/x',
      'a/9/z',
    ]);
    expect(await state(t, first.snapshot!.id)).toEqual(
      [...rows('a', [1, 2, 3, 4, 5, 6], 'x'), ...rows('b', [1, 2], 'x')].map((x) => `${x.dt}/${x.id}/${x.v}`).sort(),
    );
    // Rescaling to the count a partition has is a no-op.
    expect((await t.rescale({ buckets: 3, partition: { dt: 'a' } })).snapshot).toBeUndefined();
    await expect(t.rescale({ buckets: 3, partition: { dt: 'zz' } })).rejects.toThrow(/has no partition dt=zz/);
    await expect(t.rescale({ buckets: 0 })).rejects.toThrow(InvalidArgumentError);
  });

  it('rescale of the whole table changes the bucket option and every partition', async () => {
    const t = await newTable();
    await t.write([...rows('a', [1, 2, 3], 'x'), ...rows('b', [4, 5], 'x')]);
    const r = await t.rescale({ buckets: 5 });
    expect(r).toMatchObject({ optionChanged: true, partitions: ['dt=a', 'dt=b'] });
    const latest = await t.latest();
    expect(latest.options.bucket).toBe(5);
    expect(await layout(latest)).toEqual({ 'dt=a': [5], 'dt=b': [5] });
    await latest.write(rows('c', [1], 'x'));
    expect((await layout(latest))['dt=c']).toEqual([5]);
  });

  it('is refused while a consumer has not caught up, unless forced', async () => {
    const t = await newTable();
    await t.write(rows('a', [1, 2], 'x'));
    await t.write(rows('a', [3], 'x'));
    await writeConsumer(t.store, t.path, 'reader', { nextSnapshot: 2, lastUpdated: Date.now() });
    await expect(t.rescale({ buckets: 3 })).rejects.toThrow(
      /consumers that have not read up to snapshot 2 \(reader at snapshot 2\).*--force/,
    );
    expect(await layout(t)).toEqual({ 'dt=a': [2] });
    await writeConsumer(t.store, t.path, 'reader', { nextSnapshot: 3, lastUpdated: Date.now() });
    expect((await t.rescale({ buckets: 3, partition: { dt: 'a' } })).snapshot).toBeDefined();
    await writeConsumer(t.store, t.path, 'reader', { nextSnapshot: 1, lastUpdated: Date.now() });
    expect((await t.rescale({ buckets: 4, force: true })).snapshot).toBeDefined();
  });

  it('is not held back by a consumer behind only by schema changes and compactions without changelog', async () => {
    // Prepare: a consumer that read every row, then an alter and a full compaction (the README tour)
    const t = await newTable();
    await t.write(rows('a', [1, 2], 'x'));
    await writeConsumer(t.store, t.path, 'me', { nextSnapshot: 2, lastUpdated: Date.now() });
    const altered = (await t.alter([{ kind: 'set-option', key: 'snapshot.num-retained.min', value: '5' }])).table;
    await compactTable(altered, { full: true });

    // Act + Assess: nothing left to deliver that the new buckets could reorder
    expect((await altered.rescale({ buckets: 3, partition: { dt: 'a' } })).snapshot).toBeDefined();
    // A write after the consumer's position is a row change still to deliver: refused again.
    await altered.write(rows('a', [3], 'y'));
    await expect(altered.rescale({ buckets: 4, partition: { dt: 'a' } })).rejects.toThrow(/\(me at snapshot 2\)/);
  });

  it('is not held back by a consumer behind only by changes of other partitions', async () => {
    // Prepare: a consumer that read day a; then writes to day b only
    const t = await newTable();
    await t.write(rows('a', [1, 2], 'x'));
    await writeConsumer(t.store, t.path, 'me', { nextSnapshot: 2, lastUpdated: Date.now() });
    await t.write(rows('b', [1, 2], 'y'));

    // Act + Assess: day a's keys cannot be reordered by changes of day b; a whole-table rescale can
    expect((await t.rescale({ buckets: 3, partition: { dt: 'a' } })).snapshot).toBeDefined();
    await expect(t.rescale({ buckets: 3, partition: { dt: 'b' } })).rejects.toThrow(/\(me at snapshot 2\)/);
    await expect(t.rescale({ buckets: 4 })).rejects.toThrow(/\(me at snapshot 2\)/);
  });

  it('with the lookup changelog producer, a compaction after a rescale announces only real changes', async () => {
    const t = await newTable({ 'changelog-producer': 'lookup' });
    await t.write(rows('a', [1, 2, 3, 4], 'x'));
    await compactTable(t);
    const r = await t.rescale({ buckets: 3, partition: { dt: 'a' } });
    await t.write(rows('a', [2], 'y'));
    await compactTable(t);
    const log = tableToRows(
      await readAuditLog(t, {
        incrementalBetween: { from: r.snapshot!.id, to: (await t.snapshots.latestId())! },
        mode: 'changelog',
      }),
      [...t.schema.fields, { id: 99, name: '_VALUE_KIND', type: { root: 'TINYINT', nullable: false } }],
    );
    expect(log.map((x) => `${x.id}/${x.v}/${x._VALUE_KIND}`)).toEqual(['2/x/1', '2/y/2']);
  });

  it("an append table with a bucket-key keeps each key's rows in order; a bucket-unaware one has nothing to rescale", async () => {
    const catalog = new FolderCatalog(new MemoryStore());
    const t = await catalog.createTable('db.log', {
      fields: parseSchemaText('id INT, n INT'),
      options: { bucket: '2', 'bucket-key': 'id' },
    });
    for (let k = 0; k < 4; k++) await t.write([1, 2, 3, 4, 5].map((id) => ({ id, n: k })));
    await t.rescale({ buckets: 3 });
    const read = tableToRows(await t.read(), t.schema.fields);
    for (const id of [1, 2, 3, 4, 5]) expect(read.filter((r) => r.id === id).map((r) => r.n)).toEqual([0, 1, 2, 3]);
    expect(await layout(t)).toEqual({ '': [3] });
    const unaware = await catalog.createTable('db.u', { fields: parseSchemaText('id INT') });
    await expect(unaware.rescale({ buckets: 2 })).rejects.toThrow(/bucket-unaware/);
    await expect(unaware.alter([{ kind: 'set-option', key: 'bucket', value: '2' }])).rejects.toThrow(
      /between -1 \(bucket-unaware\) and a fixed count/,
    );
  });

  it('varve rescale in the CLI', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'varve-rescale-'));
    const varve = (...args: string[]) => runVarve(join(dir, 'wh'), args);
    expect(
      (
        await varve(
          'create',
          'db.o',
          '--schema',
          'dt STRING, id BIGINT',
          '--primary-key',
          'dt,id',
          '--partition-keys',
          'dt',
        )
      ).code,
    ).toBe(0);
    const file = join(dir, 'in.jsonl');
    writeFileSync(file, ['{"dt": "a", "id": 1}', '{"dt": "a", "id": 2}', '{"dt": "b", "id": 3}'].join('\n') + '\n');
    expect((await varve('write', 'db.o', file)).code).toBe(0);
    const part = await varve('rescale', 'db.o', '--buckets', '4', '--partition', 'dt=a');
    expect(part.out).toMatch(/rescaled dt=a to 4 buckets: 2 rows, 1 files replaced by \d+, snapshot 2 \(OVERWRITE\)/);
    const all = await varve('rescale', 'db.o', '--buckets', '4');
    expect(all.out).toMatch(/bucket = 4: new partitions get 4 buckets\nrescaled dt=b to 4 buckets/);
    expect(all.out).toMatch(/already 4 buckets: dt=a/);
    expect((await varve('rescale', 'db.o', '--buckets', 'x')).err).toMatch(/--buckets must be an integer/);
    expect((await varve('describe', 'db.o')).out).toMatch(/bucket = 4/);
  });
});
