/**
 * Batches copied out of parquet-wasm through the C Data Interface (arrow-import.ts) hold what the
 * IPC route gives, for every column type varve writes; a column the importer does not take falls
 * back to IPC; reused slabs are reused; ParquetBytes reads what the concatenated parts hold.
 */
import * as arrow from 'apache-arrow';
import {
  ParquetFile,
  Table as WasmTable,
  wasmMemory,
  writeParquet,
  type RecordBatch as WasmRecordBatch,
} from 'parquet-wasm';
import { describe, expect, it } from 'vitest';
import {
  freshBatchMemory,
  importWasmBatch,
  PooledBatchMemory,
  ReusedBatchMemory,
} from '../../lib/format/arrow-import.js';
import { KIND_FIELD, SEQUENCE_FIELD } from '../../lib/format/arrow-schema.js';
import { rowsToTable, tableToRows } from '../../lib/format/columns.js';
import { writeDataFile } from '../../lib/format/data-file.js';
import {
  decodeRowGroupArrow,
  decodeRowGroupBatches,
  decodeRowGroupIPC,
  parquetBytes,
} from '../../lib/format/row-group-reader.js';
import { rng, testSeed } from '../helpers/random.js';
import { allTypeFields, edgeRows, randomRows } from './fixtures.js';

const FIELDS = [...allTypeFields(), SEQUENCE_FIELD, KIND_FIELD];

/** Every wasm batch of `bytes` (batches of `batchSize` rows), handed to `f` before it is freed. */
async function eachWasmBatch(bytes: Uint8Array, batchSize: number, f: (b: WasmRecordBatch) => void): Promise<void> {
  const file = await ParquetFile.fromFile(new Blob([bytes]));
  try {
    const reader = (await file.stream({ batchSize })).getReader();
    for (;;) {
      const next = await reader.read();
      if (next.done) break;
      f(next.value as WasmRecordBatch);
    }
  } finally {
    file.free();
  }
}

function importOf(batch: WasmRecordBatch, memory = freshBatchMemory): arrow.Table | undefined {
  const ffi = batch.toFFI();
  try {
    return importWasmBatch(wasmMemory().buffer as ArrayBuffer, ffi.arrayAddr(), ffi.schemaAddr(), memory);
  } finally {
    ffi.free();
  }
}

