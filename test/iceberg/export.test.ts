import { describe, expect, it } from 'vitest';
import { pastFloor } from '../helpers/expiry-clock.js';
import { IcebergExportError } from '../../lib/errors.js';
import { decodeAvroFile } from '../../lib/iceberg/avro-file.js';
import { exportIceberg } from '../../lib/iceberg/export.js';
import {
  icebergLocation,
  readCurrentIcebergMetadata,
  storeKeyOf,
  versionHintKey,
} from '../../lib/iceberg/iceberg-metadata.js';
import { currentDataFileKeys } from '../../lib/iceberg/iceberg-manifests.js';
import { decimalBytes, nameMappingOf, partitionValuesOf, twosComplement } from '../../lib/iceberg/iceberg-schema.js';
import { compactTable } from '../../lib/maintenance/compact.js';
import { expireSnapshots } from '../../lib/maintenance/expire-snapshots.js';
import { removeOrphanFiles } from '../../lib/maintenance/remove-orphans.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { listAll, type ObjectStore } from '../../lib/store/object-store.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import type { Table } from '../../lib/table/table.js';
import { testTable } from '../helpers/tables.js';

function newTable(options: Record<string, string>, store: ObjectStore = new MemoryStore()): Promise<Table> {
  return testTable({
    schema: 'id INT NOT NULL, region STRING NOT NULL, v BIGINT',
    primaryKeys: ['region', 'id'],
    partitionKeys: ['region'],
    options: { 'metadata.iceberg.storage': 'table-location', ...options },
    store,
  });
}

async function current(table: Table) {
  return (await readCurrentIcebergMetadata(table.store, icebergLocation(table)!))?.metadata;
}

async function rows(n: number, from = 0) {
  return Array.from({ length: n }, (_, i) => ({ id: from + i, region: i % 2 ? 'eu' : 'us', v: BigInt(i) }));
}

