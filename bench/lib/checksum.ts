/**
 * Order-independent checksums of benchmark results: row count plus exact integer sums over every
 * column, one of them mixing key and value so that a row with the wrong version of its key is
 * caught. Computed from Arrow buffers (results), from the generator (expectations) and in SQL
 * (DuckDB), always with the same definition.
 */
import type * as arrow from 'apache-arrow';
import { F_SCALE, keyOf, valuesOf, type RowValues } from './data.js';

/** What a result must match. Every field is an exact integer. */
export interface Checksum {
  rows: number;
  /** Sum of keys, as a decimal string (it exceeds 2^53). */
  keySum: string;
  /** Sum of (key mod 64) × i32: ties each value to its key. */
  mix: number;
  i32Sum: number;
  /** Sum of f × 2^20. */
  fUnits: number;
  /** Sum of the numbers inside `s`. */
  sSum: number;
  optCount: number;
  /** Sum of the numbers inside the non-null `opt`. */
  optSum: number;
}

/** Thrown when a benchmark's result differs from what the generator says it must be. */
export class BenchCheckError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BenchCheckError';
  }
}

/** Accumulates rows given as (key index, values) — the generator side. */
export class ChecksumBuilder {
  private rows = 0;
  private keyIndexSum = 0;
  private mix = 0;
  private i32Sum = 0;
  private fUnits = 0;
  private sSum = 0;
  private optCount = 0;
  private optSum = 0;
  private readonly scratch: RowValues = { i32: 0, fUnits: 0, s: 0, opt: 0 };

  /** Adds row (k, v). */
  add(k: number, v: number): void {
    const val = valuesOf(k, v, this.scratch);
    this.rows++;
    this.keyIndexSum += k;
    this.mix += (keyOf(k) % 64) * val.i32;
    this.i32Sum += val.i32;
    this.fUnits += val.fUnits;
    this.sSum += val.s;
    if (val.opt >= 0) {
      this.optCount++;
      this.optSum += val.opt;
    }
  }

  /** Adds rows (keys[i], version or version[i]). */
  addAll(keys: ArrayLike<number>, version: number | ArrayLike<number>): this {
    for (let i = 0; i < keys.length; i++) this.add(keys[i], typeof version === 'number' ? version : version[i]);
    return this;
  }

  /** The checksum of every row added. */
  build(): Checksum {
    // keyOf(k) = base + 7k, so the key sum is rows·base + 7·Σk, exact in BigInt.
    const keySum = BigInt(this.rows) * BigInt(keyOf(0)) + 7n * BigInt(this.keyIndexSum);
    return {
      rows: this.rows,
      keySum: keySum.toString(),
      mix: this.mix,
      i32Sum: this.i32Sum,
      fUnits: this.fUnits,
      sSum: this.sSum,
      optCount: this.optCount,
      optSum: this.optSum,
    };
  }
}

/** The checksum of rows (keys[i], version(i)). */
export function expectedChecksum(keys: ArrayLike<number>, version: number | ArrayLike<number>): Checksum {
  return new ChecksumBuilder().addAll(keys, version).build();
}

/** Sum of the decimal digits after `skip` bytes of each non-null string of a Utf8 chunk. */
function addNumbersOf(d: arrow.Data, skip: number, acc: { sum: number; count: number }): void {
  const offsets = d.valueOffsets as Int32Array;
  const bytes = d.values as Uint8Array;
  const bitmap = d.nullCount > 0 ? d.nullBitmap : null;
  for (let i = 0; i < d.length; i++) {
    if (bitmap) {
      const bit = d.offset + i;
      if ((bitmap[bit >> 3] & (1 << (bit & 7))) === 0) continue;
    }
    let n = 0;
    for (let p = offsets[i] + skip, end = offsets[i + 1]; p < end; p++) n = n * 10 + (bytes[p] - 48);
    acc.sum += n;
    acc.count++;
  }
}

