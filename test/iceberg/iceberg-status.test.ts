/**
 * `sys iceberg` tells the truth (issue 31 §3): while Iceberg readers miss files varve holds, or
 * still read files varve removed, the status says so, with counts and the age of the oldest miss.
 */
import { describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { exportIceberg } from '../../lib/iceberg/export.js';
import { icebergStatus } from '../../lib/iceberg/iceberg-status.js';
import { compactTable } from '../../lib/maintenance/compact.js';
import { rollbackTo } from '../../lib/maintenance/rollback.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { MemoryStore } from '../../lib/store/memory-store.js';

async function appendTable(store: MemoryStore) {
  return new FolderCatalog(store).createTable('db.events', {
    fields: parseSchemaText('id INT NOT NULL, v BIGINT'),
    primaryKeys: [],
    options: { 'metadata.iceberg.storage': 'table-location', bucket: '-1' },
  });
}

const rows = (n: number, from: number) => Array.from({ length: n }, (_, i) => ({ id: from + i, v: BigInt(i) }));

describe('icebergStatus', () => {
  it('counts the files and rows Iceberg readers miss and the files they still read, until the export catches up', async () => {
    // Prepare: one exported commit, then exports fail for a write and a compaction
    const store = new MemoryStore();
    const table = await appendTable(store);
    await table.write(rows(3, 0));
    const t0 = Date.now();
    expect(await icebergStatus(table, t0)).toMatchObject({
      up_to_date: true,
      files_not_visible: 0,
      files_no_longer_live: 0,
      view_age_seconds: 0,
      export_due: false,
    });
    store.injectFault({ op: 'putIfAbsent', keyIncludes: '.metadata.json', times: 100 });
    const w = await table.write(rows(2, 10));
    expect(w.compactionError).toBeDefined();
    // Act
    const afterWrite = await icebergStatus(table, w.snapshot!.timeMillis + 5000);
    // Assess: the second file is not visible, for about 5 s
    expect(afterWrite).toMatchObject({
      exported_snapshot: 1,
      latest_snapshot: 2,
      snapshots_behind: 1,
      up_to_date: false,
      files_not_visible: 1,
      rows_not_visible: 2,
      files_no_longer_live: 0,
      export_due: true,
    });
    expect(afterWrite.view_age_seconds).toBeGreaterThanOrEqual(4);
    expect(afterWrite.view_age_seconds).toBeLessThan(60);
    // Act: a compaction rewrites both files; its export fails too
    await compactTable(table, { full: true });
    const afterCompact = await icebergStatus(table);
    // Assess: Iceberg reads a file varve removed and misses the compacted one
    expect(afterCompact).toMatchObject({
      up_to_date: false,
      files_not_visible: 1,
      rows_not_visible: 5,
      files_no_longer_live: 1,
      export_due: true,
    });
    // Act: the export catches up
    store.clearFaults();
    expect((await exportIceberg(table)).status).toBe('exported');
    // Assess
    expect(await icebergStatus(table)).toMatchObject({
      up_to_date: true,
      files_not_visible: 0,
      rows_not_visible: 0,
      files_no_longer_live: 0,
      view_age_seconds: 0,
      export_due: false,
      snapshots_behind: 0,
    });
  });

  it("is up to date right after a rollback: the rollback is a commit, exported at once with its target's files", async () => {
    // Prepare
    const store = new MemoryStore();
    const table = await appendTable(store);
    for (let i = 0; i < 3; i++) await table.write(rows(2, i * 10));
    // Act
    const back = await rollbackTo(table, { snapshotId: 1 });
    const s = await icebergStatus(table);
    // Assess: Iceberg reads the rollback snapshot, which holds snapshot 1's files only
    expect(back.snapshot!.id).toBe(4);
    expect(s).toMatchObject({
      exported_snapshot: 4,
      latest_snapshot: 4,
      snapshots_behind: 0,
      up_to_date: true,
      files_no_longer_live: 0,
      export_due: false,
    });
  });
});