describe('importWasmBatch', () => {
  it('copies every column type varve writes (nulls, edge values) as the IPC route does (randomized)', async () => {
    const seed = testSeed('format.arrow-import');
    const r = rng(seed);
    for (let round = 0; round < 4; round++) {
      // Prepare: edge rows plus random ones, several row groups, batches that cut row groups unevenly.
      const base = allTypeFields();
      const rows = [...edgeRows(), ...randomRows(r, base, r.int(1, 500))];
      const table = rowsToTable(base, rows, { sequence: rows.map((_, i) => i), kind: rows.map((_, i) => i % 4) });
      const bytes = writeDataFile(table, {
        compression: r.pick(['zstd', 'uncompressed'] as const),
        rowGroupSize: r.int(30, 300),
      });
      let batches = 0;
      // Act / Assess: the imported batch equals the IPC decode of the same batch, types and values.
      await eachWasmBatch(bytes, r.int(7, 120), (b) => {
        const imported = importOf(b);
        const ipc = arrow.tableFromIPC(b.intoIPCStream());
        expect(imported, `seed ${seed} round ${round}`).toBeDefined();
        expect(imported!.schema.fields.map((f) => `${f.name}:${f.type}:${f.nullable}`)).toEqual(
          ipc.schema.fields.map((f) => `${f.name}:${f.type}:${f.nullable}`),
        );
        expect(tableToRows(imported!, FIELDS), `seed ${seed} round ${round}`).toEqual(tableToRows(ipc, FIELDS));
        batches++;
      });
      expect(batches).toBeGreaterThan(0);
    }
  });

  it('decodes a row group inline through C Data to the same Arrow bytes as its IPC decode, for projections and slices (randomized)', async () => {
    const seed = testSeed('format.arrow-import decodeRowGroupArrow');
    const r = rng(seed);
    for (let round = 0; round < 6; round++) {
      // Prepare: one row group of every type (edge rows in the first round), a random projection and slice.
      const base = allTypeFields();
      const rows = [...(round === 0 ? edgeRows() : []), ...randomRows(r, base, r.int(1, 600))];
      const table = rowsToTable(base, rows, { sequence: rows.map((_, i) => i), kind: rows.map((_, i) => i % 4) });
      const bytes = parquetBytes([
        writeDataFile(table, { compression: r.pick(['zstd', 'lz4'] as const), rowGroupSize: rows.length }),
      ]);
      const names = FIELDS.map((f) => f.name);
      const picked = names.filter(() => r.chance(0.5));
      const columns = picked.length > 0 ? picked : names;
      const offset = r.int(0, rows.length);
      const slice = r.chance(0.5) ? undefined : { offset, limit: r.int(0, rows.length - offset) };
      // Act
      const inline = await decodeRowGroupArrow(bytes, columns, rows.length, slice);
      const ipc = arrow.tableFromIPC(await decodeRowGroupIPC(bytes, columns, rows.length, slice));
      // Assess: byte for byte (types, nullability, field metadata in the same order, buffers).
      const what = `seed ${seed} round ${round} columns ${columns.join(',')} slice ${JSON.stringify(slice)}`;
      expect(inline.numRows, what).toBe(slice?.limit ?? rows.length);
      expect(
        Buffer.from(arrow.tableToIPC(inline, 'stream')).equals(Buffer.from(arrow.tableToIPC(ipc, 'stream'))),
        what,
      ).toBe(true);
      // and the same type classes: a file's row groups decoded some inline, some through IPC (a row
      // group the import declines) form one table, whichever route the first one took.
      expect(() => new arrow.Table(inline.schema, [...inline.batches, ...ipc.batches]), what).not.toThrow();
      expect(() => new arrow.Table(ipc.schema, [...ipc.batches, ...inline.batches]), what).not.toThrow();
    }
  });

  it('PooledBatchMemory gives back the regions a result does not hold, and a later memory takes them', () => {
    // Prepare: two regions taken; the kept table holds a buffer of the second.
    const first = new PooledBatchMemory();
    const a = first.take(100_000);
    const b = first.take(100_000);
    const kept = new arrow.Table({ x: arrow.makeVector(new Int32Array(b.buffer, 0, 10)) });
    // Act
    first.release(kept);
    const second = new PooledBatchMemory();
    const c = second.take(90_000);
    const d = second.take(90_000);
    // Assess: a's region comes back, b's stays the kept table's; after release, fresh memory.
    expect(c.buffer).toBe(a.buffer);
    expect(d.buffer).not.toBe(b.buffer);
    expect(first.take(10).buffer).not.toBe(a.buffer);
    second.release(new arrow.Table({}));
  });

  it('declines a nested column, and the row-group decoder then falls back to IPC', async () => {
    // Prepare: a list column beside a flat one.
    const list = arrow.vectorFromArray(
      [[1, 2], null, [3]],
      new arrow.List(new arrow.Field('item', new arrow.Int32(), true)),
    );
    const flat = arrow.vectorFromArray(['a', 'b', null], new arrow.Utf8());
    const source = new arrow.Table({ l: list, s: flat });
    const bytes = writeParquet(WasmTable.fromIPCStream(arrow.tableToIPC(source, 'stream')));
    // Act
    const imported: (arrow.Table | undefined)[] = [];
    await eachWasmBatch(bytes, 100, (b) => {
      imported.push(importOf(b));
      b.free();
    });
    const decoded: arrow.Table[] = [];
    for await (const t of decodeRowGroupBatches(parquetBytes([bytes]))) decoded.push(t);
    // Assess
    expect(imported).toEqual([undefined]);
    expect(
      decoded.flatMap((t) => t.toArray().map((row) => ({ l: row.l === null ? null : [...row.l], s: row.s }))),
    ).toEqual([
      { l: [1, 2], s: 'a' },
      { l: null, s: 'b' },
      { l: [3], s: null },
    ]);
  });

  it('puts batch n in slab n mod 2 of a ReusedBatchMemory: a batch holds until two more are taken', async () => {
    // Prepare: 4 batches of distinct ids.
    const rows = Array.from({ length: 40 }, (_, i) => ({ id: BigInt(i) }));
    const fields = allTypeFields().slice(0, 1);
    const bytes = writeDataFile(
      rowsToTable(fields, rows, { sequence: rows.map((_, i) => i), kind: rows.map(() => 0) }),
      { compression: 'zstd', rowGroupSize: 40 },
    );
    const memory = new ReusedBatchMemory();
    const got: arrow.Table[] = [];
    const idsWhenTaken: string[] = [];
    // Act
    await eachWasmBatch(bytes, 10, (b) => {
      const t = importOf(b, memory)!;
      b.free();
      got.push(t);
      idsWhenTaken.push(String(t.getChild('id')!.toArray()));
    });
    // Assess: batches 0 and 2 share a slab (so 0 now shows 2's rows), 1 and 3 the other; the last two still hold.
    const buffer = (t: arrow.Table) => t.getChild('id')!.data[0].values.buffer;
    expect(got.length).toBe(4);
    expect(buffer(got[0])).toBe(buffer(got[2]));
    expect(buffer(got[1])).toBe(buffer(got[3]));
    expect(buffer(got[0])).not.toBe(buffer(got[1]));
    expect(memory.owns(buffer(got[0]))).toBe(true);
    expect(String(got[0].getChild('id')!.toArray())).toBe(idsWhenTaken[2]);
    expect(got.slice(2).map((t) => String(t.getChild('id')!.toArray()))).toEqual(idsWhenTaken.slice(2));
  });
});