describe('exportIceberg', () => {
  it('writes nothing when metadata.iceberg.storage is disabled (the default)', async () => {
    // Prepare
    const store = new MemoryStore();
    const table = await newTable({ 'metadata.iceberg.storage': 'disabled' }, store);
    // Act
    await table.write(await rows(4));
    await compactTable(table, { full: true });
    // Assess
    expect(
      (await listAll(store, '')).filter((o) => o.key.includes('/metadata/') || o.key.startsWith('iceberg/')),
    ).toEqual([]);
    expect((await exportIceberg(table)).status).toBe('disabled');
  });

  it('exports after a full compaction, not after APPENDs of level-0 files, and keeps unchanged files as EXISTING', async () => {
    // Prepare: write-only, so only the explicit compactions below touch the highest level
    const table = await newTable({ 'write-only': 'true' });
    await table.write(await rows(6));
    const first = (await current(table))!;
    // Act
    await table.write(await rows(2, 100));
    await table.write(await rows(2, 200));
    const afterAppends = (await current(table))!;
    await compactTable(table, { full: true });
    const afterFull = (await current(table))!;
    // Assess: the first commit exported (an empty view), APPENDs did not, the compaction did
    expect(first['current-snapshot-id']).toBe(1);
    expect(afterAppends['current-snapshot-id']).toBe(1);
    const latest = (await table.snapshots.latest())!;
    expect(afterFull['current-snapshot-id']).toBe(latest.id);
    expect(afterFull.snapshots.at(-1)!.summary['total-records']).toBe('10');
    expect(afterFull['last-sequence-number']).toBe(2);

    // Act: a second full compaction after an update of one partition only
    await table.write([{ id: 0, region: 'us', v: 99n }]);
    await compactTable(table, { full: true });
    const m = (await current(table))!;
    const snap = m.snapshots.find((s) => s['snapshot-id'] === m['current-snapshot-id'])!;
    const list = await decodeAvroFile(
      (await table.store.get(storeKeyOf(table.store, snap['manifest-list'])!)).body,
      'list',
    );
    const manifest = await decodeAvroFile(
      (await table.store.get(storeKeyOf(table.store, (list.records[0] as { manifest_path: string }).manifest_path)!))
        .body,
      'manifest',
    );
    // Assess: the eu file is EXISTING from the earlier export, the us file replaced (ADDED + DELETED)
    const statuses = (manifest.records as Array<{ status: number; data_file: { partition: { region: string } } }>)
      .map((e) => `${e.data_file.partition.region}:${e.status}`)
      .sort();
    expect(statuses).toEqual(['eu:0', 'us:1', 'us:2']);
    expect(manifest.metadata['format-version']).toBe('2');
    expect(JSON.parse(manifest.metadata['partition-spec'])).toEqual([
      { name: 'region', transform: 'identity', 'source-id': 1, 'field-id': 1000 },
    ]);
    expect(snap.summary.operation).toBe('overwrite');
    expect(m.snapshots.map((s) => s['sequence-number'])).toEqual([1, 2, 3]);
  });

  it('puts the metadata in <warehouse>/iceberg/<db>/<table>/metadata with storage = warehouse', async () => {
    // Prepare
    const store = new MemoryStore({ uri: 's3://bucket/wh' });
    const table = await newTable({ 'metadata.iceberg.storage': 'warehouse' }, store);
    // Act
    await table.write(await rows(3));
    await compactTable(table, { full: true });
    // Assess
    const m = (await current(table))!;
    expect(m.location).toBe('s3://bucket/wh/iceberg/db/t');
    expect((await store.get('iceberg/db/t/metadata/version-hint.text')).body).toBeDefined();
    const keys = await currentDataFileKeys(store, m);
    expect(keys.length).toBe(2);
    for (const k of keys) expect(k.startsWith('db.db/t/region=')).toBe(true);
  });

  it('never fails the write: a failed export is reported and the next commit writes it', async () => {
    // Prepare
    const store = new MemoryStore();
    const table = await newTable({}, store);
    store.injectFault({ op: 'putIfAbsent', keyIncludes: '.metadata.json' });
    // Act
    const w = await table.write(await rows(3));
    // Assess
    expect(w.snapshot?.id).toBe(1);
    expect(w.compactionError).toBeInstanceOf(IcebergExportError);
    expect(await current(table)).toBeUndefined();
    // Act: the next commit redoes it
    const w2 = await table.write(await rows(1, 50));
    expect(w2.compactionError).toBeUndefined();
    expect((await current(table))!['current-snapshot-id']).toBe(2);
  });

  it('finds the newest metadata by listing when version-hint.text is missing, and never goes back', async () => {
    // Prepare
    const table = await newTable({});
    await table.write(await rows(3));
    await compactTable(table, { full: true });
    const latest = (await table.snapshots.latest())!;
    await table.store.delete(versionHintKey(icebergLocation(table)!));
    // Act + Assess
    expect((await current(table))!['current-snapshot-id']).toBe(latest.id);
    expect((await exportIceberg(table, { snapshot: await table.snapshots.read(1) })).status).toBe('newer-exported');
    expect((await exportIceberg(table)).status).toBe('up-to-date');
  });

  it('trims the Iceberg history with varve expiry: dropped snapshots lose their metadata, list and manifest', async () => {
    // Prepare
    const store = new MemoryStore();
    const table = await newTable({ 'snapshot.num-retained.min': '1', 'snapshot.time-retained': '1 ms' }, store);
    for (let i = 0; i < 3; i++) {
      await table.write(await rows(4, i * 10));
      await compactTable(table, { full: true });
    }
    const before = (await current(table))!;
    expect(before.snapshots.length).toBeGreaterThan(2);
    // Act
    await expireSnapshots(table, { now: pastFloor() });
    await table.write(await rows(2, 500));
    await compactTable(table, { full: true });
    // Assess
    const after = (await current(table))!;
    const earliest = (await table.snapshots.earliestId())!;
    expect(
      after.snapshots.every(
        (s) => s['snapshot-id'] >= earliest || s['snapshot-id'] === after.snapshots[0]['snapshot-id'],
      ),
    ).toBe(true);
    expect(after.snapshots.length).toBeLessThan(before.snapshots.length + 1);
    const dir = icebergLocation(table)!.metadataDir;
    const files = (await listAll(store, dir)).map((o) => o.key.slice(dir.length));
    const versions = files.filter((f) => f.endsWith('.metadata.json')).length;
    expect(versions).toBeLessThanOrEqual(after.snapshots.length + 1);
  });
});

describe('Iceberg schema mapping', () => {
  it("encodes decimals in the fewest bytes, two's complement", () => {
    expect([1, 2, 9, 10, 18, 19, 38].map(decimalBytes)).toEqual([1, 1, 4, 5, 8, 9, 16]);
    expect([...twosComplement(-1n, 2)]).toEqual([255, 255]);
    expect([...twosComplement(300n, 3)]).toEqual([0, 1, 44]);
  });

  it('maps every name a field had, so files written without Parquet field ids are read by name', () => {
    const mapping = nameMappingOf([
      { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'a', required: true, type: 'int' }] },
      {
        type: 'struct',
        'schema-id': 1,
        fields: [
          { id: 1, name: 'b', required: true, type: 'int' },
          { id: 2, name: 'c', required: false, type: 'string' },
        ],
      },
    ]);
    expect(JSON.parse(mapping)).toEqual([
      { 'field-id': 1, names: ['a', 'b'] },
      { 'field-id': 2, names: ['c'] },
    ]);
  });

  it('reads typed partition values back from escaped partition paths', () => {
    const schema = {
      version: 1 as const,
      id: 0,
      highestFieldId: 3,
      primaryKeys: ['s', 'd', 'n'],
      partitionKeys: ['s', 'd', 'n'],
      options: {},
      timeMillis: 0,
      fields: parseSchemaText('s STRING NOT NULL, d DATE NOT NULL, n BIGINT NOT NULL').map((f, i) => ({
        ...f,
        id: i + 1,
      })),
    };
    expect(partitionValuesOf(schema, 's=us%2Fwest/d=2024-01-02/n=-9007199254740993', '__DEFAULT_PARTITION__')).toEqual([
      'us/west',
      19724,
      -9007199254740993n,
    ]);
    expect(partitionValuesOf(schema, 's=__DEFAULT_PARTITION__/d=1970-01-01/n=0', '__DEFAULT_PARTITION__')).toEqual([
      '',
      0,
      0n,
    ]);
  });
});

