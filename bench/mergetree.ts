/**
 * Measures the LSM core on 1M rows: a write buffer's sort + merge (BIGINT key, INT, DOUBLE,
 * STRING, nullable STRING), with and without spilling, and a merge-read of 1M keys over 5
 * overlapping sorted runs (deduplicate and aggregation). Prints timings; asserts nothing.
 *   node --expose-gc --import tsx bench/mergetree.ts [rows]
 */
import * as arrow from 'apache-arrow';
import { physicalArrowSchema, tableArrowSchema } from '../lib/format/arrow-schema.js';
import { mergeConfig, type MergeConfig } from '../lib/mergetree/merge-config.js';
import { mergeEngineFor } from '../lib/mergetree/merge-function.js';
import { mergeSortedRuns, type RunInput } from '../lib/mergetree/sort-merge-reader.js';
import { WriteBuffer } from '../lib/mergetree/write-buffer.js';
import type { TableSchema } from '../lib/schema/types.js';
import { mulberry32 } from './lib/random.js';

const N = Number(process.argv[2] ?? 1_000_000);
const encoder = new TextEncoder();

const schema: TableSchema = {
  version: 1,
  id: 0,
  fields: [
    { id: 1, name: 'id', type: { root: 'BIGINT', nullable: false } },
    { id: 2, name: 'qty', type: { root: 'INT', nullable: true } },
    { id: 3, name: 'price', type: { root: 'DOUBLE', nullable: true } },
    { id: 4, name: 'name', type: { root: 'STRING', nullable: true } },
    { id: 5, name: 'note', type: { root: 'STRING', nullable: true } },
  ],
  highestFieldId: 5,
  partitionKeys: [],
  primaryKeys: ['id'],
  options: {},
  timeMillis: 0,
};

const random = mulberry32(42);

function utf8(values: (string | null)[]): arrow.Data {
  const n = values.length;
  const parts = values.map((v) => encoder.encode(v ?? ''));
  const offsets = new Int32Array(n + 1);
  for (let i = 0; i < n; i++) offsets[i + 1] = offsets[i] + parts[i].length;
  const bytes = new Uint8Array(offsets[n]);
  parts.forEach((p, i) => bytes.set(p, offsets[i]));
  const validity = new Uint8Array((n + 7) >> 3);
  let nulls = 0;
  values.forEach((v, i) => (v === null ? nulls++ : (validity[i >> 3] |= 1 << (i & 7))));
  return arrow.makeData({
    type: new arrow.Utf8(),
    length: n,
    nullCount: nulls,
    nullBitmap: nulls ? validity : undefined,
    valueOffsets: offsets,
    data: bytes,
  });
}

/** n rows with keys from `key(i)`, optionally with system columns (sequence i + seqFrom, kind +I). */
function makeTable(n: number, key: (i: number) => bigint, system?: { seqFrom: number }): arrow.Table {
  const ids = new BigInt64Array(n),
    qty = new Int32Array(n),
    price = new Float64Array(n);
  const names: string[] = new Array(n),
    notes: (string | null)[] = new Array(n);
  for (let i = 0; i < n; i++) {
    ids[i] = key(i);
    qty[i] = Math.floor(random() * 1000);
    price[i] = Math.round(random() * 1e6) / 100;
    names[i] = `customer-${Math.floor(random() * 1e6)}`;
    notes[i] = random() < 0.3 ? null : `note ${i}`;
  }
  const children = [
    arrow.makeData({ type: new arrow.Int64(), length: n, nullCount: 0, data: ids }),
    arrow.makeData({ type: new arrow.Int32(), length: n, nullCount: 0, data: qty }),
    arrow.makeData({ type: new arrow.Float64(), length: n, nullCount: 0, data: price }),
    utf8(names),
    utf8(notes),
  ];
  let s = tableArrowSchema(schema);
  if (system) {
    const seq = new BigInt64Array(n);
    for (let i = 0; i < n; i++) seq[i] = BigInt(system.seqFrom + i);
    children.push(arrow.makeData({ type: new arrow.Int64(), length: n, nullCount: 0, data: seq }));
    children.push(arrow.makeData({ type: new arrow.Int8(), length: n, nullCount: 0, data: new Int8Array(n) }));
    s = physicalArrowSchema(schema);
  }
  const data = arrow.makeData({ type: new arrow.Struct(s.fields), length: n, nullCount: 0, children });
  return new arrow.Table(s, new arrow.RecordBatch(s, data));
}

