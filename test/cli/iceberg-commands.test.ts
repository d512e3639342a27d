/** `varve export-iceberg` and `varve sys <table> iceberg` against a folder warehouse. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { compactTable } from '../../lib/maintenance/compact.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { openStore } from '../../lib/store/open-store.js';
import { runVarve, varveOk } from '../helpers/cli-process.js';

let warehouse: string;

/** `varve ...args` through the shared in-process runner: what it printed, which must exit 0. */
const varve = (...args: string[]): Promise<string> => varveOk(warehouse, args);

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
    // Assess: the APPEND after the full compaction leaves the exported view unchanged (no export
    // due), but stale: Iceberg readers do not see its level-0 file, and the status says so
    expect(sys).toMatchObject({
      storage: 'table-location',
      exported_snapshot: 2,
      latest_snapshot: 3,
      snapshots_behind: 1,
      data_files: 1,
      records: 1,
      up_to_date: false,
      files_not_visible: 1,
      rows_not_visible: 1,
      files_no_longer_live: 0,
      export_due: false,
    });
    expect(sys.view_age_seconds).toBeGreaterThanOrEqual(0);
    expect(sys.metadata_location).toMatch(/db\.db\/t\/metadata\/v2\.metadata\.json$/);
    expect(typeof sys.seconds_behind).toBe('number');
    // Act + Assess: an explicit export writes snapshot 3 (whose top level is unchanged) and says the view is still stale
    const stale =
      /\ndb\.t: the Iceberg view is stale: Iceberg readers do not see 1 rows in 1 files written since, until a full compaction of their buckets \(`varve compact db\.t --full`.*\n$/;
    const exported = await varve('export-iceberg', 'db.t');
    expect(exported).toMatch(
      /^db\.t: exported snapshot 3 \(1 data files, 1 records; 4 objects, [\d.]+ (B|KiB) written\) to file:\/\/.*v3\.metadata\.json\n/,
    );
    expect(exported).toMatch(stale);
    const again = await varve('export-iceberg', 'db.t');
    expect(again).toMatch(/the Iceberg metadata already exports snapshot 3 at /);
    expect(again).toMatch(stale);
    expect(again).not.toMatch(/current/);
    expect(JSON.parse(await varve('sys', 'db.t', 'iceberg', '--format', 'jsonl'))).toMatchObject({
      exported_snapshot: 3,
      snapshots_behind: 0,
      up_to_date: false,
    });
    // Act + Assess: a full compaction brings every row to the top level: now the view is exact
    await compactTable(table, { full: true });
    expect(JSON.parse(await varve('sys', 'db.t', 'iceberg', '--format', 'jsonl'))).toMatchObject({
      exported_snapshot: 4,
      snapshots_behind: 0,
      up_to_date: true,
      files_not_visible: 0,
      rows_not_visible: 0,
      view_age_seconds: 0,
      export_due: false,
    });
    expect(await varve('export-iceberg', 'db.t')).toMatch(
      /^db\.t: the Iceberg metadata already exports snapshot 4 at \S+\n$/,
    );
  });

  it('refuses export-iceberg on a table that does not export, naming the option', async () => {
    await newTable({});
    const refused = await runVarve(warehouse, ['export-iceberg', 'db.t']);
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(/^varve: .*metadata\.iceberg\.storage=table-location/);
    expect(JSON.parse(await varve('sys', 'db.t', 'iceberg', '--format', 'jsonl'))).toMatchObject({
      storage: 'disabled',
      exported_snapshot: null,
    });
  });
});