describe('expiry and orphan cleanup keep what the current Iceberg snapshot reads', () => {
  it('keeps the exported files while the export lags, and lets orphan cleanup remove them once it moved on', async () => {
    // Prepare: an export at a full compaction, then exports fail while a second full compaction replaces its files
    const store = new MemoryStore();
    const table = await newTable({ 'snapshot.num-retained.min': '1', 'snapshot.time-retained': '1 ms' }, store);
    await table.write(await rows(4));
    await compactTable(table, { full: true });
    const exported = await currentDataFileKeys(store, (await current(table))!);
    expect(exported.length).toBe(2);
    store.injectFault({ op: 'putIfAbsent', keyIncludes: '.metadata.json', times: 100 });
    await table.write(await rows(4, 0));
    const c = await compactTable(table, { full: true });
    expect(c.icebergExportError).toBeInstanceOf(IcebergExportError);
    // Act
    const later = Date.now() + 60_000;
    await expireSnapshots(table, { now: later });
    await removeOrphanFiles(table, { olderThanMs: 0, now: later });
    // Assess: varve no longer references them, the Iceberg snapshot does: they are still there
    for (const k of exported) expect(await store.head(k), k).toBeDefined();
    // Act: the export catches up, then orphan cleanup removes the old files
    store.clearFaults();
    expect((await exportIceberg(table)).status).toBe('exported');
    const r = await removeOrphanFiles(table, { olderThanMs: 0, now: later });
    // Assess
    for (const k of exported) expect(await store.head(k), k).toBeUndefined();
    expect(r.orphans.map((o) => o.key).sort()).toEqual(expect.arrayContaining([...exported].sort()));
  });
});

describe('two exporters of one snapshot', () => {
  it('agree on one metadata file, and the loser removes its own manifest and list', async () => {
    // Prepare: a table whose commits do not export (a handle with the export off), then two exporters at once
    const store = new MemoryStore();
    const table = await newTable({ 'write-only': 'true' }, store);
    const { Table } = await import('../../lib/table/table.js');
    const quiet = new Table(store, table.name, table.path, {
      ...table.schema,
      options: { ...table.schema.options, 'metadata.iceberg.storage': 'disabled' },
    });
    await quiet.write(await rows(4));
    await compactTable(quiet, { full: true });
    // Act
    const [a, b] = await Promise.all([exportIceberg(table), exportIceberg(table)]);
    // Assess: the loser of the metadata version finds the same commit exported
    expect([a.status, b.status].sort()).toEqual(['exported', 'up-to-date']);
    const dir = icebergLocation(table)!.metadataDir;
    const names = (await listAll(store, dir)).map((o) => o.key.slice(dir.length));
    expect(names.filter((n) => n.startsWith('snap-')).length).toBe(1);
    expect(names.filter((n) => n.endsWith('-m0.avro')).length).toBe(1);
    const m = (await current(table))!;
    expect(await currentDataFileKeys(store, m)).toHaveLength(2);
  });
});

describe('orphan cleanup of the Iceberg metadata folder', () => {
  it('removes the manifests and lists of an export that failed before its metadata version, keeps the listed ones', async () => {
    // Prepare: a commit exported, then an export whose metadata create fails (its manifests stay: the process "crashed")
    const store = new MemoryStore();
    const table = await newTable({}, store);
    await table.write(await rows(4));
    await compactTable(table, { full: true });
    const dir = icebergLocation(table)!.metadataDir;
    const before = new Set((await listAll(store, dir)).map((o) => o.key));
    store.injectFault({ op: 'putIfAbsent', keyIncludes: '.metadata.json' });
    await table.write(await rows(2, 50));
    await compactTable(table, { full: true }).catch(() => undefined);
    store.clearFaults();
    const leftover = (await listAll(store, dir)).map((o) => o.key).filter((k) => !before.has(k) && k.endsWith('.avro'));
    expect(leftover.length).toBeGreaterThan(0);
    // Act
    const r = await removeOrphanFiles(table, { olderThanMs: 0, now: Date.now() + 60_000 });
    // Assess: the failed export's files are gone, the current metadata's are all there
    expect(
      r.orphans
        .filter((o) => o.kind === 'iceberg-manifest')
        .map((o) => o.key)
        .sort(),
    ).toEqual(leftover.sort());
    for (const k of leftover) expect(await store.head(k), k).toBeUndefined();
    for (const s of (await current(table))!.snapshots)
      expect(await store.head(storeKeyOf(store, s['manifest-list'])!)).toBeDefined();
    expect(await store.head(`${dir}version-hint.text`)).toBeDefined();
    expect((await exportIceberg(table)).status).toMatch(/exported|up-to-date/);
  });
});
