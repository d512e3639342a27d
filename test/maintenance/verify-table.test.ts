/** verifyTable: a healthy table passes; a missing data file, manifest or tag file, or a hole in the ids, is reported. */
import { describe, expect, it } from 'vitest';
import { verifyTable } from '../../lib/maintenance/verify-table.js';
import { readManifestList } from '../../lib/manifest/manifest-list.js';
import { readLiveFiles } from '../../lib/manifest/scan.js';
import { manifestKey } from '../../lib/manifest/table-paths.js';
import { createTag } from '../../lib/snapshot/tags.js';
import { dataFileKey } from '../../lib/table/paths.js';
import { eightSnapshots, newTable } from './expiry-fixtures.js';

describe('verifyTable', () => {
  it('passes a healthy table and counts what it checked', async () => {
    // Prepare
    const table = await newTable({ 'changelog-producer': 'input' });
    await eightSnapshots(table);
    await createTag(table.store, table.path, 'first', 1);
    // Act
    const v = await verifyTable(table);
    // Assess
    expect(v.ok).toBe(true);
    expect(v.snapshots).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(v.tags).toEqual(['first']);
    expect(v.checkedReferences).toBeGreaterThan(8 * 3);
  });

  it('reports a missing data file against every snapshot that needs it', async () => {
    // Prepare
    const table = await newTable();
    await eightSnapshots(table);
    const live = await readLiveFiles(table.store, table.path, await table.snapshots.read(8));
    const victim = dataFileKey(table.path, live[0].partition, live[0].bucket, live[0].file.fileName);
    await table.store.delete(victim);
    // Act
    const v = await verifyTable(table);
    // Assess
    expect(v.ok).toBe(false);
    expect(v.problems.every((p) => p.key === victim)).toBe(true);
    expect(v.problems.map((p) => p.owner)).toContain('snapshot 8');
  });

  it('reports an unreadable manifest, a tag that lost a file, and a hole in the snapshot ids', async () => {
    // Prepare
    const table = await newTable();
    await eightSnapshots(table);
    await createTag(table.store, table.path, 'old', 2);
    const tagged = await table.snapshots.read(2);
    const manifest = (await readManifestList(table.store, table.path, tagged.deltaManifestList))[0].fileName;
    await table.store.delete(manifestKey(table.path, manifest));
    await table.store.delete(table.snapshots.snapshotKey(5));
    // Act
    const v = await verifyTable(table);
    // Assess
    const owners = new Set(v.problems.map((p) => p.owner));
    expect(owners.has('tag old')).toBe(true);
    expect(owners.has('snapshot 2')).toBe(true);
    expect(v.problems.some((p) => /not contiguous: 4 is followed by 6/.test(p.problem))).toBe(true);
  });
});