describe('freshBatchMemory', () => {
  it('gives every buffer of every batch an ArrayBuffer of its own, so a kept batch never changes (randomized)', async () => {
    // Prepare: edge and random rows of every type (validity bitmaps, offsets, values), small batches.
    const seed = testSeed('format.arrow-import.fresh');
    const r = rng(seed);
    const base = allTypeFields();
    const rows = [...edgeRows(), ...randomRows(r, base, 300)];
    const table = rowsToTable(base, rows, { sequence: rows.map((_, i) => i), kind: rows.map((_, i) => i % 4) });
    const bytes = writeDataFile(table, { compression: 'zstd', rowGroupSize: 120 });
    const kept: { table: arrow.Table; rowsWhenTaken: string }[] = [];
    // Act: import and keep every batch; the wasm batches are freed (their memory reused) as we go.
    await eachWasmBatch(bytes, r.int(7, 40), (b) => {
      const t = importOf(b)!;
      b.free();
      kept.push({
        table: t,
        rowsWhenTaken: JSON.stringify(tableToRows(t, FIELDS), (_, v) => (typeof v === 'bigint' ? String(v) : v)),
      });
    });
    // Assess: each buffer is a whole ArrayBuffer no other buffer shares, and every kept batch still holds its rows.
    const seen = new Set<ArrayBufferLike>();
    let buffers = 0;
    for (const { table: t } of kept) {
      for (const d of t.data.flatMap((batch) => batch.children)) {
        for (const v of [d.nullBitmap, d.values, d.valueOffsets] as (ArrayBufferView | undefined)[]) {
          if (v === undefined || v === null || v.byteLength === 0) continue;
          buffers++;
          expect(v.byteOffset, `seed ${seed}`).toBe(0);
          expect(v.byteLength, `seed ${seed}`).toBe(v.buffer.byteLength);
          expect(seen.has(v.buffer), `seed ${seed}`).toBe(false);
          seen.add(v.buffer);
        }
      }
    }
    expect(kept.length).toBeGreaterThan(5);
    expect(buffers).toBeGreaterThan(kept.length * base.length);
    expect(
      kept.map((k) => JSON.stringify(tableToRows(k.table, FIELDS), (_, v) => (typeof v === 'bigint' ? String(v) : v))),
    ).toEqual(kept.map((k) => k.rowsWhenTaken));
  });
});

describe('parquetBytes', () => {
  it('slices what the concatenated parts hold, and hands back a fetched range whole without a copy (randomized)', async () => {
    const seed = testSeed('format.parquet-bytes');
    const r = rng(seed);
    for (let round = 0; round < 50; round++) {
      // Prepare: parts that are views of a few buffers, some adjacent.
      const fetched = new Uint8Array(r.int(1, 60)).map(() => r.int(0, 255));
      const cut = r.int(0, fetched.length);
      const parts = [
        new Uint8Array([1, 2, 3, 4]),
        fetched.subarray(0, cut),
        fetched.subarray(cut),
        new Uint8Array(r.int(0, 9)).fill(7),
      ];
      const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
      let at = 0;
      for (const p of parts) {
        all.set(p, at);
        at += p.length;
      }
      const bytes = parquetBytes(parts);
      expect(bytes.size).toBe(all.length);
      // Act / Assess: random slices, negative positions too (Blob semantics).
      for (let k = 0; k < 10; k++) {
        const s = r.int(-all.length - 2, all.length + 2),
          e = r.int(-all.length - 2, all.length + 2);
        expect(new Uint8Array(await bytes.slice(s, e).arrayBuffer()), `seed ${seed} [${s}, ${e})`).toEqual(
          new Uint8Array(await new Blob([all]).slice(s, e).arrayBuffer()),
        );
      }
      // The fetched range exactly: its own buffer, not a copy.
      expect(await bytes.slice(4, 4 + fetched.length).arrayBuffer()).toBe(fetched.buffer);
    }
  });
});