/** The checksum of an Arrow table with (at least) the benchmark columns, from its buffers. */
export function tableChecksum(t: arrow.Table): Checksum {
  const key = t.getChild('key');
  const i32 = t.getChild('i32');
  const f = t.getChild('f');
  const s = t.getChild('s');
  const opt = t.getChild('opt');
  if (!key || !i32 || !f || !s || !opt)
    throw new BenchCheckError(`result lacks benchmark columns: it has ${t.schema.names.join(', ')}`);
  let keySum = 0n;
  let mix = 0;
  let i32Sum = 0;
  const keyMod: Uint8Array = new Uint8Array(t.numRows);
  let row = 0;
  for (const d of key.data) {
    const v = d.values as BigInt64Array;
    const words = new Int32Array(v.buffer, v.byteOffset, d.length * 2);
    // Per chunk of ≤ 65k rows the word sums stay below 2^53; the total is carried in BigInt.
    for (let from = 0; from < d.length; from += 65_536) {
      let lo = 0;
      let hi = 0;
      const to = Math.min(d.length, from + 65_536);
      for (let i = from; i < to; i++) {
        const l = words[2 * i] >>> 0;
        lo += l;
        hi += words[2 * i + 1];
        keyMod[row++] = l & 63;
      }
      keySum += BigInt(hi) * 4294967296n + BigInt(lo);
    }
  }
  row = 0;
  for (const d of i32.data) {
    const v = d.values as Int32Array;
    for (let i = 0; i < d.length; i++) {
      i32Sum += v[i];
      mix += keyMod[row++] * v[i];
    }
  }
  let fUnits = 0;
  for (const d of f.data) {
    const v = d.values as Float64Array;
    for (let i = 0; i < d.length; i++) fUnits += v[i] * F_SCALE;
  }
  const sAcc = { sum: 0, count: 0 };
  for (const d of s.data) addNumbersOf(d, 5, sAcc);
  const oAcc = { sum: 0, count: 0 };
  for (const d of opt.data) addNumbersOf(d, 4, oAcc);
  return {
    rows: t.numRows,
    keySum: keySum.toString(),
    mix,
    i32Sum,
    fUnits,
    sSum: sAcc.sum,
    optCount: oAcc.count,
    optSum: oAcc.sum,
  };
}

/** Adds checksums of disjoint row sets (or subtracts, with `signs` of -1: replacing rows). */
export function addChecksums(parts: Checksum[], signs?: number[]): Checksum {
  const out: Checksum = { rows: 0, keySum: '0', mix: 0, i32Sum: 0, fUnits: 0, sSum: 0, optCount: 0, optSum: 0 };
  let keySum = 0n;
  parts.forEach((c, i) => {
    const sign = signs?.[i] ?? 1;
    out.rows += sign * c.rows;
    keySum += BigInt(sign) * BigInt(c.keySum);
    out.mix += sign * c.mix;
    out.i32Sum += sign * c.i32Sum;
    out.fUnits += sign * c.fUnits;
    out.sSum += sign * c.sSum;
    out.optCount += sign * c.optCount;
    out.optSum += sign * c.optSum;
  });
  out.keySum = keySum.toString();
  return out;
}

/** Throws BenchCheckError naming every field that differs. */
export function assertChecksum(what: string, actual: Checksum, expected: Checksum): void {
  const diffs = (Object.keys(expected) as (keyof Checksum)[]).filter((k) => actual[k] !== expected[k]);
  if (diffs.length > 0) {
    const detail = diffs.map((k) => `${k}: got ${actual[k]}, expected ${expected[k]}`).join('; ');
    throw new BenchCheckError(`WRONG RESULT in ${what}: ${detail}`);
  }
}

/** Throws BenchCheckError unless `actual === expected`. */
export function assertEqual(what: string, actual: unknown, expected: unknown): void {
  if (actual !== expected)
    throw new BenchCheckError(`WRONG RESULT in ${what}: got ${String(actual)}, expected ${String(expected)}`);
}
