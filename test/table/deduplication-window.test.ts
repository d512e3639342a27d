/**
 * The window of per-source idempotence (`ingest.deduplication-window`): a source recorded in a
 * snapshot (`varve.sources`) is found while that snapshot is younger than the window, and no
 * longer once it is older; the window is the table's option, 30 minutes by default.
 */
import { describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { landRows } from '../../lib/table/land-rows.js';
import { RecentBatches, recentBatchesOf } from '../../lib/table/recent-batches.js';
import type { Table } from '../../lib/table/table.js';

const MIN = 60_000;

async function tableWithSource(options: Record<string, string> = {}): Promise<{ table: Table; committedAt: number }> {
  const table = await new FolderCatalog(new MemoryStore()).createTable('db.t', {
    fields: parseSchemaText('id BIGINT, v STRING'),
    primaryKeys: ['id'],
    options: { bucket: '1', ...options },
  });
  const landed = await landRows(table, [{ id: 1n, v: 'a' }], [0], {
    commitUser: 'ingest',
    commitIdentifier: 'ingest-m1',
    sources: ['sqs:m1'],
  });
  return { table, committedAt: landed.snapshot!.timeMillis };
}

describe('ingest.deduplication-window', () => {
  it('finds a landed source for 30 minutes by default, and not after', async () => {
    const { table, committedAt } = await tableWithSource();
    const within = new RecentBatches(table, () => committedAt + 29 * MIN);
    await within.refresh();
    expect(within.snapshotOf('sqs:m1')).toBe(1);
    const after = new RecentBatches(table, () => committedAt + 31 * MIN);
    await after.refresh();
    expect(after.snapshotOf('sqs:m1')).toBeUndefined();
  });

  it('follows the table option, also for the process-wide instance', async () => {
    const { table, committedAt } = await tableWithSource({ 'ingest.deduplication-window': '2 h' });
    const within = new RecentBatches(table, () => committedAt + 90 * MIN);
    await within.refresh();
    expect(within.snapshotOf('sqs:m1')).toBe(1);
    expect(recentBatchesOf(table).windowMs).toBe(120 * MIN);
    const short = await tableWithSource({ 'ingest.deduplication-window': '5 min' });
    const after = new RecentBatches(short.table, () => short.committedAt + 6 * MIN);
    await after.refresh();
    expect(after.snapshotOf('sqs:m1')).toBeUndefined();
  });
});
