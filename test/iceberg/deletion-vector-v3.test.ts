/**
 * Iceberg format v3 (`metadata.iceberg.format-version=3`) of a deletion-vector table: every
 * commit exports v3 metadata whose delete manifest points INTO the table's own Puffin files
 * (content_offset / content_size_in_bytes of each deletion-vector-v1 blob, no copy), with row
 * lineage (next-row-id, first-row-id, first_row_id). After each of an upsert, a delete, a
 * one-bucket compaction, an overwrite, a `delete --where`, a rollback and a later write, every
 * snapshot the metadata lists reads as `varve read --snapshot N` in two readers: the spec reader
 * (test/iceberg/read_iceberg.py: fastavro + pyarrow, its own Puffin, CRC-32 and Roaring decoding,
 * and row-id ranges checked) and pyiceberg (with test/iceberg/roaring/pyroaring.py). icebird
 * 0.3.1 cannot read a Puffin delete file: it must fail, never return other rows. Also: a v2
 * export upgraded to v3 in place, 3 → 2 refused, and a table without a primary key in v3.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { IcebergExportError, OptionError } from '../../lib/errors.js';
import { readPuffinFooter, writeDeletionVectorPuffin, type PuffinBlobMeta } from '../../lib/format/deletion-vector.js';
import { exportIceberg } from '../../lib/iceberg/export.js';
import { tableToRows } from '../../lib/format/columns.js';
import { EntryStatus, FileContent, readCurrentEntries } from '../../lib/iceberg/iceberg-manifests.js';
import { icebergLocation, readCurrentIcebergMetadata } from '../../lib/iceberg/iceberg-metadata.js';
import { icebergStatus } from '../../lib/iceberg/iceberg-status.js';
import { compactBucket, compactTable } from '../../lib/maintenance/compact.js';
import { rollbackTo } from '../../lib/maintenance/rollback.js';
import { readDeletionIndex } from '../../lib/manifest/deletion-index.js';
import { readLiveFiles } from '../../lib/manifest/scan.js';
import { tableKey } from '../../lib/manifest/table-paths.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { RowKind, type Row } from '../../lib/schema/types.js';
import { LocalStore } from '../../lib/store/local-store.js';
import { objectUri } from '../../lib/store/object-store.js';
import type { Table } from '../../lib/table/table.js';
import { pythonWithPyarrow, runPython } from '../helpers/python-env.js';
import { rng, testSeed, type Rng } from '../helpers/random.js';
import {
  canonicalValue,
  icebirdRows,
  lossyText,
  type PyicebergReader,
  snapshotColumnTypes,
  sortedRowTexts,
  type IcebergMetadataJson,
  type SnapshotRows,
  expectSummaryCounts,
} from './outside-readers.js';
import { pyicebergSession } from '../helpers/pyiceberg-session.js';

const dirs: string[] = [];
const pyiceberg = pyicebergSession('the Iceberg v3 deletion-vector test');
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** Both Python readers, or undefined after a loud skip (under CI=true they throw instead). */
function readers(): { py: PyicebergReader; python: string } | undefined {
  const py = pyiceberg();
  if (py === undefined) return undefined;
  const env = pythonWithPyarrow();
  if ('unavailable' in env) {
    console.warn(`SKIPPED the Iceberg v3 deletion-vector test: ${env.unavailable} (under CI=true this fails)`);
    return undefined;
  }
  return { py, python: env.python };
}

/** `varve read --snapshot N` (or `varve read`) as canonical rows. */
async function varveRows(table: Table, snapshotId?: number): Promise<SnapshotRows> {
  const t = await table.latest();
  const id = snapshotId ?? (await t.snapshots.latestId())!;
  const fields = (await t.schemaById((await t.snapshots.tryRead(id))!.schemaId)).fields;
  const rows = tableToRows(await t.read({ snapshotId: id }), fields);
  return { columns: fields.map((f) => f.name), rows: rows.map((r) => fields.map((f) => canonicalValue(f, r[f.name]))) };
}

