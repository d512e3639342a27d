import * as arrow from 'apache-arrow';
import { afterAll, describe, expect, it } from 'vitest';
import { EncoderWorkerError, SchemaMismatchError } from '../../lib/errors.js';
import { physicalArrowSchemaOf } from '../../lib/format/arrow-schema.js';
import { rowsToTable } from '../../lib/format/columns.js';
import { DataFileStreamWriter } from '../../lib/format/data-file-stream.js';
import { readDataFile } from '../../lib/format/data-file.js';
import { defaultEncodeThreads, EncoderPool } from '../../lib/format/encoder-pool.js';
import type { Row } from '../../lib/schema/types.js';
import { dataPart, footerOf } from '../helpers/parquet-bytes.js';
import { rng, testSeed } from '../helpers/random.js';
import { allTypeFields, edgeRows, randomRows } from './fixtures.js';

const FIELDS = allTypeFields();

function physical(rows: Row[]): arrow.Table {
  return rowsToTable(FIELDS, rows, { sequence: rows.map((_, i) => i), kind: rows.map((_, i) => i % 4) });
}

/** The pieces a flush would hand the encoder: random sizes, some above one IPC slice. */
function piecesOf(table: arrow.Table, r: ReturnType<typeof rng>): arrow.Table[] {
  const out: arrow.Table[] = [];
  for (let at = 0; at < table.numRows; ) {
    const n = Math.min(table.numRows - at, r.int(1, 70_000));
    out.push(table.slice(at, at + n));
    at += n;
  }
  return out;
}

const pools: EncoderPool[] = [];
function pool(threads: number): EncoderPool {
  const p = new EncoderPool(threads);
  pools.push(p);
  return p;
}

afterAll(async () => {
  for (const p of pools) await p.close();
  delete process.env.VARVE_TEST_ENCODE_WORKER_FAULT;
});

