/**
 * Streaming input: JSONL and CSV parsed from a byte stream cut anywhere (inside a line, inside a
 * UTF-8 character), Parquet row group by row group; chunks are bounded, rejects keep their lines.
 */
import { describe, expect, it } from 'vitest';
import * as arrow from 'apache-arrow';
import { Table as WasmTable, WriterPropertiesBuilder, writeParquet } from 'parquet-wasm';
import { RecordValidationError } from '../../lib/errors.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import type { TableSchema } from '../../lib/schema/types.js';
import { parseRecordChunks, parseRecords, type ParsedChunk, type RecordInput } from '../../lib/table/input.js';
import { rng, testSeed } from '../helpers/random.js';

const schema = {
  id: 0,
  version: 1,
  highestFieldId: 1,
  timeMillis: 0,
  fields: parseSchemaText('id BIGINT, v STRING'),
  primaryKeys: ['id'],
  partitionKeys: [],
  options: {},
} as TableSchema;

async function* cut(bytes: Uint8Array, sizes: () => number): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < bytes.length; ) {
    const n = sizes();
    yield bytes.subarray(at, at + n);
    at += n;
  }
}

async function all(input: RecordInput, format: 'jsonl' | 'csv' | 'parquet', chunkRows = 7): Promise<ParsedChunk[]> {
  const out: ParsedChunk[] = [];
  for await (const c of parseRecordChunks(input, format, schema, { skipInvalid: true, chunkRows })) out.push(c);
  return out;
}

