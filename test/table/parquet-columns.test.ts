/**
 * Parquet input column by column (lib/table/parquet-columns.ts) against the record path it skips:
 * random Parquet files (random columns, types, NULLs, bad values, unknown and `_kind` columns, row
 * group sizes) must give the same rows, kinds, rejects and errors both ways.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import * as arrow from 'apache-arrow';
import { Table as WasmTable, WriterPropertiesBuilder, writeParquet } from 'parquet-wasm';
import { tableToRows } from '../../lib/format/columns.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { KIND_COLUMN, type TableSchema } from '../../lib/schema/types.js';
import { parseColumnChunks } from '../../lib/table/input.js';
import { ParquetColumns } from '../../lib/table/parquet-columns.js';
import { rng, testSeed, type Rng } from '../helpers/random.js';

const schema = {
  id: 0,
  version: 1,
  highestFieldId: 7,
  timeMillis: 0,
  fields: parseSchemaText(
    'id BIGINT NOT NULL, i INT, s STRING NOT NULL, d DOUBLE, dt DATE, ts TIMESTAMP(6), b BYTES, f FLOAT',
  ),
  primaryKeys: ['id'],
  partitionKeys: [],
  options: {},
} as TableSchema;

const DAY_MAX = 2_932_896;

/** One column of a random input: its Arrow type and a value per row (null allowed). */
function randomColumn(r: Rng, name: string, n: number, bad: boolean): [arrow.DataType, unknown[]] {
  const nulls = r.chance(0.5) ? 0 : r.pick([0.02, 0.2]);
  const cell = <T>(f: () => T): (T | null)[] => Array.from({ length: n }, () => (r.chance(nulls) ? null : f()));
  // `bad`: a type other than the table's (converted or rejected row by row) or values out of range.
  switch (name) {
    case 'id':
      return bad
        ? [new arrow.Int32(), cell(() => r.int(0, 50))]
        : [
            new arrow.Int64(),
            r.chance(0.8) ? Array.from({ length: n }, () => BigInt(r.int(0, 50))) : cell(() => BigInt(r.int(0, 50))),
          ];
    case 'i':
      return bad
        ? [new arrow.Int64(), cell(() => BigInt(r.chance(0.9) ? r.int(-5, 5) : 2 ** 40))]
        : [new arrow.Int32(), cell(() => r.int(-1e9, 1e9))];
    case 's':
      return bad
        ? [new arrow.Int32(), cell(() => r.int(0, 9))]
        : [
            new arrow.Utf8(),
            r.chance(0.8) ? Array.from({ length: n }, () => `s${r.int(0, 1e6)}é`) : cell(() => `s${r.int(0, 99)}`),
          ];
    case 'd':
      return bad
        ? [new arrow.Utf8(), cell(() => (r.chance(0.7) ? String(r.next()) : 'nope'))]
        : [new arrow.Float64(), cell(() => (r.chance(0.05) ? -0 : r.next() * 1e6))];
    case 'dt':
      return [
        new arrow.DateDay(),
        cell(() => (bad && r.chance(0.3) ? DAY_MAX + r.int(1, 100) : r.int(-700_000, 2_900_000)) * 86_400_000),
      ];
    case 'ts':
      return bad
        ? [new arrow.TimestampMillisecond(), cell(() => r.int(0, 2e12))]
        : [new arrow.TimestampMicrosecond(), cell(() => BigInt(r.int(-1e12, 1e12)) * 1000n + BigInt(r.int(0, 999)))];
    case 'b':
      return [new arrow.Binary(), cell(() => Uint8Array.from({ length: r.int(0, 6) }, () => r.int(0, 255)))];
    case 'f':
      return bad
        ? [new arrow.Float64(), cell(() => (r.chance(0.2) ? 1e300 : r.next()))]
        : [new arrow.Float32(), cell(() => Math.fround(r.next() * 100))];
    case '_kind':
      return [new arrow.Utf8(), cell(() => r.pick(['+I', '+U', '-D', 'bogus']))];
    default:
      return [new arrow.Utf8(), cell(() => 'x')];
  }
}

/** A vector of 32- or 64-bit integer or timestamp values (bigint or number; null = NULL), built from its buffers. */
function bigVector(type: arrow.DataType, values: unknown[]): arrow.Vector {
  const n = values.length;
  const wide = arrow.DataType.isTimestamp(type) || (type as arrow.Int).bitWidth === 64;
  const data = wide ? new BigInt64Array(n) : new Int32Array(n);
  const valid = new Uint8Array(Math.ceil(n / 8));
  let nulls = 0;
  values.forEach((v, i) => {
    if (v === null) nulls++;
    else {
      valid[i >> 3] |= 1 << (i & 7);
      if (wide) (data as BigInt64Array)[i] = BigInt(v as number | bigint);
      else (data as Int32Array)[i] = Number(v);
    }
  });
  return arrow.makeVector(
    arrow.makeData({
      type: type as arrow.Int,
      length: n,
      nullCount: nulls,
      nullBitmap: nulls > 0 ? valid : null,
      data: data as never,
    }),
  );
}