describe('EncoderPool', () => {
  it('encodes the same pages and footer as the inline encoder, for random tables of every type with nulls, side by side', async () => {
    // Prepare: three random tables (sizes around the 65,536-row slice), each in random pieces.
    const seed = testSeed('encoder-pool identity');
    const r = rng(seed);
    const p = pool(2);
    expect(p.available).toBe(true);
    const tables = [
      physical([...edgeRows(), ...randomRows(r, FIELDS, r.int(1, 3000))]),
      physical(randomRows(r, FIELDS, 70_000)),
      physical(randomRows(r, FIELDS, r.int(1, 200))),
    ];
    for (const compression of ['zstd', 'lz4'] as const) {
      const opts = {
        compression,
        metadata: { 'varve.schema-id': '0', seed: String(seed) },
        rowGroupSize: r.pick([1000, r.int(50, 5000), 262_144]),
      };
      const pieces = tables.map((t) => piecesOf(t, r));
      // Act: inline one after the other; on the pool all three at once (two workers, one holds two files).
      const inline: Uint8Array[] = [];
      for (const ps of pieces) {
        const w = await DataFileStreamWriter.open(tables[0].schema, opts);
        for (const piece of ps) await w.add(piece);
        inline.push(await w.finish());
      }
      const remote = await Promise.all(
        pieces.map(async (ps) => {
          const w = p.open(tables[0].schema, opts);
          for (const piece of ps) await w.add(piece);
          return w.finish();
        }),
      );
      // Assess: every page byte for byte, the same footer, and the rows read back.
      for (let i = 0; i < tables.length; i++) {
        const what = `table ${i} (${compression}, rowGroupSize ${opts.rowGroupSize}, pieces ${pieces[i].map((x) => x.numRows).join('+')}, seed ${seed})`;
        expect(Buffer.from(dataPart(remote[i])).equals(Buffer.from(dataPart(inline[i]))), what).toBe(true);
        expect(footerOf(remote[i]), what).toEqual(footerOf(inline[i]));
        expect((await readDataFile(remote[i])).numRows).toBe(tables[i].numRows);
      }
    }
    expect(p.started).toBe(2);
  });

  it("spreads one file's row groups over every worker and splices them into the inline encoder's file", async () => {
    // Prepare: one table of many small row groups, added in random pieces.
    const seed = testSeed('encoder-pool one file');
    const r = rng(seed);
    const p = pool(2);
    const t = physical(randomRows(r, FIELDS, r.int(3000, 8000)));
    const opts = {
      compression: r.pick(['zstd', 'lz4'] as const),
      metadata: { seed: String(seed) },
      rowGroupSize: r.int(200, 900),
    };
    const pieces = piecesOf(t, r);
    // Act
    const inline = await DataFileStreamWriter.open(t.schema, opts);
    const remote = p.open(t.schema, opts);
    for (const piece of pieces) {
      await inline.add(piece);
      await remote.add(piece);
    }
    const [a, b] = [await inline.finish(), await remote.finish()];
    // Assess: both workers encoded (the pool keeps two pieces per thread in flight), same file.
    const what = `${t.numRows} rows, row groups of ${opts.rowGroupSize}, seed ${seed}`;
    expect(p.started, what).toBe(2);
    expect(Buffer.from(dataPart(b)).equals(Buffer.from(dataPart(a))), what).toBe(true);
    expect(footerOf(b), what).toEqual(footerOf(a));
  });

  it('keeps the slice buffers the workers give back while a file is open, for the next slices, and none once idle', async () => {
    const p = pool(1);
    const t = physical(randomRows(rng(4), FIELDS, 3000));
    const opts = { compression: 'zstd' as const, rowGroupSize: 500 };
    const other = p.open(t.schema, opts);
    const f = p.open(t.schema, opts);
    await f.add(t);
    expect((await readDataFile(await f.finish())).numRows).toBe(3000);
    // Six pieces came back while `other` is open: their buffers wait for reuse (at most two per thread).
    expect(p.spareBytes).toBeGreaterThan(0);
    await other.add(t);
    expect((await readDataFile(await other.finish())).numRows).toBe(3000);
    expect(p.spareBytes).toBe(0);
  });

  it('checks schema and options where the inline encoder does, with its errors', () => {
    const p = pool(1);
    const noSystem = new arrow.Schema(physicalArrowSchemaOf(FIELDS).fields.slice(0, -2));
    expect(() => p.open(noSystem, { compression: 'zstd' })).toThrow(SchemaMismatchError);
    expect(p.started).toBe(0);
  });

  it('a discarded file and a finished one leave the worker idle and reusable', async () => {
    const p = pool(1);
    const t = physical(randomRows(rng(1), FIELDS, 100));
    const a = p.open(t.schema, { compression: 'zstd' });
    await a.add(t);
    await a.discard();
    const b = p.open(t.schema, { compression: 'zstd' });
    await b.add(t);
    expect((await readDataFile(await b.finish())).numRows).toBe(100);
    expect(p.started).toBe(1);
  });

  it('an error thrown inside a worker comes back from add or finish, with its message', async () => {
    process.env.VARVE_TEST_ENCODE_WORKER_FAULT = 'throw';
    const p = pool(1);
    const t = physical(randomRows(rng(2), FIELDS, 50));
    const w = p.open(t.schema, { compression: 'zstd' });
    const failed = (async () => {
      await w.add(t);
      await w.add(t);
      await w.add(t);
      return w.finish();
    })();
    // (the worker starts at the first piece and reads the hook then)
    await expect(failed).rejects.toThrow(/injected encoder fault/);
    delete process.env.VARVE_TEST_ENCODE_WORKER_FAULT;
    expect(p.started).toBe(1);
  });

  it('a worker that exits fails its files with EncoderWorkerError, and the pool starts a fresh one after', async () => {
    process.env.VARVE_TEST_ENCODE_WORKER_FAULT = 'exit';
    const p = pool(1);
    const t = physical(randomRows(rng(3), FIELDS, 50));
    const w = p.open(t.schema, { compression: 'zstd' });
    const failed = (async () => {
      for (let i = 0; i < 4; i++) await w.add(t);
      return w.finish();
    })();
    await expect(failed).rejects.toThrow(EncoderWorkerError);
    delete process.env.VARVE_TEST_ENCODE_WORKER_FAULT;
    await expect(failed).rejects.toThrow(/exited with code 70/);
    expect(p.started).toBe(0);
    const again = p.open(t.schema, { compression: 'zstd' });
    await again.add(t);
    expect((await readDataFile(await again.finish())).numRows).toBe(50);
  });

  it('takes its thread count from VARVE_ENCODE_THREADS, else the cores (Lambda: the vCPUs its memory buys)', () => {
    expect(defaultEncodeThreads({ VARVE_ENCODE_THREADS: '0' })).toBe(0);
    expect(defaultEncodeThreads({ VARVE_ENCODE_THREADS: '3' })).toBe(3);
    expect(() => defaultEncodeThreads({ VARVE_ENCODE_THREADS: 'two' })).toThrow(/VARVE_ENCODE_THREADS/);
    expect(defaultEncodeThreads({ AWS_LAMBDA_FUNCTION_MEMORY_SIZE: '1024' })).toBe(0);
    expect(defaultEncodeThreads({})).toBeLessThanOrEqual(4);
  });
});