describe('parseRecordChunks', () => {
  it('JSONL and CSV cut at random byte boundaries parse like the whole input, with the same reject lines (randomized)', async () => {
    const seed = testSeed('input chunks');
    const r = rng(seed);
    const lines: string[] = [];
    for (let i = 0; i < 60; i++)
      lines.push(r.chance(0.1) ? '{"id": oops' : i % 13 === 0 ? '' : JSON.stringify({ id: i, v: `é😀-${i}` }));
    const jsonl = new TextEncoder().encode(lines.join('\n'));
    const csvText =
      'id,v\n' +
      Array.from({ length: 40 }, (_, i) => (i % 9 === 4 ? `x${i},bad` : `${i},"multi\nline ü ${i}"`)).join('\n') +
      '\n';
    const csv = new TextEncoder().encode(csvText);

    for (const [format, bytes] of [
      ['jsonl', jsonl],
      ['csv', csv],
    ] as const) {
      const whole = await parseRecords(bytes, format, schema, { skipInvalid: true });
      const chunks = await all(
        cut(bytes, () => r.int(1, 40)),
        format,
      );
      expect(
        chunks.flatMap((c) => c.rows),
        `${format} seed ${seed}`,
      ).toEqual(whole.rows);
      expect(
        chunks.flatMap((c) => c.rejected),
        `${format} seed ${seed}`,
      ).toEqual(whole.rejected);
      expect(chunks.every((c) => c.rows.length + c.rejected.length <= 7)).toBe(true);
      expect(chunks.at(-1)!.bytesRead).toBe(bytes.length);
    }
    // Line numbers: JSONL counts every line, CSV the line where a record ends.
    const whole = await parseRecords(jsonl, 'jsonl', schema, { skipInvalid: true });
    expect(whole.rejected.map((x) => x.line)).toEqual(lines.flatMap((l, i) => (l === '{"id": oops' ? [i + 1] : [])));
    const csvRejects = (await parseRecords(csv, 'csv', schema, { skipInvalid: true })).rejected;
    expect(csvRejects[0].line).toBe(1 + 4 * 2 + 1);
  });

  it('throws the first invalid record without skipInvalid, naming its line', async () => {
    const input = cut(new TextEncoder().encode('{"id":1,"v":"a"}\n{"id":"x"}\n'), () => 5);
    await expect(all2(parseRecordChunks(input, 'jsonl', schema))).rejects.toThrow(RecordValidationError);
    await expect(all2(parseRecordChunks('{"id":1}\n{"id":"x"}\n', 'jsonl', schema))).rejects.toThrow(/line 2/);
  });

  it('reads a Parquet row group larger than its 1,024-row slices whole and in order', async () => {
    const n = 2500;
    const rows = Array.from({ length: n }, (_, i) => ({ id: BigInt(i), v: i % 7 === 0 ? null : `v${i}` }));
    const table = new arrow.Table({
      id: arrow.vectorFromArray(BigInt64Array.from(rows, (x) => x.id)),
      v: arrow.vectorFromArray(
        rows.map((x) => x.v),
        new arrow.Utf8(),
      ),
    });
    const bytes = writeParquet(WasmTable.fromIPCStream(arrow.tableToIPC(table, 'stream')));
    const chunks = await all(bytes, 'parquet', 1000);
    expect(chunks.flatMap((c) => c.rows)).toEqual(rows);
    expect(chunks.map((c) => c.rows.length)).toEqual([1000, 1000, 500]);
  });

  it('reads Parquet row group by row group from a Blob, numbering rows across groups', async () => {
    const n = 1000;
    const rows = Array.from({ length: n }, (_, i) => ({ id: BigInt(i), v: `v${i}` }));
    const table = new arrow.Table({
      id: arrow.vectorFromArray(BigInt64Array.from(rows, (x) => x.id)),
      v: arrow.vectorFromArray(
        rows.map((x) => x.v),
        new arrow.Utf8(),
      ),
    });
    const bytes = writeParquet(
      WasmTable.fromIPCStream(arrow.tableToIPC(table, 'stream')),
      new WriterPropertiesBuilder().setMaxRowGroupSize(128).build(),
    );
    const bad = new arrow.Table({
      id: arrow.vectorFromArray(BigInt64Array.from([1n])),
      w: arrow.vectorFromArray(['x'], new arrow.Utf8()),
    });
    const badBytes = writeParquet(WasmTable.fromIPCStream(arrow.tableToIPC(bad, 'stream')));

    const chunks = await all(new Blob([bytes]), 'parquet', 100);
    const rejected = (await all(new Blob([badBytes]), 'parquet')).flatMap((c) => c.rejected);

    expect(chunks.flatMap((c) => c.rows)).toEqual(rows);
    expect(chunks.every((c) => c.rows.length <= 100)).toBe(true);
    expect(chunks.at(-1)!.bytesRead).toBe(bytes.length);
    expect(rejected.map((x) => x.line)).toEqual([1]);
    expect(rejected[0].reason).toMatch(/unknown column "w"/);
  });

  it('reads Parquet by range from a ranged source (no read larger than a row group or the footer), and from bytes and a stream alike', async () => {
    const n = 3000;
    const rows = Array.from({ length: n }, (_, i) => ({ id: BigInt(i), v: `value-${i}-${'x'.repeat(i % 50)}` }));
    const table = new arrow.Table({
      id: arrow.vectorFromArray(BigInt64Array.from(rows, (x) => x.id)),
      v: arrow.vectorFromArray(
        rows.map((x) => x.v),
        new arrow.Utf8(),
      ),
    });
    const bytes = writeParquet(
      WasmTable.fromIPCStream(arrow.tableToIPC(table, 'stream')),
      new WriterPropertiesBuilder().setMaxRowGroupSize(250).build(),
    );
    const reads: number[] = [];
    const ranged = {
      size: bytes.length,
      name: 'object',
      read: async (s: number, e: number) => (reads.push(e - s), bytes.slice(s, e)),
    };

    const fromRanges = await all(ranged, 'parquet', 500);
    const fromBytes = await all(bytes, 'parquet', 500);
    const fromStream = await all(
      cut(bytes, () => 777),
      'parquet',
      500,
    );

    expect(fromRanges.flatMap((c) => c.rows)).toEqual(rows);
    expect(fromBytes.flatMap((c) => c.rows)).toEqual(rows);
    expect(fromStream.flatMap((c) => c.rows)).toEqual(rows);
    // The footer read, then one read per row group (12), none near the file's size.
    expect(reads.length).toBe(1 + 12);
    expect(Math.max(...reads.slice(1))).toBeLessThan(bytes.length / 6);
    expect(fromRanges.at(-1)!.bytesRead).toBe(bytes.length);
    // A ranged source that is not Parquet is a validation error naming the input, a failing read stays the reader's error.
    await expect(
      all({ size: 100, name: 'object', read: async (s, e) => new Uint8Array(e - s) }, 'parquet'),
    ).rejects.toThrow(/not a Parquet file/);
    const boom = new Error('connection reset');
    await expect(all({ ...ranged, read: async () => Promise.reject(boom) }, 'parquet')).rejects.toBe(boom);
  });
});

async function all2(chunks: AsyncIterable<ParsedChunk>): Promise<void> {
  for await (const c of chunks) void c;
}