/** A random Parquet input: which columns, of which types, how many rows, how many per row group. */
function randomParquet(r: Rng): { bytes: Uint8Array; desc: string } {
  const n = r.int(0, 400);
  const cols: Record<string, arrow.Vector> = {};
  const desc: string[] = [];
  const names = [
    ...schema.fields.map((f) => f.name).filter((c) => c === 'id' || c === 's' || r.chance(0.85) || !r.chance(0.9)),
  ];
  if (r.chance(0.1)) names.push('extra');
  if (r.chance(0.1)) names.push('_kind');
  if (r.chance(0.05)) names.splice(names.indexOf('id'), 1);
  for (const name of names) {
    const bad = r.chance(0.12);
    const [type, values] = randomColumn(r, name, n, bad);
    cols[name] =
      arrow.DataType.isTimestamp(type) || arrow.DataType.isInt(type)
        ? bigVector(type, values)
        : arrow.vectorFromArray(values, type);
    desc.push(`${name}:${String(type)}${bad ? '!' : ''}`);
  }
  const table =
    n === 0
      ? new arrow.Table(new arrow.Schema(Object.entries(cols).map(([k, v]) => new arrow.Field(k, v.type, true))))
      : new arrow.Table(cols);
  const groupRows = r.int(16, 300);
  const bytes = writeParquet(
    WasmTable.fromIPCStream(arrow.tableToIPC(table, 'stream')),
    new WriterPropertiesBuilder().setMaxRowGroupSize(groupRows).build(),
  );
  return { bytes, desc: `${n} rows, groups of ${groupRows}: ${desc.join(', ')}` };
}

/** Rows (as values), kinds and rejects of parsing `bytes`, or the error it threw. */
async function parse(bytes: Uint8Array, columns: boolean, skipInvalid: boolean) {
  const rows: unknown[] = [];
  const kinds: number[] = [];
  const rejected: unknown[] = [];
  try {
    for await (const c of parseColumnChunks(bytes, 'parquet', schema, {
      skipInvalid,
      chunkRows: 100,
      parquetColumns: columns,
    })) {
      rows.push(...tableToRows(c.table, schema.fields));
      kinds.push(...(c.table.getChild(KIND_COLUMN)!.toArray() as Int8Array));
      rejected.push(...c.rejected);
      expect(c.table.schema.names).toEqual([...schema.fields.map((f) => f.name), KIND_COLUMN]);
    }
  } catch (e) {
    return { error: `${(e as Error).name}: ${(e as Error).message}` };
  }
  return { rows, kinds, rejected };
}

describe('Parquet input column by column', () => {
  afterEach(() => vi.restoreAllMocks());

  it('gives the rows, kinds, rejects and errors of the record path over random inputs (randomized)', async () => {
    const seed = testSeed('parquet columns');
    const r = rng(seed);
    const take = vi.spyOn(ParquetColumns.prototype, 'take');
    let direct = 0;
    let recordPath = 0;
    for (let round = 0; round < 40; round++) {
      const { bytes, desc } = randomParquet(r);
      for (const skipInvalid of [true, false]) {
        take.mockClear();
        const columnar = await parse(bytes, true, skipInvalid);
        direct += take.mock.results.filter((x) => x.value !== undefined).length;
        recordPath += take.mock.results.filter((x) => x.value === undefined).length;
        const rows = await parse(bytes, false, skipInvalid);
        expect(columnar, `seed ${seed} round ${round} (${desc}), skipInvalid ${skipInvalid}`).toEqual(rows);
      }
    }
    // Both paths were exercised: most batches are taken whole, the bad ones row by row.
    expect(direct).toBeGreaterThan(10);
    expect(recordPath).toBeGreaterThan(5);
  });

  it('takes a clean batch without converting it: the chunk shares the batch column buffers', () => {
    const cols = new ParquetColumns(schema);
    const id = arrow.vectorFromArray(BigInt64Array.from([3n, 1n]));
    const s = arrow.vectorFromArray(['a', 'b'], new arrow.Utf8());
    const table = new arrow.Table({ id, s });

    const out = cols.take(table)!;

    expect(out.getChild('id')!.data[0].values).toBe(id.data[0].values);
    expect(out.getChild('s')!.data[0].values).toBe(s.data[0].values);
    expect(out.getChild('i')!.nullCount).toBe(2);
    expect(Array.from(out.getChild(KIND_COLUMN)!.toArray() as Int8Array)).toEqual([0, 0]);
    // Not taken: a NULL key, a column of another type, a delete input.
    expect(cols.take(new arrow.Table({ id: arrow.vectorFromArray([1n, null], new arrow.Int64()), s }))).toBeUndefined();
    expect(cols.take(new arrow.Table({ id: arrow.vectorFromArray([1, 2], new arrow.Int32()), s }))).toBeUndefined();
    expect(new ParquetColumns(schema, { deletes: true }).take(table)).toBeUndefined();
  });
});
