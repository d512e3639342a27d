import * as arrow from 'apache-arrow';
import { afterAll, describe, expect, it } from 'vitest';
import { CorruptMetadataError, DecoderWorkerError } from '../../lib/errors.js';
import { rowsToTable } from '../../lib/format/columns.js';
import {
  configureDecodePool,
  decodePool,
  defaultDecodeMinBytes,
  defaultDecodeThreads,
} from '../../lib/format/decode-pool.js';
import { openDataFileRanged, writeDataFile } from '../../lib/format/data-file.js';
import type { Row } from '../../lib/schema/types.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { rng, testSeed } from '../helpers/random.js';
import { allTypeFields, edgeRows, randomRows } from './fixtures.js';

const FIELDS = allTypeFields();

function physical(rows: Row[]): arrow.Table {
  return rowsToTable(FIELDS, rows, { sequence: rows.map((_, i) => i), kind: rows.map((_, i) => i % 4) });
}

/** Every row group of a stored file, decoded through openDataFileRanged with `columns`, as IPC bytes per group. */
async function decodeAll(store: MemoryStore, key: string, columns: string[]): Promise<Uint8Array[]> {
  const d = await openDataFileRanged(store, key);
  return (await d.readRowGroups(columns)).map((t) => arrow.tableToIPC(t, 'stream'));
}

afterAll(async () => {
  delete process.env.VARVE_TEST_DECODE_WORKER_FAULT;
  await configureDecodePool({ restart: true });
});

describe('DecodePool', () => {
  it('decodes every row group and projection exactly as the inline decode, for random files of every type with nulls', async () => {
    // Prepare: random files (zstd and lz4, row groups of random sizes) in a store.
    const seed = testSeed('decode-pool identity');
    const r = rng(seed);
    const store = new MemoryStore();
    const files: { key: string; columns: string[][] }[] = [];
    for (let i = 0; i < 4; i++) {
      const t = physical([...(i === 0 ? edgeRows() : []), ...randomRows(r, FIELDS, r.int(1, 4000))]);
      const key = `f${i}.parquet`;
      await store.put(
        key,
        writeDataFile(t, { compression: r.pick(['zstd', 'lz4'] as const), rowGroupSize: r.int(100, 3000) }),
      );
      const names = t.schema.fields.map((f) => f.name);
      const pick = names.filter(() => r.chance(0.4));
      files.push({
        key,
        columns: [names, pick.length ? pick.reverse() : ['id'], ['id', '_SEQUENCE_NUMBER', '_VALUE_KIND']],
      });
    }
    // Act: inline, then on two workers taking every row group (however small), all files at once.
    await configureDecodePool({ threads: 0 });
    const inline = await Promise.all(files.flatMap((f) => f.columns.map((c) => decodeAll(store, f.key, c))));
    await configureDecodePool({ threads: 2, minBytes: 0 });
    const pooled = await Promise.all(files.flatMap((f) => f.columns.map((c) => decodeAll(store, f.key, c))));
    // Assess: the same Arrow bytes per row group, and the work went to the workers.
    expect(pooled.length).toBe(inline.length);
    pooled.forEach((groups, i) => {
      expect(groups.length, `read ${i} (seed ${seed})`).toBe(inline[i].length);
      groups.forEach((g, j) =>
        expect(Buffer.from(g).equals(Buffer.from(inline[i][j])), `read ${i} row group ${j} (seed ${seed})`).toBe(true),
      );
    });
    expect(decodePool().started).toBe(2);
  });

  it('an error thrown inside a worker fails the read with its message', async () => {
    const store = new MemoryStore();
    await store.put(
      'f.parquet',
      writeDataFile(physical(randomRows(rng(6), FIELDS, 300)), { compression: 'zstd', rowGroupSize: 100 }),
    );
    process.env.VARVE_TEST_DECODE_WORKER_FAULT = 'throw';
    await configureDecodePool({ threads: 1, minBytes: 0, restart: true });
    const failed = decodeAll(store, 'f.parquet', ['id']);
    // As the inline decode reports a decode error: a CorruptMetadataError naming the file.
    await expect(failed).rejects.toThrow(CorruptMetadataError);
    await expect(failed).rejects.toThrow(/f\.parquet: .*injected decoder fault/);
    delete process.env.VARVE_TEST_DECODE_WORKER_FAULT;
    await configureDecodePool({ threads: 1, minBytes: 0, restart: true });
    expect((await decodeAll(store, 'f.parquet', ['id'])).length).toBe(3);
  });

  it('a worker that exits fails the read with DecoderWorkerError, and the pool starts a fresh one after', async () => {
    const store = new MemoryStore();
    await store.put(
      'f.parquet',
      writeDataFile(physical(randomRows(rng(7), FIELDS, 300)), { compression: 'zstd', rowGroupSize: 100 }),
    );
    process.env.VARVE_TEST_DECODE_WORKER_FAULT = 'exit';
    await configureDecodePool({ threads: 1, minBytes: 0, restart: true });
    const failed = decodeAll(store, 'f.parquet', ['id', 's']);
    await expect(failed).rejects.toThrow(DecoderWorkerError);
    await expect(failed).rejects.toThrow(/exited with code 70/);
    expect(decodePool().started).toBe(0);
    delete process.env.VARVE_TEST_DECODE_WORKER_FAULT;
    expect((await decodeAll(store, 'f.parquet', ['id', 's'])).length).toBe(3);
    expect(decodePool().started).toBe(1);
  });

  it('takes its thread count from VARVE_DECODE_THREADS, else the cores (Lambda: the vCPUs its memory buys), and its size floor from VARVE_DECODE_MIN_BYTES', () => {
    expect(defaultDecodeThreads({ VARVE_DECODE_THREADS: '0' })).toBe(0);
    expect(defaultDecodeThreads({ VARVE_DECODE_THREADS: '3' })).toBe(3);
    expect(() => defaultDecodeThreads({ VARVE_DECODE_THREADS: 'two' })).toThrow(/VARVE_DECODE_THREADS/);
    expect(defaultDecodeThreads({ AWS_LAMBDA_FUNCTION_MEMORY_SIZE: '1024' })).toBe(0);
    expect(defaultDecodeThreads({})).toBeLessThanOrEqual(4);
    expect(defaultDecodeMinBytes({ VARVE_DECODE_MIN_BYTES: '0' })).toBe(0);
    expect(() => defaultDecodeMinBytes({ VARVE_DECODE_MIN_BYTES: '-1' })).toThrow(/VARVE_DECODE_MIN_BYTES/);
  });
});
