/**
 * Issue 31's must-show: a keyed table with `deletion-vectors.enabled=true` and Iceberg storage,
 * exported by its own commits (deletion-vector maintenance, then the after-commit export). After
 * each of an upsert, a delete, a one-bucket compaction, an overwrite, a `delete --where`, a
 * rollback and a later write: the current Iceberg snapshot is varve's latest, pyiceberg's scan
 * equals `varve read`, and time travel by id equals `varve read --snapshot N` for every snapshot
 * the metadata lists (pyiceberg, and icebird for the same v2 position deletes).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { tableToRows } from '../../lib/format/columns.js';
import { icebergLocation, readCurrentIcebergMetadata } from '../../lib/iceberg/iceberg-metadata.js';
import { icebergStatus } from '../../lib/iceberg/iceberg-status.js';
import { compactBucket } from '../../lib/maintenance/compact.js';
import { rollbackTo } from '../../lib/maintenance/rollback.js';
import { readLiveFiles } from '../../lib/manifest/scan.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { RowKind, type Row } from '../../lib/schema/types.js';
import { LocalStore } from '../../lib/store/local-store.js';
import type { Table } from '../../lib/table/table.js';
import { rng, testSeed } from '../helpers/random.js';
import {
  canonicalValue,
  icebirdRows,
  lossyText,
  type PyicebergReader,
  snapshotColumnTypes,
  sortedRowTexts,
  type IcebergMetadataJson,
  expectSummaryCounts,
} from './outside-readers.js';
import { pyicebergSession } from '../helpers/pyiceberg-session.js';

const dirs: string[] = [];
const pyiceberg = pyicebergSession('the deletion-vector readers test');
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** `varve read --snapshot N` (or `varve read` without one) as canonical rows. */
async function varveRows(table: Table, snapshotId?: number) {
  const t = await table.latest();
  const id = snapshotId ?? (await t.snapshots.latestId())!;
  const fields =
    snapshotId === undefined ? t.schema.fields : (await t.schemaById((await t.snapshots.tryRead(id))!.schemaId)).fields;
  const rows = tableToRows(await t.read(snapshotId === undefined ? {} : { snapshotId }), fields);
  return { columns: fields.map((f) => f.name), rows: rows.map((r) => fields.map((f) => canonicalValue(f, r[f.name]))) };
}

/** Checks the export after step `what`: current = latest, and every listed snapshot in both readers. */
async function checkAfter(py: PyicebergReader, table: Table, what: string, exportedIds: Set<number>): Promise<void> {
  const loc = icebergLocation(table)!;
  const current = (await readCurrentIcebergMetadata(table.store, loc))!;
  const metadata = current.metadata as unknown as IcebergMetadataJson;
  const latest = (await table.snapshots.latestId())!;
  expect(metadata['current-snapshot-id'], `${what}: the export follows every commit`).toBe(latest);
  const listed = metadata.snapshots.map((s) => s['snapshot-id']);
  for (const id of exportedIds) expect(listed, `${what}: snapshot ${id} stays in the Iceberg history`).toContain(id);
  exportedIds.add(latest);
  const rows = await py.read(join((table.store as LocalStore).root, current.key), listed);
  const summaries = await py.summaries(join((table.store as LocalStore).root, current.key), listed);
  for (const id of listed) expectSummaryCounts(summaries.get(id)!, `${what}: snapshot ${id}`);
  expect(sortedRowTexts(rows.get(latest)!), `${what}: pyiceberg's scan = varve read`).toEqual(
    sortedRowTexts(await varveRows(table)),
  );
  for (const id of listed) {
    const expected = await varveRows(table, id);
    expect(sortedRowTexts(rows.get(id)!), `${what}: pyiceberg at snapshot ${id} = varve read --snapshot ${id}`).toEqual(
      sortedRowTexts(expected),
    );
    const types = snapshotColumnTypes(metadata, id);
    const bird = await icebirdRows(loc.tableUri, metadata, id);
    expect(sortedRowTexts(bird), `${what}: icebird at snapshot ${id}`).toEqual(
      sortedRowTexts(expected, (c, t) => lossyText(types.get(c)!, t)),
    );
  }
  const status = await icebergStatus(table);
  expect(status.up_to_date, `${what}: sys iceberg`).toBe(true);
  expect(status.rows_not_visible).toBe(0);
}

