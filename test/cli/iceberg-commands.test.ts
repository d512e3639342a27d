/** `varve export-iceberg` and `varve sys <table> iceberg` against a folder warehouse. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { compactTable } from '../../lib/maintenance/compact.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { openStore } from '../../lib/store/open-store.js';
import { runVarve } from '../helpers/cli-process.js';

let warehouse: string;

/** `varve ...args` through the shared in-process runner: what it printed, which must exit 0. */
async function varve(...args: string[]): Promise<string> {
  const r = await runVarve(warehouse, args);
  expect(r, r.err).toMatchObject({ code: 0, err: '' });
  return r.out;
}

async function newTable(options: Record<string, string>) {
  return new FolderCatalog(openStore(warehouse)).createTable('db.t', {
    fields: parseSchemaText('id INT NOT NULL, v BIGINT'),
    primaryKeys: ['id'],
    options: { 'write-only': 'true', ...options },
  });
}

beforeEach(() => {
  warehouse = join(mkdtempSync(join(tmpdir(), 'varve-iceberg-cli-')), 'wh');
});

describe('varve sys <table> iceberg / varve export-iceberg', () => {
  it('shows the exported snapshot and the lag, and export-iceberg catches up', async () => {
    // Prepare
    const table = await newTable({ 'metadata.iceberg.storage': 'table-location' });
    await table.write([{ id: 1, v: 1n }]);
    await compactTable(table, { full: true });
    await table.write([{ id: 2, v: 2n }]);
    // Act
    const sys = JSON.parse(await varve('sys', 'db.t', 'iceberg', '--format', 'jsonl'));
    // Assess: the APPEND after the full compaction leaves the Iceberg view current but behind by one snapshot
    expect(sys).toMatchObject({ storage: 'table-location', exported_snapshot: 2, latest_snapshot: 3, snapshots_behind: 1, data_files: 1, records: 1, up_to_date: true });
    expect(sys.metadata_location).toMatch(/db\.db\/t\/metadata\/v2\.metadata\.json$/);
    expect(typeof sys.seconds_behind).toBe('number');
    // Act + Assess: an explicit export writes snapshot 3 (whose top level is unchanged)
    expect(await varve('export-iceberg', 'db.t')).toMatch(/^db\.t: exported snapshot 3 \(1 data files, 1 records; 4 objects, [\d.]+ (B|KiB) written\) to file:\/\/.*v3\.metadata\.json\n$/);
    expect(await varve('export-iceberg', 'db.t')).toMatch(/the Iceberg metadata is current \(snapshot 3\)/);
    expect(JSON.parse(await varve('sys', 'db.t', 'iceberg', '--format', 'jsonl'))).toMatchObject({ exported_snapshot: 3, snapshots_behind: 0 });
  });

  it('refuses export-iceberg on a table that does not export, naming the option', async () => {
    await newTable({});
    const refused = await runVarve(warehouse, ['export-iceberg', 'db.t']);
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(/^varve: .*metadata\.iceberg\.storage=table-location/);
    expect(JSON.parse(await varve('sys', 'db.t', 'iceberg', '--format', 'jsonl'))).toMatchObject({ storage: 'disabled', exported_snapshot: null });
  });
});
