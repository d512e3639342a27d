/**
 * The Iceberg history against varve's (issue 31 §4): a rollback is exported like any commit (a
 * forward OVERWRITE holding its target's files), and the commits after it follow; after expiry
 * every snapshot the current Iceberg metadata lists still has its files; an append table's
 * compaction is an Iceberg `replace`.
 */
import { describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { exportIceberg } from '../../lib/iceberg/export.js';
import { icebergExportDue } from '../../lib/iceberg/export-trigger.js';
import { listedDataFileKeys, readCurrentEntries } from '../../lib/iceberg/iceberg-manifests.js';
import {
  icebergLocation,
  metadataFileKey,
  readCurrentIcebergMetadata,
  storeKeyOf,
} from '../../lib/iceberg/iceberg-metadata.js';
import { compactTable } from '../../lib/maintenance/compact.js';
import { expireSnapshots } from '../../lib/maintenance/expire-snapshots.js';
import { rollbackTo } from '../../lib/maintenance/rollback.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { COMMIT_UUID_PROPERTY } from '../../lib/snapshot/commit-plan.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import type { Table } from '../../lib/table/table.js';

async function appendTable(store: MemoryStore, options: Record<string, string> = {}): Promise<Table> {
  return new FolderCatalog(store).createTable('db.events', {
    fields: parseSchemaText('id INT NOT NULL, region STRING NOT NULL, v BIGINT'),
    primaryKeys: [],
    partitionKeys: ['region'],
    options: { 'metadata.iceberg.storage': 'table-location', bucket: '-1', ...options },
  });
}

function rows(n: number, from: number) {
  return Array.from({ length: n }, (_, i) => ({ id: from + i, region: i % 2 ? 'eu' : 'us', v: BigInt(from + i) }));
}

async function current(table: Table) {
  return (await readCurrentIcebergMetadata(table.store, icebergLocation(table)!))!;
}

/** Rows (by id) of the files the current Iceberg snapshot reads, from their manifest entries' record counts. */
async function exportedRecords(table: Table): Promise<number> {
  const entries = await readCurrentEntries(table.store, (await current(table)).metadata);
  return entries.filter((e) => e.status !== 2).reduce((n, e) => n + Number(e.recordCount), 0);
}

describe('the export after a rollback', () => {
  it("exports the rollback (a forward OVERWRITE) at once with the target's files, then the commits after it; the undone snapshots stay in the history", async () => {
    // Prepare: five exported commits, then a rollback to 2 (snapshot 6) and one new commit (7)
    const store = new MemoryStore();
    const table = await appendTable(store);
    for (let i = 0; i < 5; i++) await table.write(rows(4, i * 10));
    expect((await current(table)).metadata['current-snapshot-id']).toBe(5);
    const back = await rollbackTo(table, { snapshotId: 2 });
    expect(back.hookError).toBeUndefined();
    expect(back.snapshot!.id).toBe(6);
    expect((await current(table)).metadata['current-snapshot-id']).toBe(6);
    expect(await exportedRecords(table)).toBe(8);
    // Act
    const w = await table.write(rows(2, 100));
    // Assess: Iceberg shows snapshot 7 (8 + 2 rows), named by its commit uuid, on top of the rollback
    expect(w.compactionError).toBeUndefined();
    expect(w.snapshot!.id).toBe(7);
    const { metadata, version } = await current(table);
    expect(metadata['current-snapshot-id']).toBe(7);
    const snap7 = metadata.snapshots.find((s) => s['snapshot-id'] === 7)!;
    expect(snap7.summary[COMMIT_UUID_PROPERTY]).toBe(w.snapshot!.properties![COMMIT_UUID_PROPERTY]);
    expect(metadata.snapshots.map((s) => s['snapshot-id'])).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(snap7['parent-snapshot-id']).toBe(6);
    expect(await exportedRecords(table)).toBe(10);
    // one metadata version per commit, the undone snapshots' versions kept
    expect(version).toBe(7);
    for (const v of [1, 2, 3, 4, 5, 6, 7])
      expect(await store.head(metadataFileKey(icebergLocation(table)!, v)), `v${v}`).toBeDefined();
    expect(await icebergExportDue(table)).toBeUndefined();
    expect((await exportIceberg(table)).status).toBe('up-to-date');
  });
});

describe('the export and expiry', () => {
  it('never lists a snapshot whose files expiry deleted: expiry keeps them until the export trims its history', async () => {
    // Prepare: six exported commits, a compaction that rewrites every file (an Iceberg replace)
    const store = new MemoryStore();
    const table = await appendTable(store, {
      'snapshot.num-retained.min': '1',
      'snapshot.num-retained.max': '2',
      'snapshot.time-retained': '1 ms',
    });
    for (let i = 0; i < 6; i++) await table.write(rows(3, i * 10));
    const c = await compactTable(table, { full: true });
    expect(c.icebergExportError).toBeUndefined();
    const before = (await current(table)).metadata;
    expect(before.snapshots.length).toBe(7);
    // Act: expiry deletes the snapshots (and the files) varve no longer needs
    const e = await expireSnapshots(table, { now: Date.now() + 60_000 });
    // Assess: every data file of every listed Iceberg snapshot is still there
    expect(e.expired.length).toBeGreaterThan(0);
    const listed = await listedDataFileKeys(store, before);
    expect(listed.size).toBeGreaterThan(2);
    for (const k of listed) expect(await store.head(k), k).toBeDefined();
    for (const s of before.snapshots) expect(await store.head(storeKeyOf(store, s['manifest-list'])!)).toBeDefined();
    // Act: the next export trims the history to the snapshots varve still has
    await table.write(rows(1, 900));
    const after = (await current(table)).metadata;
    const earliest = (await table.snapshots.earliestId())!;
    // Assess
    expect(after.snapshots.map((s) => s['snapshot-id'])).toEqual(
      after.snapshots.map((s) => s['snapshot-id']).filter((id) => id >= earliest),
    );
    for (const k of await listedDataFileKeys(store, after)) expect(await store.head(k), k).toBeDefined();
  });
});

describe('Iceberg operations', () => {
  it("exports an append table's compaction as replace, appends as append", async () => {
    // Prepare
    const store = new MemoryStore();
    const table = await appendTable(store);
    await table.write(rows(4, 0));
    await table.write(rows(4, 10));
    // Act
    await compactTable(table, { full: true });
    // Assess
    const m = (await current(table)).metadata;
    const ops = m.snapshots.map((s) => `${s.summary['varve.commit-kind']}:${s.summary.operation}`);
    expect(ops).toEqual(['APPEND:append', 'APPEND:append', 'COMPACT:replace']);
    const last = m.snapshots.at(-1)!.summary;
    expect(last['added-records']).toBe(last['deleted-records']);
  });
});

describe('the export of a deletion-vector table', () => {
  it('writes the commits whose own export failed before the latest, so time travel finds every commit', async () => {
    // Prepare
    const store = new MemoryStore();
    const table = await new FolderCatalog(store).createTable('db.dv', {
      fields: parseSchemaText('id INT NOT NULL, v BIGINT'),
      primaryKeys: ['id'],
      partitionKeys: [],
      options: { 'metadata.iceberg.storage': 'table-location', bucket: '1', 'deletion-vectors.enabled': 'true' },
    });
    await table.write([{ id: 1, v: 1n }]);
    store.injectFault({ op: 'putIfAbsent', keyIncludes: '.metadata.json', times: 2 });
    const failed = await table.write([{ id: 2, v: 2n }]);
    expect(failed.compactionError).toBeDefined();
    store.clearFaults();
    // Act
    const w = await table.write([{ id: 1, v: 3n }]);
    // Assess: snapshots 1, 2 and 3 are all in the Iceberg history, each its own varve commit
    expect(w.compactionError).toBeUndefined();
    const { metadata } = await current(table);
    expect(metadata.snapshots.map((s) => s['snapshot-id'])).toEqual([1, 2, 3]);
    for (const s of metadata.snapshots) {
      expect(s.summary[COMMIT_UUID_PROPERTY]).toBe(
        (await table.snapshots.tryRead(s['snapshot-id']))!.properties![COMMIT_UUID_PROPERTY],
      );
    }
    expect(metadata['current-snapshot-id']).toBe(3);
  });
});