const REPEAT = 3;
const gc = (globalThis as { gc?: () => void }).gc;

/** Runs `prepare` then times `act`, REPEAT times; prints the best and the median. */
function measure<T>(label: string, prepare: () => T, act: (input: T) => unknown): unknown {
  const times: number[] = [];
  let out: unknown;
  for (let r = 0; r < REPEAT; r++) {
    const input = prepare();
    gc?.();
    const t0 = performance.now();
    out = act(input);
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  console.log(
    `${label.padEnd(70)} best ${times[0].toFixed(0).padStart(5)} ms   median ${times[REPEAT >> 1].toFixed(0).padStart(5)} ms`,
  );
  return out;
}

const writeKeys = () => makeTable(N, () => BigInt(Math.floor(random() * N * 0.8)) * 2654435761n - 10n ** 12n);

function benchWriteBuffer(label: string, merge: MergeConfig): void {
  // Keys from 0.8·N distinct values in random order: about 4 in 10 rows update an earlier key.
  const input = writeKeys();
  const out = measure(
    `write buffer ${label}: flush ${N} rows (sort + merge + gather)`,
    () => {
      const b = new WriteBuffer({ schema, merge, writeBufferSize: 1 << 30, spillable: false });
      b.addTable(input);
      return b;
    },
    (b) => b.flush(),
  ) as { rowCount: number };
  console.log(`  -> ${out.rowCount} records`);
}

function benchSpill(): void {
  // 100 addTable calls of N/100 rows into a 16 MB buffer: it spills sorted runs as it goes.
  const input = writeKeys();
  const step = Math.ceil(N / 100);
  const slices = Array.from({ length: Math.ceil(N / step) }, (_, k) => input.slice(k * step, (k + 1) * step));
  let runs = 0;
  measure(
    `write buffer deduplicate, 16 MB spilling: ${slices.length} adds + flush`,
    () => new WriteBuffer({ schema, merge: mergeConfig(), writeBufferSize: 16 << 20, spillable: true }),
    (b) => {
      for (const t of slices) b.addTable(t);
      runs = b.spilledRuns;
      return b.flush();
    },
  );
  console.log(`  -> ${runs} spilled runs merged at flush`);
}

function benchMergeRead(label: string, merge: MergeConfig): void {
  // 5 runs over N keys: every run holds a random 30% of the keys, so runs overlap heavily.
  const runs: RunInput[] = [];
  let seq = 0;
  for (let r = 0; r < 5; r++) {
    const picked: bigint[] = [];
    for (let k = 0; k < N; k++) if (random() < 0.3) picked.push(BigInt(k) * 3n - 1000n);
    runs.push({ table: makeTable(picked.length, (i) => picked[i], { seqFrom: 0 }), sequenceBase: seq });
    seq += picked.length;
  }
  const total = runs.reduce((n, r) => n + r.table.numRows, 0);
  const engine = mergeEngineFor(merge);
  const out = measure(
    `merge-read ${label}: ${total} rows in 5 runs`,
    () => runs,
    (rs) => mergeSortedRuns(rs, { schema, keyColumns: ['id'], engine, dropDeletes: true }),
  ) as arrow.Table;
  console.log(`  -> ${out.numRows} keys`);
}

console.log(
  `node ${process.version}, ${N} rows, best and median of ${REPEAT}${gc ? '' : ' (run with --expose-gc for steadier numbers)'}`,
);
const only = process.env.BENCH_ONLY;
const aggregation = mergeConfig({ engine: 'aggregation', aggregateFunctions: { qty: 'sum', price: 'max' } });
if (!only || 'benchWriteBuffer:deduplicate'.includes(only)) benchWriteBuffer('deduplicate', mergeConfig());
if (!only || 'benchWriteBuffer:aggregation'.includes(only)) benchWriteBuffer('aggregation (sum, max)', aggregation);
if (!only || 'benchWriteBuffer:partial-update'.includes(only))
  benchWriteBuffer('partial-update', mergeConfig({ engine: 'partial-update' }));
if (!only || 'benchSpill'.includes(only)) benchSpill();
if (!only || 'benchMergeRead:deduplicate'.includes(only)) benchMergeRead('deduplicate', mergeConfig());
if (!only || 'benchMergeRead:aggregation'.includes(only)) benchMergeRead('aggregation (sum, max)', aggregation);
if (!only || 'benchMergeRead:partial-update'.includes(only))
  benchMergeRead('partial-update', mergeConfig({ engine: 'partial-update' }));
