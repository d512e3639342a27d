/**
 * Measures lib/format's hot paths (prints numbers, asserts nothing): take and gather of 1M rows,
 * rowsToTable / tableToRows of 100k rows, singleBatch of a 16-batch read, and writeDataFile +
 * readDataFile of 1M rows with zstd and snappy. Run: `npx tsx bench/format-smoke.ts` (best of 3).
 */
import * as arrow from 'apache-arrow';
import { physicalArrowSchemaOf } from '../lib/format/arrow-schema.js';
import { gatherRows, rowsToTable, singleBatch, tableToRows, takeRows } from '../lib/format/columns.js';
import { readDataFile, writeDataFile } from '../lib/format/data-file.js';
import type { Row } from '../lib/schema/types.js';
import { mulberry32 } from './lib/random.js';
import { benchFields } from './lib/data.js';

/** The benchmark schema (key BIGINT, INT, DOUBLE, STRING, nullable STRING). */
const FIELDS = benchFields();

/** The 1M-row physical table, built straight from typed arrays (keys sorted, 20% of `opt` null). */
function bigTable(n: number): arrow.Table {
  const key = new BigInt64Array(n),
    i32 = new Int32Array(n),
    f = new Float64Array(n);
  const seq = new BigInt64Array(n),
    kind = new Int8Array(n);
  const enc = new TextEncoder();
  const sOff = new Int32Array(n + 1),
    oOff = new Int32Array(n + 1);
  const sBytes = new Uint8Array(n * 12),
    oBytes = new Uint8Array(n * 12);
  const valid = new Uint8Array((n + 7) >> 3);
  let sPos = 0,
    oPos = 0,
    nulls = 0;
  for (let i = 0; i < n; i++) {
    key[i] = BigInt(i) * 3n;
    i32[i] = i % 1000;
    f[i] = i / 7;
    seq[i] = BigInt(i);
    sPos += enc.encodeInto(`user_${i % 50000}`, sBytes.subarray(sPos)).written;
    sOff[i + 1] = sPos;
    if (i % 5) {
      oPos += enc.encodeInto(`opt-${i}`, oBytes.subarray(oPos)).written;
      valid[i >> 3] |= 1 << (i & 7);
    } else nulls++;
    oOff[i + 1] = oPos;
  }
  const schema = physicalArrowSchemaOf(FIELDS);
  const t = schema.fields.map((x) => x.type);
  const children = [
    arrow.makeData({ type: t[0] as arrow.Int64, length: n, data: key }),
    arrow.makeData({ type: t[1] as arrow.Int32, length: n, data: i32 }),
    arrow.makeData({ type: t[2] as arrow.Float64, length: n, data: f }),
    arrow.makeData({ type: t[3] as arrow.Utf8, length: n, valueOffsets: sOff, data: sBytes.subarray(0, sPos) }),
    arrow.makeData({
      type: t[4] as arrow.Utf8,
      length: n,
      valueOffsets: oOff,
      data: oBytes.subarray(0, oPos),
      nullBitmap: valid,
      nullCount: nulls,
    }),
    arrow.makeData({ type: t[5] as arrow.Int64, length: n, data: seq }),
    arrow.makeData({ type: t[6] as arrow.Int8, length: n, data: kind }),
  ];
  const data = arrow.makeData({ type: new arrow.Struct(schema.fields), length: n, nullCount: 0, children });
  return new arrow.Table(schema, new arrow.RecordBatch(schema, data));
}

async function best<T>(label: string, runs: number, fn: () => T | Promise<T>): Promise<T> {
  let min = Infinity;
  let out!: T;
  for (let k = 0; k < runs; k++) {
    const t0 = performance.now();
    out = await fn();
    min = Math.min(min, performance.now() - t0);
  }
  console.log(`${label.padEnd(52)} ${min.toFixed(1).padStart(8)} ms`);
  return out;
}

async function main(): Promise<void> {
  const n = 1_000_000;
  const rand = mulberry32(42);
  const table = bigTable(n);
  const perm = new Uint32Array(n);
  for (let i = 0; i < n; i++) perm[i] = i;
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    const x = perm[i];
    perm[i] = perm[j];
    perm[j] = x;
  }
  console.log(`node ${process.version}, ${n} rows x 5 columns (+2 system)`);
  await best('takeRows 1M, random permutation, 7 columns', 3, () => takeRows(table, perm));
  const four = [0, 1, 2, 3].map((k) => table.slice(k * 250_000, (k + 1) * 250_000)).map(singleBatch);
  const source = new Uint16Array(n),
    row = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    source[i] = i & 3;
    row[i] = i >> 2;
  }
  await best('gatherRows 1M from 4 sources, interleaved', 3, () => gatherRows(four, source, row));

  const rows: Row[] = Array.from({ length: 100_000 }, (_, i) => ({
    key: BigInt(i),
    i32: i % 1000,
    f: i / 7,
    s: `user_${i % 50000}`,
    opt: i % 5 ? `opt-${i}` : null,
  }));
  const small = await best('rowsToTable 100k rows (+system)', 3, () =>
    rowsToTable(FIELDS, rows, { sequence: new Float64Array(rows.length), kind: new Uint8Array(rows.length) }),
  );
  await best('tableToRows 100k rows', 3, () => tableToRows(small, FIELDS));

  for (const compression of ['zstd', 'snappy'] as const) {
    const bytes = await best(`writeDataFile 1M ${compression}`, 3, () => writeDataFile(table, { compression }));
    console.log(`  file size ${compression}: ${(bytes.length / 1e6).toFixed(1)} MB`);
    const back = await best(`readDataFile 1M ${compression} (full)`, 3, () => readDataFile(bytes));
    await best(`readDataFile 1M ${compression} (2 columns)`, 3, () =>
      readDataFile(bytes, { columns: ['key', '_SEQUENCE_NUMBER'] }),
    );
    await best(`singleBatch of the ${back.batches.length}-batch read`, 3, () => singleBatch(back));
  }
}

await main();
