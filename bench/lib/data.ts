/**
 * The benchmark dataset, generated in-process from fixed seeds: one row per (key index, version)
 * with a BIGINT key, INT, DOUBLE, STRING and nullable STRING column. Every value is a pure
 * function of (key index, version), so the expected merged state of any sequence of writes is
 * computed from the generator itself, never read back from the system under test.
 */
import * as arrow from 'apache-arrow';
import type { DataField } from '../../lib/schema/types.js';
import { mulberry32 } from './random.js';

/** The table schema every benchmark uses (as `parseSchemaText` would return it). */
export const BENCH_SCHEMA_TEXT =
  'key BIGINT NOT NULL, i32 INT NOT NULL, f DOUBLE NOT NULL, s STRING NOT NULL, opt STRING';

/** Column names in schema order. */
export const COLUMNS = ['key', 'i32', 'f', 's', 'opt'] as const;

/** Keys are spread over the signed 64-bit range's upper words so the hi word of the key matters. */
const KEY_BASE = 1_000_000_000_000;
const KEY_STRIDE = 7;
/** `f` has 20 fraction bits and 28 value bits: sums of up to 2^25 values stay exact in a double. */
export const F_SCALE = 1 << 20;
const S_PREFIX = 'user_';
const OPT_PREFIX = 'opt-';

/** The key of key index k. */
export function keyOf(k: number): number {
  return KEY_BASE + k * KEY_STRIDE;
}

/** The key index of a key (the inverse of keyOf). */
export function keyIndexOf(key: number): number {
  return (key - KEY_BASE) / KEY_STRIDE;
}