/** The spec reader's rows of every listed snapshot (read_iceberg.py --all). */
function specReaderRows(python: string, table: Table): Map<number, SnapshotRows> {
  const folder = join((table.store as LocalStore).root, icebergLocation(table)!.metadataDir);
  const out = JSON.parse(runPython(python, 'test/iceberg/read_iceberg.py', [folder, '--all'])) as {
    snapshots: Record<string, { rows: Array<Record<string, string | null>> }>;
  };
  return new Map(
    Object.entries(out.snapshots).map(([id, s]) => {
      const columns = s.rows.length > 0 ? Object.keys(s.rows[0]) : [];
      return [Number(id), { columns, rows: s.rows.map((r) => columns.map((c) => r[c])) }];
    }),
  );
}

/** Every listed snapshot, in the spec reader, pyiceberg and icebird, against varve read --snapshot N. */
async function checkEverySnapshot(env: { py: PyicebergReader; python: string }, table: Table, what: string) {
  const loc = icebergLocation(table)!;
  const current = (await readCurrentIcebergMetadata(table.store, loc))!;
  const metadata = current.metadata as unknown as IcebergMetadataJson;
  const listed = metadata.snapshots.map((s) => s['snapshot-id']);
  const spec = specReaderRows(env.python, table);
  const py = await env.py.read(join((table.store as LocalStore).root, current.key), listed);
  const summaries = await env.py.summaries(join((table.store as LocalStore).root, current.key), listed);
  for (const id of listed) expectSummaryCounts(summaries.get(id)!, `${what}: snapshot ${id}`);
  let icebirdFailed = 0;
  for (const id of listed) {
    const expected = sortedRowTexts(await varveRows(table, id));
    expect(sortedRowTexts(spec.get(id)!), `${what}: spec reader at snapshot ${id}`).toEqual(expected);
    expect(sortedRowTexts(py.get(id)!), `${what}: pyiceberg at snapshot ${id}`).toEqual(expected);
    // icebird reads delete files as Parquet: on a Puffin one it must fail, not return other rows.
    const bird = await icebirdRows(loc.tableUri, metadata, id).catch(() => undefined);
    if (bird === undefined) icebirdFailed++;
    else {
      const types = snapshotColumnTypes(metadata, id);
      expect(sortedRowTexts(bird), `${what}: icebird at snapshot ${id} returned rows, so they must be right`).toEqual(
        sortedRowTexts(await varveRows(table, id), (c, t) => lossyText(types.get(c)!, t)),
      );
    }
  }
  return { listed, icebirdFailed };
}

/** Checks the current export after a step: v3, current = latest, vectors pointing into varve's Puffin files. */
async function checkV3Export(table: Table, what: string): Promise<void> {
  const loc = icebergLocation(table)!;
  const { metadata } = (await readCurrentIcebergMetadata(table.store, loc))!;
  const latest = (await table.snapshots.latest())!;
  expect(metadata['format-version'], what).toBe(3);
  expect(metadata['current-snapshot-id'], `${what}: the export follows every commit`).toBe(latest.id);
  const current = metadata.snapshots.find((s) => s['snapshot-id'] === latest.id)!;
  expect(current['first-row-id'], `${what}: first-row-id`).toBeTypeOf('number');
  expect(metadata['next-row-id'], `${what}: next-row-id`).toBe(current['first-row-id']! + current['added-rows']!);
  const entries = (await readCurrentEntries(table.store, metadata)).filter((e) => e.status !== EntryStatus.DELETED);
  const vectors = entries.filter((e) => e.content === FileContent.POSITION_DELETES);
  const refs = await readDeletionIndex(table.store, table.path, latest);
  expect(vectors.length, `${what}: one vector entry per indexed vector`).toBe(refs.length);
  for (const v of vectors) {
    expect(v.format, what).toBe('PUFFIN');
    expect(v.path, `${what}: the entry points into varve's own Puffin file`).toMatch(/\/bucket-\d+\/dv-[^/]+\.puffin$/);
    const ref = refs.find((r) => v.path.endsWith(`/${r.dvFile}`) && BigInt(r.offset) === v.contentOffset);
    expect(ref, `${what}: ${v.path}@${v.contentOffset} is a blob of the deletion index`).toBeDefined();
    expect(v.contentSize, what).toBe(BigInt(ref!.length));
    expect(v.deletesFrom, what).toMatch(new RegExp(`/${ref!.fileName.replace(/[.]/g, '\\.')}$`));
  }
  const status = await icebergStatus(table);
  expect(status.up_to_date, `${what}: sys iceberg`).toBe(true);
  expect(status.format_version, `${what}: sys iceberg`).toBe(3);
}

