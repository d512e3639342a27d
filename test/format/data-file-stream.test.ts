/**
 * DataFileStreamWriter: a data file written piece by piece, its encoded bytes going to a sink.
 * A sink that fails must fail the write at once and end the wasm encoder (not leave it waiting).
 */
import { wasmMemory } from 'parquet-wasm';
import { describe, expect, it } from 'vitest';
import { rowsToTable, tableToRows } from '../../lib/format/columns.js';
import { readDataFile } from '../../lib/format/data-file.js';
import { DataFileStreamWriter } from '../../lib/format/data-file-stream.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { KIND_FIELD, SEQUENCE_FIELD } from '../../lib/format/arrow-schema.js';

const FIELDS = parseSchemaText('id BIGINT, v STRING');

function rows(n: number) {
  const r = Array.from({ length: n }, (_, i) => ({ id: BigInt(i), v: `value-${i}-${(i * 2654435761) % 1000003}` }));
  return rowsToTable(FIELDS, r, { sequence: Float64Array.from({ length: n }, (_, i) => i), kind: new Uint8Array(n) });
}

class SinkBroke extends Error {}

/** A write whose sink fails on its `failAt`-th call; returns how the add and the end settled. */
async function failingWrite(
  table: ReturnType<typeof rows>,
  failAt: number,
  rowGroupSize = 8_192,
): Promise<{ add: unknown; end: unknown; sinkCalls: number }> {
  let sinkCalls = 0;
  const w = await DataFileStreamWriter.open(table.schema, { compression: 'zstd', rowGroupSize }, async () => {
    if (++sinkCalls >= failAt) throw new SinkBroke(`sink failed on call ${sinkCalls}`);
  });
  const add = await w.add(table).then(
    () => 'ok',
    (e: unknown) => e,
  );
  const end = await w.end().then(
    () => 'ok',
    (e: unknown) => e,
  );
  return { add, end, sinkCalls };
}

describe('DataFileStreamWriter with a sink', () => {
  it('writes the rows to the sink as row groups, then the footer', async () => {
    const table = rows(30_000);
    const parts: Uint8Array[] = [];
    const w = await DataFileStreamWriter.open(
      table.schema,
      { compression: 'zstd', rowGroupSize: 8_192 },
      async (b) => void parts.push(b.slice()),
    );
    await w.add(table.slice(0, 10_000));
    await w.add(table.slice(10_000));
    const size = await w.end();
    const bytes = new Uint8Array(size);
    let at = 0;
    for (const p of parts) bytes.set(p, at), (at += p.length);
    expect(at).toBe(size);
    expect(parts.length).toBeGreaterThan(2);
    const back = await readDataFile(bytes);
    const all = [...FIELDS, SEQUENCE_FIELD, KIND_FIELD];
    expect(tableToRows(back, all)).toEqual(tableToRows(table, all));
  });

  it('a failing sink rejects the write with its error and frees the encoder (wasm memory stays flat over many failed writes)', async () => {
    const table = rows(40_000);
    // The sink fails on its first or second call: the add (or the end) rejects with that error.
    for (const failAt of [1, 2]) {
      const { add, end, sinkCalls } = await failingWrite(table, failAt);
      expect(sinkCalls).toBe(failAt);
      expect(add instanceof SinkBroke || add === 'ok').toBe(true);
      expect(end).toBeInstanceOf(SinkBroke);
    }
    // An encoder left waiting holds the rows after its first row group in wasm (≈ 1 MB each
    // here): 20 failed writes grew wasm memory by ≈ 16 MB before a failed sink cancelled it.
    const big = rows(70_000);
    for (let i = 0; i < 3; i++) await failingWrite(big, 1, 65_536);
    const before = wasmMemory().buffer.byteLength;
    for (let i = 0; i < 20; i++) {
      const { end } = await failingWrite(big, 1, 65_536);
      expect(end).toBeInstanceOf(SinkBroke);
    }
    const grownMB = (wasmMemory().buffer.byteLength - before) / 2 ** 20;
    expect(grownMB, `wasm memory grew ${grownMB} MB over 20 failed writes`).toBeLessThan(6);
  });
});
