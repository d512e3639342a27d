/**
 * The window of per-source idempotence (`ingest.deduplication-window`): a source recorded in a
 * snapshot (`varve.sources`) is found while that snapshot is younger than the window, and no
 * longer once it is older; the window is the table's option, 30 minutes by default.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { landRows } from '../../lib/table/land-rows.js';
import { RecentBatches, recentBatchesOf } from '../../lib/table/recent-batches.js';
import type { Table } from '../../lib/table/table.js';
import { rng, testSeed } from '../helpers/random.js';

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

describe('a warm container follows the window as it changes (randomized, seed printed)', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('a longer window reads back further, a shorter one forgets, against a model of every snapshot', async () => {
    const seed = testSeed('deduplication-window change');
    const r = rng(seed);
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now());
    const table = await new FolderCatalog(new MemoryStore()).createTable('db.t', {
      fields: parseSchemaText('id BIGINT, v STRING'),
      primaryKeys: ['id'],
      options: { bucket: '1' },
    });
    const history: Array<{ id: number; time: number; source: string }> = [];
    const warm = new RecentBatches(table, Date.now, 30 * MIN);
    for (let step = 0; step < 40; step++) {
      vi.setSystemTime(Date.now() + r.int(0, 15 * MIN));
      for (let n = r.int(0, 2); n > 0; n--) {
        const source = `sqs:m${history.length}`;
        const landed = await landRows(table, [{ id: BigInt(history.length), v: 'a' }], [0], {
          commitUser: 'ingest',
          commitIdentifier: `ingest-${source}`,
          sources: [source],
        });
        history.push({ id: landed.snapshot!.id, time: landed.snapshot!.timeMillis, source });
      }
      // The table's option altered now and then (a warm container takes it at its next open).
      if (r.chance(0.3)) warm.windowMs = r.pick([10, 30, 60, 120, 240]) * MIN;
      await warm.refresh();
      const horizon = Date.now() - warm.windowMs;
      for (const h of history) {
        const what = `seed ${seed}, step ${step}, a ${warm.windowMs / MIN}-minute window: ${h.source}`;
        expect(warm.snapshotOf(h.source), what).toBe(h.time >= horizon ? h.id : undefined);
      }
    }
    expect(history.length).toBeGreaterThan(10);
  });
});