/** 32-bit avalanche of (k, v, salt); the one source of every column value. */
function mix(k: number, v: number, salt: number): number {
  let h = Math.imul(k ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul((v + 1) ^ salt, 0xc2b2ae35);
  h ^= h >>> 16;
  h = Math.imul(h, 0x7feb352d);
  h ^= h >>> 15;
  h = Math.imul(h, 0x846ca68b);
  h ^= h >>> 16;
  return h >>> 0;
}

/** The numeric content of row (k, v): what the Arrow columns encode and the checksums sum. */
export interface RowValues {
  i32: number;
  /** `f` times F_SCALE: an exact integer. */
  fUnits: number;
  /** The number after `user_` in `s`. */
  s: number;
  /** The number after `opt-` in `opt`, or -1 when `opt` is null (one row in five). */
  opt: number;
}

/** Values of key index k at version v (pure). */
export function valuesOf(k: number, v: number, out: RowValues = { i32: 0, fUnits: 0, s: 0, opt: 0 }): RowValues {
  out.i32 = mix(k, v, 1) % 1_000_000;
  out.fUnits = mix(k, v, 2) >>> 4;
  out.s = mix(k, v, 3) % 50_000;
  const o = mix(k, v, 4);
  out.opt = o % 5 === 0 ? -1 : o % 1_000_003;
  return out;
}

/** The benchmark table's fields. */
export function benchFields(): DataField[] {
  return [
    { id: 1, name: 'key', type: { root: 'BIGINT', nullable: false } },
    { id: 2, name: 'i32', type: { root: 'INT', nullable: false } },
    { id: 3, name: 'f', type: { root: 'DOUBLE', nullable: false } },
    { id: 4, name: 's', type: { root: 'STRING', nullable: false } },
    { id: 5, name: 'opt', type: { root: 'STRING', nullable: true } },
  ];
}

/** The Arrow schema of the user columns (what writeArrow takes). */
export function benchArrowSchema(): arrow.Schema {
  return new arrow.Schema([
    new arrow.Field('key', new arrow.Int64(), false),
    new arrow.Field('i32', new arrow.Int32(), false),
    new arrow.Field('f', new arrow.Float64(), false),
    new arrow.Field('s', new arrow.Utf8(), false),
    new arrow.Field('opt', new arrow.Utf8(), true),
  ]);
}

/** ASCII digits of a non-negative integer written at `pos`; returns the new position. */
function writeDigits(bytes: Uint8Array, pos: number, n: number): number {
  if (n === 0) {
    bytes[pos] = 48;
    return pos + 1;
  }
  let len = 0;
  for (let x = n; x > 0; x = Math.floor(x / 10)) len++;
  for (let i = len - 1, x = n; i >= 0; i--, x = Math.floor(x / 10)) bytes[pos + i] = 48 + (x % 10);
  return pos + len;
}

function writePrefix(bytes: Uint8Array, pos: number, prefix: Uint8Array): number {
  bytes.set(prefix, pos);
  return pos + prefix.length;
}

const encoder = new TextEncoder();
const S_BYTES = encoder.encode(S_PREFIX);
const OPT_BYTES = encoder.encode(OPT_PREFIX);

/**
 * One Arrow table (one batch) of rows (keys[i], version(i)) in the given order, built from typed
 * arrays with makeData (no builders, no row objects).
 */
export function makeRows(keys: ArrayLike<number>, version: number | ArrayLike<number>): arrow.Table {
  const n = keys.length;
  const key = new BigInt64Array(n);
  const i32 = new Int32Array(n);
  const f = new Float64Array(n);
  const sOff = new Int32Array(n + 1);
  const oOff = new Int32Array(n + 1);
  const sBytes = new Uint8Array(n * (S_PREFIX.length + 5));
  const oBytes = new Uint8Array(n * (OPT_PREFIX.length + 7));
  const valid = new Uint8Array((n + 7) >> 3);
  const val: RowValues = { i32: 0, fUnits: 0, s: 0, opt: 0 };
  let sPos = 0;
  let oPos = 0;
  let nulls = 0;
  for (let i = 0; i < n; i++) {
    const k = keys[i];
    const v = typeof version === 'number' ? version : version[i];
    valuesOf(k, v, val);
    key[i] = BigInt(keyOf(k));
    i32[i] = val.i32;
    f[i] = val.fUnits / F_SCALE;
    sPos = writeDigits(sBytes, writePrefix(sBytes, sPos, S_BYTES), val.s);
    sOff[i + 1] = sPos;
    if (val.opt >= 0) {
      oPos = writeDigits(oBytes, writePrefix(oBytes, oPos, OPT_BYTES), val.opt);
      valid[i >> 3] |= 1 << (i & 7);
    } else nulls++;
    oOff[i + 1] = oPos;
  }
  const schema = benchArrowSchema();
  const types = schema.fields.map((x) => x.type);
  const children = [
    arrow.makeData({ type: types[0] as arrow.Int64, length: n, nullCount: 0, data: key }),
    arrow.makeData({ type: types[1] as arrow.Int32, length: n, nullCount: 0, data: i32 }),
    arrow.makeData({ type: types[2] as arrow.Float64, length: n, nullCount: 0, data: f }),
    arrow.makeData({
      type: types[3] as arrow.Utf8,
      length: n,
      nullCount: 0,
      valueOffsets: sOff,
      data: sBytes.subarray(0, sPos),
    }),
    nulls > 0
      ? arrow.makeData({
          type: types[4] as arrow.Utf8,
          length: n,
          nullCount: nulls,
          nullBitmap: valid,
          valueOffsets: oOff,
          data: oBytes.subarray(0, oPos),
        })
      : arrow.makeData({
          type: types[4] as arrow.Utf8,
          length: n,
          nullCount: 0,
          valueOffsets: oOff,
          data: oBytes.subarray(0, oPos),
        }),
  ];
  const data = arrow.makeData({ type: new arrow.Struct(schema.fields), length: n, nullCount: 0, children });
  return new arrow.Table(schema, new arrow.RecordBatch(schema, data));
}

/** 0..n-1 as key indices. */
export function range(n: number, from = 0): Int32Array {
  const out = new Int32Array(n);
  for (let i = 0; i < n; i++) out[i] = from + i;
  return out;
}

/** `count` distinct key indices from [0, n), in random order (partial Fisher–Yates, seeded). */
export function sampleKeys(n: number, count: number, seed: number): Int32Array {
  if (count > n) throw new RangeError(`cannot sample ${count} distinct keys from ${n}`);
  const rand = mulberry32(seed);
  // Sparse swap map: O(count) memory even for a 10M key space.
  const swapped = new Map<number, number>();
  const out = new Int32Array(count);
  for (let i = 0; i < count; i++) {
    const j = i + Math.floor(rand() * (n - i));
    const atJ = swapped.get(j) ?? j;
    const atI = swapped.get(i) ?? i;
    swapped.set(j, atI);
    out[i] = atJ;
  }
  return out;
}

/** A random permutation of 0..n-1 (seeded), for writing keys in arrival order rather than sorted. */
export function shuffled(n: number, seed: number): Int32Array {
  const out = range(n);
  const rand = mulberry32(seed);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    const x = out[i];
    out[i] = out[j];
    out[j] = x;
  }
  return out;
}