describe('a deletion-vector table read by Iceberg readers at every commit', () => {
  it('equals varve read after upsert, delete, one-bucket compaction, overwrite, delete --where, rollback and a later write', {
    timeout: 300_000,
  }, async (ctx) => {
    const py = pyiceberg();
    if (py === undefined) return ctx.skip();
    // Prepare
    const seed = testSeed('iceberg.deletion-vector-readers');
    const r = rng(seed);
    const dir = mkdtempSync(join(tmpdir(), 'varve-dv-readers-'));
    dirs.push(dir);
    const table = await new FolderCatalog(new LocalStore(dir)).createTable('db.orders', {
      fields: parseSchemaText(
        'id INT NOT NULL, region STRING NOT NULL, amount DECIMAL(12,2), note STRING, ts TIMESTAMP(6)',
      ),
      primaryKeys: ['region', 'id'],
      partitionKeys: ['region'],
      options: { bucket: '2', 'deletion-vectors.enabled': 'true', 'metadata.iceberg.storage': 'table-location' },
    });
    const row = (id: number, region = r.pick(['eu', 'us'])): Row => ({
      id,
      region,
      amount: `${r.int(0, 99999)}.${String(r.int(0, 99)).padStart(2, '0')}`,
      note: r.pick([null, 'a', 'ünï']),
      ts: BigInt(r.int(0, 1e9)) * 1000n,
    });
    const exported = new Set<number>();
    const ok = (result: { compactionError?: Error } | undefined, what: string) =>
      expect(result?.compactionError, `${what}: the export after it`).toBeUndefined();
    // Act + Assess, step by step
    ok(await table.write(Array.from({ length: 30 }, (_, i) => row(i))), 'first write');
    await checkAfter(py, table, 'first write', exported);
    const upserts = Array.from({ length: 12 }, () => row(r.int(0, 40)));
    ok(
      await table.write(upserts, { kinds: upserts.map(() => r.pick([RowKind.INSERT, RowKind.UPDATE_AFTER])) }),
      'upsert',
    );
    await checkAfter(py, table, 'upsert', exported);
    const deletes = Array.from({ length: 6 }, () => ({ id: r.int(0, 40), region: r.pick(['eu', 'us']) }));
    ok(await table.write(deletes, { kinds: deletes.map(() => RowKind.DELETE) }), 'delete');
    await checkAfter(py, table, 'delete', exported);
    const live = await readLiveFiles(table.store, table.path, (await table.snapshots.latest())!);
    const one = r.pick(live);
    const c = await compactBucket(table, one.partition, one.bucket, { full: true });
    expect(c.snapshot, 'the one-bucket compaction committed').toBeDefined();
    await checkAfter(py, table, `compaction of ${one.partition}/bucket-${one.bucket}`, exported);
    ok(await table.overwrite([row(100, 'eu'), row(101, 'eu'), row(3, 'eu')]), 'overwrite');
    await checkAfter(py, table, 'overwrite of region=eu', exported);
    ok(await table.deleteWhere('id < 10'), 'delete --where');
    await checkAfter(py, table, 'delete --where id < 10', exported);
    const target = r.int(2, (await table.snapshots.latestId())! - 1);
    const rb = await rollbackTo(table, { snapshotId: target });
    expect(rb.hookError, 'the export after the rollback').toBeUndefined();
    await checkAfter(py, table, `rollback to ${target}`, exported);
    ok(await table.write(Array.from({ length: 8 }, () => row(r.int(0, 60)))), 'later write');
    await checkAfter(py, table, 'a write after the rollback', exported);
    console.log(`seed ${seed}: ${exported.size} Iceberg snapshots checked at every step`);
  });
});