/** No export-written position delete file anywhere in the table folder (v3 copies no vector). */
function positionDeleteFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(d, e.name));
      else if (e.name.startsWith('iceberg-pos-')) out.push(join(d, e.name));
    }
  };
  if (existsSync(dir)) walk(dir);
  return out;
}

async function newTable(dir: string, options: Record<string, string>): Promise<Table> {
  return new FolderCatalog(new LocalStore(dir)).createTable('db.orders', {
    fields: parseSchemaText('id INT NOT NULL, region STRING NOT NULL, amount DECIMAL(12,2), note STRING'),
    primaryKeys: ['region', 'id'],
    partitionKeys: ['region'],
    options: {
      bucket: '2',
      'deletion-vectors.enabled': 'true',
      'metadata.iceberg.storage': 'table-location',
      ...options,
    },
  });
}

function rowMaker(r: Rng): (id: number, region?: string) => Row {
  return (id, region = r.pick(['eu', 'us'])) => ({
    id,
    region,
    amount: `${r.int(0, 99999)}.${String(r.int(0, 99)).padStart(2, '0')}`,
    note: r.pick([null, 'a', 'ünï']),
  });
}

describe('Iceberg v3 export of a deletion-vector table', () => {
  it('points its vectors into the Puffin files, and every listed snapshot equals varve read --snapshot N after every step', {
    timeout: 300_000,
  }, async (ctx) => {
    const env = readers();
    if (env === undefined) return ctx.skip();
    // Prepare
    const seed = testSeed('iceberg.deletion-vector-v3');
    const r = rng(seed);
    const dir = mkdtempSync(join(tmpdir(), 'varve-dv-v3-'));
    dirs.push(dir);
    const table = await newTable(dir, { 'metadata.iceberg.format-version': '3' });
    const row = rowMaker(r);
    const ok = (result: { compactionError?: Error } | undefined, what: string) =>
      expect(result?.compactionError, `${what}: the export after it (seed ${seed})`).toBeUndefined();
    let icebirdFailed = 0;
    const step = async (what: string) => {
      await checkV3Export(table, `${what} (seed ${seed})`);
      icebirdFailed += (await checkEverySnapshot(env, table, `${what} (seed ${seed})`)).icebirdFailed;
    };
    // Act + Assess, step by step
    ok(await table.write(Array.from({ length: 30 }, (_, i) => row(i))), 'first write');
    await step('first write');
    const upserts = Array.from({ length: 12 }, () => row(r.int(0, 40)));
    ok(await table.write(upserts, { kinds: upserts.map(() => RowKind.UPDATE_AFTER) }), 'upsert');
    await step('upsert');
    const deletes = Array.from({ length: 6 }, () => ({ id: r.int(0, 40), region: r.pick(['eu', 'us']) }));
    ok(await table.write(deletes, { kinds: deletes.map(() => RowKind.DELETE) }), 'delete');
    await step('delete');
    const live = await readLiveFiles(table.store, table.path, (await table.snapshots.latest())!);
    const one = r.pick(live);
    expect((await compactBucket(table, one.partition, one.bucket, { full: true })).snapshot).toBeDefined();
    await step(`compaction of ${one.partition}/bucket-${one.bucket}`);
    ok(await table.overwrite([row(100, 'eu'), row(101, 'eu'), row(3, 'eu')]), 'overwrite');
    await step('overwrite of region=eu');
    ok(await table.deleteWhere('id < 10'), 'delete --where');
    await step('delete --where id < 10');
    const target = r.int(2, (await table.snapshots.latestId())! - 1);
    expect((await rollbackTo(table, { snapshotId: target })).hookError).toBeUndefined();
    await step(`rollback to ${target}`);
    const later = Array.from({ length: 8 }, () => row(r.int(0, 60)));
    ok(await table.write(later, { kinds: later.map(() => RowKind.UPDATE_AFTER) }), 'later write');
    await step('a write after the rollback');
    expect(positionDeleteFiles(dir), 'a v3 export writes no position delete file').toEqual([]);
    console.log(`seed ${seed}: every step checked; icebird failed on ${icebirdFailed} snapshot reads (Puffin deletes)`);
  });

  it('upgrades a v2 export to v3 in place, and refuses to go back to 2', { timeout: 300_000 }, async (ctx) => {
    const env = readers();
    if (env === undefined) return ctx.skip();
    // Prepare: a v2 export with position delete files
    const seed = testSeed('iceberg.deletion-vector-v3-upgrade');
    const r = rng(seed);
    const dir = mkdtempSync(join(tmpdir(), 'varve-dv-v3-up-'));
    dirs.push(dir);
    let table = await newTable(dir, {});
    const row = rowMaker(r);
    await table.write(Array.from({ length: 20 }, (_, i) => row(i)));
    const upserts = Array.from({ length: 10 }, () => row(r.int(0, 25)));
    await table.write(upserts, { kinds: upserts.map(() => RowKind.UPDATE_AFTER) });
    const loc = icebergLocation(table)!;
    const v2 = (await readCurrentIcebergMetadata(table.store, loc))!.metadata;
    expect(v2['format-version']).toBe(2);
    const v2Snapshots = v2.snapshots.length;
    expect(positionDeleteFiles(dir).length, `seed ${seed}: v2 wrote position delete files`).toBeGreaterThan(0);
    // Act: 2 → 3 (the alter's own commit already exports v3), then a write
    const altered = await table.alter([{ kind: 'set-option', key: 'metadata.iceberg.format-version', value: '3' }]);
    table = altered.table;
    const afterAlter = (await readCurrentIcebergMetadata(table.store, loc))!.metadata;
    expect(afterAlter['format-version'], "the alter's own commit exports with the new options").toBe(3);
    expect(afterAlter['current-snapshot-id']).toBe(altered.snapshot!.id);
    const more = Array.from({ length: 10 }, () => row(r.int(0, 25)));
    expect((await table.write(more, { kinds: more.map(() => RowKind.UPDATE_AFTER) })).compactionError).toBeUndefined();
    // Assess: v3 metadata, the v2 history kept and readable, the position delete files replaced by vectors
    await checkV3Export(table, `after the upgrade (seed ${seed})`);
    const { metadata } = (await readCurrentIcebergMetadata(table.store, loc))!;
    expect(metadata.snapshots.length, 'the v2 snapshots stay in the history').toBeGreaterThan(v2Snapshots);
    expect(metadata.snapshots.filter((s) => s['first-row-id'] === undefined).length).toBe(v2Snapshots);
    // The first v3 snapshot is the alter's.
    const entries = await readCurrentEntries(table.store, afterAlter);
    const removed = entries.filter((e) => e.status === EntryStatus.DELETED && e.format === 'PARQUET' && e.deletesFrom);
    expect(removed.length, 'the v2 position delete files are DELETED entries of the first v3 snapshot').toBeGreaterThan(
      0,
    );
    await checkEverySnapshot(env, table, `after the upgrade (seed ${seed})`);
    // 3 → 2 and resetting to the default are refused, saying why
    for (const change of [
      { kind: 'set-option' as const, key: 'metadata.iceberg.format-version', value: '2' },
      { kind: 'reset-option' as const, key: 'metadata.iceberg.format-version' },
    ]) {
      await expect(table.alter([change]), change.kind).rejects.toThrow(OptionError);
      await expect(table.alter([change]), change.kind).rejects.toThrow(/only go up/);
    }
  });

  it('exports a table without a primary key as v3 too (row lineage, no deletes)', { timeout: 300_000 }, async (ctx) => {
    const env = readers();
    if (env === undefined) return ctx.skip();
    // Prepare
    const seed = testSeed('iceberg.v3-append');
    const r = rng(seed);
    const dir = mkdtempSync(join(tmpdir(), 'varve-v3-append-'));
    dirs.push(dir);
    const table = await new FolderCatalog(new LocalStore(dir)).createTable('db.events', {
      fields: parseSchemaText('id INT NOT NULL, region STRING NOT NULL, note STRING'),
      partitionKeys: ['region'],
      options: { 'metadata.iceberg.storage': 'table-location', 'metadata.iceberg.format-version': '3' },
    });
    const row = () => ({ id: r.int(0, 1000), region: r.pick(['eu', 'us']), note: r.pick([null, 'x']) });
    // Act: writes, an overwrite, a compaction
    for (let i = 0; i < 3; i++) await table.write(Array.from({ length: r.int(1, 20) }, row));
    await table.overwrite([row(), row()]);
    await table.write(Array.from({ length: 5 }, row));
    await compactTable(table, { full: true });
    // Assess: every listed snapshot in the spec reader (row-id ranges checked), pyiceberg and icebird
    const { metadata } = (await readCurrentIcebergMetadata(table.store, icebergLocation(table)!))!;
    expect(metadata['format-version'], `seed ${seed}`).toBe(3);
    const { listed, icebirdFailed } = await checkEverySnapshot(env, table, `append table (seed ${seed})`);
    expect(listed.length).toBe((await table.snapshots.latestId())!);
    expect(icebirdFailed, 'icebird reads a v3 table without delete files').toBe(0);
  });

  it('refuses to point at a vector whose Puffin footer names the data file otherwise (written before locations)', {
    timeout: 120_000,
  }, async () => {
    // Prepare: vectors written, then their footers rewritten to the table-relative name older varve wrote
    const dir = mkdtempSync(join(tmpdir(), 'varve-dv-v3-old-'));
    dirs.push(dir);
    let table = await newTable(dir, { 'metadata.iceberg.format-version': '3', 'metadata.iceberg.storage': 'disabled' });
    await table.write([1, 2, 3, 4].map((id) => ({ id, region: 'eu', amount: '1.00', note: null })));
    await table.write([{ id: 2, region: 'eu', amount: '2.00', note: 'b' }], { kinds: [RowKind.UPDATE_AFTER] });
    const refs = await readDeletionIndex(table.store, table.path, (await table.snapshots.latest())!);
    expect(refs.length).toBeGreaterThan(0);
    for (const dvFile of new Set(refs.map((ref) => ref.dvFile))) {
      const key = tableKey(table.path, dvFile);
      const bytes = (await table.store.get(key)).body;
      const old = readPuffinFooter(bytes, key);
      const relative = (b: PuffinBlobMeta) =>
        b.properties['referenced-data-file'].slice(objectUri(table.store, tableKey(table.path, '')).length);
      const rewritten = writeDeletionVectorPuffin(
        old.map((b) => ({
          bytes: bytes.subarray(b.offset, b.offset + b.length),
          properties: { ...b.properties, 'referenced-data-file': relative(b) },
        })),
      );
      expect(rewritten.blobs.map((b) => b.offset)).toEqual(old.map((b) => b.offset));
      await table.store.put(key, rewritten.bytes);
    }
    table = (await table.alter([{ kind: 'set-option', key: 'metadata.iceberg.storage', value: 'table-location' }]))
      .table;
    // Act + Assess: the export fails saying why and what to do; a full compaction (no vectors left) then exports
    await expect(exportIceberg(table)).rejects.toThrow(IcebergExportError);
    await expect(exportIceberg(table)).rejects.toThrow(/names referenced-data-file .* compact .* --full/);
    await compactTable(table, { full: true });
    expect((await exportIceberg(table)).snapshotId).toBe(await table.snapshots.latestId());
  });

  it('accepts format versions 2 and 3 only', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'varve-dv-v3-opt-'));
    dirs.push(dir);
    for (const bad of ['1', '4', 'v3'])
      await expect(newTable(dir, { 'metadata.iceberg.format-version': bad }), bad).rejects.toThrow(
        /metadata\.iceberg\.format-version/,
      );
  });
});
