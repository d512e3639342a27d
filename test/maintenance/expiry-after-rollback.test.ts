/**
 * Expiry after a forward rollback: the rollback snapshot ADDs back files of its target that
 * snapshots before it DELETEd (a compaction's inputs), and on a deletion-vector table names its
 * target's vectors. Expiring the snapshots between the target and the rollback, while the
 * rollback stays, must delete none of them: every kept snapshot reads, and verify is ok.
 */
import { describe, expect, it } from 'vitest';
import { pastFloor } from '../helpers/expiry-clock.js';
import { compactTable } from '../../lib/maintenance/compact.js';
import { expireSnapshots } from '../../lib/maintenance/expire-snapshots.js';
import { rollbackTo } from '../../lib/maintenance/rollback.js';
import { verifyTable } from '../../lib/maintenance/verify-table.js';
import { rowTexts, testTable } from '../helpers/tables.js';

describe('expiry after a rollback', () => {
  it.each([
    ['a keyed table', {}],
    ['a deletion-vector table', { 'deletion-vectors.enabled': 'true' }],
  ])('%s: the files a kept rollback restored stay', async (_name, options: Record<string, string>) => {
    const table = await testTable({
      schema: 'id INT NOT NULL, v STRING',
      primaryKeys: ['id'],
      options: { bucket: '1', ...options },
    });
    await table.write([
      { id: 1, v: 'a' },
      { id: 2, v: 'a' },
    ]); // 1
    await table.write([{ id: 2, v: 'b' }]); // 2: on a DV table, a vector on snapshot 1's file
    await compactTable(table, { full: true }); // 3: DELETEs the files of 1 and 2
    await rollbackTo(table, { snapshotId: 2 }); // 4: ADDs them back
    await table.write([{ id: 3, v: 'c' }]); // 5
    const expected = await rowTexts(table, ['id', 'v']);
    expect(expected).toEqual(['1:a', '2:b', '3:c']);

    // Keep 3..5: the range [1, 3) ends before the rollback that restored what 3 deleted.
    await expireSnapshots(table, { retainMin: 3, retainMax: 3, olderThanMs: 0, now: pastFloor() });
    expect((await table.snapshots.earliest())?.id).toBe(3);
    expect(await rowTexts(table, ['id', 'v'])).toEqual(expected);
    expect(await rowTexts(table, ['id', 'v'], { snapshotId: 4 })).toEqual(['1:a', '2:b']);
    const report = await verifyTable(table);
    expect(report.problems, JSON.stringify(report.problems)).toEqual([]);
  });
});
