/** Landing rows that arrive in chunks: written as they come, committed once, or not at all. */
import { describe, expect, it } from 'vitest';
import { RowKind, type Row, type RowKindByte } from '../../lib/schema/types.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { listAll } from '../../lib/store/object-store.js';
import { landRowChunks, type RowChunk } from '../../lib/table/land-rows.js';
import { testTable } from '../helpers/tables.js';

async function newTable() {
  const store = new MemoryStore();
  const table = await testTable({
    schema: 'id BIGINT, v STRING',
    primaryKeys: ['id'],
    // A buffer far smaller than the input, not spillable: it flushes level-0 files as it fills.
    options: { bucket: '1', 'write-only': 'true', 'write-buffer-size': '16 kb', 'write-buffer-spillable': 'false' },
    store,
  });
  return { store, table };
}

function chunk(from: number, n: number): RowChunk {
  const rows: Row[] = [];
  for (let i = 0; i < n; i++) rows.push({ id: BigInt(from + i), v: `value-${from + i}-${'x'.repeat(40)}` });
  return { rows, kinds: rows.map(() => RowKind.INSERT as RowKindByte) };
}

const dataFiles = async (store: MemoryStore) =>
  (await listAll(store, '')).filter((o) => o.key.endsWith('.parquet')).length;

describe('landRowChunks', () => {
  it('writes each chunk into the writer as it arrives and commits all of them once', async () => {
    // Prepare: a source that records how many data files exist when it is asked for each chunk.
    const { store, table } = await newTable();
    const filesSeen: number[] = [];
    async function* source(): AsyncGenerator<RowChunk> {
      for (let c = 0; c < 5; c++) {
        filesSeen.push(await dataFiles(store));
        yield chunk(c * 2000, 2000);
      }
    }
    // Act
    const landed = await landRowChunks(table, source(), { commitUser: 'u', commitIdentifier: 'c1' });
    // Assess: files were flushed before the input ended (the input was never held whole), and
    // one snapshot holds every row.
    expect(filesSeen[filesSeen.length - 1]).toBeGreaterThan(0);
    expect(landed.rows).toBe(10_000);
    expect(landed.snapshot?.id).toBe(1);
    expect(await table.count()).toBe(10_000);
  });

  it('commits nothing when the source fails midway', async () => {
    const { table } = await newTable();
    async function* source(): AsyncGenerator<RowChunk> {
      yield chunk(0, 3000);
      yield chunk(3000, 3000);
      throw new Error('malformed input at line 6001');
    }
    await expect(landRowChunks(table, source(), { commitUser: 'u', commitIdentifier: 'c1' })).rejects.toThrow(
      /line 6001/,
    );
    expect(await table.snapshots.latestId()).toBeUndefined();
  });
});
