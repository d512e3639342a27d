/**
 * Primary-key order over Arrow columns. Every key is reduced to its first 8 bytes in a
 * byte-comparable form (two big-endian 32-bit words, `hi` and `lo`), which a stable LSD radix sort
 * orders in a few linear passes; keys longer than 8 bytes (strings, decimals, wide composites) keep
 * their full normalized encoding for the tie cases. Key order is: integers, dates and timestamps
 * numerically, DECIMAL exactly (128-bit), STRING in Unicode code-point order (UTF-8 byte order),
 * BYTES bytewise, composite keys column by column.
 */
import type * as arrow from 'apache-arrow';
import { SchemaMismatchError } from '../errors.js';
import { columnChunk, compareBytes, type ColumnChunk } from './column-access.js';
import { radixSortWords } from './radix-sort.js';

/** The keys of one table, ready for sorting and cross-table comparison. */
export interface KeyIndex {
  readonly count: number;
  /** Bytes 0..3 and 4..7 of each row's normalized key, big-endian, zero padded. */
  readonly hi: Uint32Array;
  readonly lo: Uint32Array;
  /** True when every normalized key fits in 8 bytes, so equal words mean equal keys. */
  readonly exact: boolean;
  /** The full normalized keys (prefix-free, bytewise comparable); null when `exact` by construction. */
  readonly bytes: Uint8Array | null;
  readonly offsets: Uint32Array | null;
}

/** Column positions of `keyColumns` in `table`, checked to exist. */
export function columnIndexes(table: arrow.Table, names: string[]): number[] {
  return names.map((n) => {
    const i = table.schema.fields.findIndex((f) => f.name === n);
    if (i < 0) throw new SchemaMismatchError(`merge input has no column ${n}`, n);
    return i;
  });
}

/** Word arrays a key index may be built in (each at least as long as the table). */
export interface KeyWords {
  hi: Uint32Array;
  lo: Uint32Array;
}

/**
 * Builds the key index of a single-batch table over the given key columns; a key of one
 * fixed-width column goes into `into` when given (the index is then valid while `into` is).
 */
export function keyIndex(table: arrow.Table, keyColumns: string[], into?: KeyWords): KeyIndex {
  const chunks = columnIndexes(table, keyColumns).map((i) => columnChunk(table, i));
  for (let c = 0; c < chunks.length; c++) {
    // Keys are NOT NULL by the schema; a null here would make the order meaningless.
    if (chunks[c].validity !== null) {
      throw new SchemaMismatchError(
        `primary key column ${keyColumns[c]} contains NULL; key columns must be NOT NULL`,
        keyColumns[c],
      );
    }
  }
  const n = table.numRows;
  if (chunks.length === 1 && chunks[0].kind !== 'bytes' && chunks[0].kind !== 'decimal')
    return fixedWidthIndex(chunks[0], n, into);
  return encodedIndex(chunks, n);
}

/** Fast path: one integer-like, float or boolean key column, whose normalized form is ≤ 8 bytes. */
function fixedWidthIndex(c: ColumnChunk, n: number, into?: KeyWords): KeyIndex {
  const hi = into === undefined ? new Uint32Array(n) : into.hi.subarray(0, n),
    lo = into === undefined ? new Uint32Array(n) : into.lo.subarray(0, n);
  // Reused words hold an earlier index: the int and bool paths write `hi` only.
  if (into !== undefined && c.kind !== 'int64' && c.kind !== 'float') lo.fill(0);
  if (c.kind === 'int64') {
    const w = c.words!;
    for (let i = 0; i < n; i++) {
      hi[i] = (w[2 * i + 1] ^ 0x80000000) >>> 0;
      lo[i] = w[2 * i] >>> 0;
    }
  } else if (c.kind === 'int') {
    const v = c.num!;
    for (let i = 0; i < n; i++) hi[i] = (v[i] ^ 0x80000000) >>> 0;
  } else if (c.kind === 'float') {
    const scratch = new DataView(new ArrayBuffer(8));
    for (let i = 0; i < n; i++) {
      const [h, l] = floatWords(c, i, scratch);
      hi[i] = h;
      lo[i] = l;
    }
  } else {
    for (let i = 0; i < n; i++) hi[i] = boolByte(c, i) << 24;
  }
  return { count: n, hi, lo, exact: true, bytes: null, offsets: null };
}

/** Byte-comparable words of a float (sign flipped for positives, all bits for negatives, one NaN). */
function floatWords(c: ColumnChunk, i: number, scratch: DataView): [number, number] {
  const v = c.num![i];
  const double = c.num instanceof Float64Array;
  if (double) scratch.setFloat64(0, Number.isNaN(v) ? NaN : v);
  else scratch.setFloat32(0, Number.isNaN(v) ? NaN : v);
  const h = scratch.getUint32(0);
  const l = double ? scratch.getUint32(4) : 0;
  if (h & 0x80000000) return [~h >>> 0, double ? ~l >>> 0 : 0];
  return [(h ^ 0x80000000) >>> 0, l];
}

function boolByte(c: ColumnChunk, i: number): number {
  const bit = c.bitOffset + i;
  return (c.bits![bit >> 3] >> (bit & 7)) & 1;
}

/** Bytes of a column's normalized form; 0 for strings and bytes, whose length varies per row. */
function fixedWidth(c: ColumnChunk): number {
  switch (c.kind) {
    case 'int':
      return 4;
    case 'int64':
      return 8;
    case 'float':
      return c.num instanceof Float64Array ? 8 : 4;
    case 'decimal':
      return 16;
    case 'bool':
      return 1;
    case 'bytes':
      return 0;
  }
}

/** General path: every key encoded into a prefix-free byte string whose bytewise order is key order. */
function encodedIndex(chunks: ColumnChunk[], n: number): KeyIndex {
  let fixed = 0;
  for (const c of chunks) fixed += fixedWidth(c);
  const offsets = new Uint32Array(n + 1);
  let total = 0;
  for (let i = 0; i < n; i++) {
    offsets[i] = total;
    let len = fixed;
    for (const c of chunks) {
      if (c.kind !== 'bytes') continue;
      const s = c.offsets![i],
        e = c.offsets![i + 1],
        b = c.bytes!;
      len += e - s + 2;
      for (let k = s; k < e; k++) if (b[k] === 0) len++;
    }
    total += len;
  }
  offsets[n] = total;
  const bytes = new Uint8Array(total);
  const scratch = new DataView(new ArrayBuffer(8));
  let maxLen = 0;
  for (let i = 0; i < n; i++) {
    let p = offsets[i];
    for (const c of chunks) p = encodeColumn(c, i, bytes, p, scratch);
    const len = p - offsets[i];
    if (len > maxLen) maxLen = len;
  }
  const hi = new Uint32Array(n),
    lo = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    hi[i] = wordAt(bytes, offsets[i], offsets[i + 1], 0);
    lo[i] = wordAt(bytes, offsets[i], offsets[i + 1], 4);
  }
  return { count: n, hi, lo, exact: maxLen <= 8, bytes, offsets };
}

function putWord(out: Uint8Array, p: number, w: number): number {
  out[p] = w >>> 24;
  out[p + 1] = (w >>> 16) & 0xff;
  out[p + 2] = (w >>> 8) & 0xff;
  out[p + 3] = w & 0xff;
  return p + 4;
}

/** Writes one column's normalized bytes for row `i`; returns the next write position. */
function encodeColumn(c: ColumnChunk, i: number, out: Uint8Array, p: number, scratch: DataView): number {
  switch (c.kind) {
    case 'int':
      return putWord(out, p, (c.num![i] ^ 0x80000000) >>> 0);
    case 'int64':
      p = putWord(out, p, (c.words![2 * i + 1] ^ 0x80000000) >>> 0);
      return putWord(out, p, c.words![2 * i] >>> 0);
    case 'float': {
      const [h, l] = floatWords(c, i, scratch);
      p = putWord(out, p, h);
      return c.num instanceof Float64Array ? putWord(out, p, l) : p;
    }
    case 'decimal': {
      const w = c.words!;
      p = putWord(out, p, (w[4 * i + 3] ^ 0x80000000) >>> 0);
      p = putWord(out, p, w[4 * i + 2] >>> 0);
      p = putWord(out, p, w[4 * i + 1] >>> 0);
      return putWord(out, p, w[4 * i] >>> 0);
    }
    case 'bool':
      out[p] = boolByte(c, i);
      return p + 1;
    case 'bytes': {
      // 0x00 becomes 0x00 0xFF and the value ends with 0x00 0x00: order-preserving and
      // prefix-free, so the next column starts at a position both keys agree on.
      const b = c.bytes!;
      for (let k = c.offsets![i], e = c.offsets![i + 1]; k < e; k++) {
        const x = b[k];
        out[p++] = x;
        if (x === 0) out[p++] = 0xff;
      }
      out[p++] = 0;
      out[p++] = 0;
      return p;
    }
  }
}

/** Big-endian word of bytes [s+at, s+at+4) of a key ending at `e`, zero padded. */
function wordAt(bytes: Uint8Array, s: number, e: number, at: number): number {
  let w = 0;
  for (let k = 0; k < 4; k++) {
    const q = s + at + k;
    w = (w << 8) | (q < e ? bytes[q] : 0);
  }
  return w >>> 0;
}

/** The keys of rows [from, to) of the table `keys` indexes (views, no copy): the index of that slice of it. */
export function sliceKeys(keys: KeyIndex, from: number, to: number): KeyIndex {
  if (from === 0 && to === keys.count) return keys;
  return {
    count: to - from,
    hi: keys.hi.subarray(from, to),
    lo: keys.lo.subarray(from, to),
    exact: keys.exact,
    bytes: keys.bytes,
    offsets: keys.offsets === null ? null : keys.offsets.subarray(from, to + 1),
  };
}

/** Compares key `i` of `a` with key `j` of `b` (both built over the same key columns and types). */
export function compareKeysAt(a: KeyIndex, i: number, b: KeyIndex, j: number): number {
  const ha = a.hi[i],
    hb = b.hi[j];
  if (ha !== hb) return ha < hb ? -1 : 1;
  const la = a.lo[i],
    lb = b.lo[j];
  if (la !== lb) return la < lb ? -1 : 1;
  if (a.exact && b.exact) return 0;
  return compareTail(a, i, b, j, 8);
}

/** Compares two encoded keys from byte `depth` on (the bytes before are known equal). */
function compareTail(a: KeyIndex, i: number, b: KeyIndex, j: number, depth: number): number {
  const sa = a.offsets![i],
    ea = a.offsets![i + 1],
    sb = b.offsets![j],
    eb = b.offsets![j + 1];
  return compareBytes(a.bytes!, Math.min(sa + depth, ea), ea, b.bytes!, Math.min(sb + depth, eb), eb);
}

/** A sort of one table by key: the permutation and where each run of equal keys ends. */
export interface KeySort {
  /** Row indices in key order; rows with equal keys by `tieBreak`, then by arrival (row index). */
  order: Uint32Array;
  /** Exclusive end (position in `order`) of each group of equal keys. */
  groupEnd: Uint32Array;
  groupCount: number;
}

/** Orders the rows of a single-batch table by key, then `tieBreak`, then row index (stable). */
export function sortByKey(
  table: arrow.Table,
  keyColumns: string[],
  tieBreak?: (i: number, j: number) => number,
): KeySort {
  const keys = keyIndex(table, keyColumns);
  const n = keys.count;
  const identity = new Uint32Array(n);
  for (let i = 0; i < n; i++) identity[i] = i;
  // Rows already in key order (a writer that sorted them when it split them by bucket) need no
  // sort: one linear check instead of four radix passes.
  const sorted = inKeyOrder(keys, identity);
  const order = sorted ? identity : radixSortWords(keys.hi.slice(), keys.lo.slice(), identity);
  if (!keys.exact && !sorted) refine(keys, order, 0, n, 8);
  const groupEnd = new Uint32Array(n);
  let groupCount = 0;
  const { hi, lo, exact } = keys;
  for (let k = 1; k <= n; k++) {
    if (k === n) {
      groupEnd[groupCount++] = k;
      continue;
    }
    const a = order[k - 1],
      b = order[k];
    if (hi[a] !== hi[b] || lo[a] !== lo[b] || (!exact && compareKeysAt(keys, a, keys, b) !== 0))
      groupEnd[groupCount++] = k;
  }
  if (tieBreak) {
    const byTie = (x: number, y: number) => tieBreak(x, y) || x - y;
    let s = 0;
    for (let g = 0; g < groupCount; g++) {
      const e = groupEnd[g];
      if (e - s > 1) order.subarray(s, e).sort(byTie);
      s = e;
    }
  }
  return { order, groupEnd: groupEnd.slice(0, groupCount), groupCount };
}

/** True when `rows` (indices into `keys`) are in non-decreasing key order. */
function inKeyOrder(keys: KeyIndex, rows: Uint32Array): boolean {
  const { hi, lo, exact } = keys;
  for (let k = 1; k < rows.length; k++) {
    const a = rows[k - 1],
      b = rows[k];
    if (hi[a] !== hi[b]) {
      if (hi[a] > hi[b]) return false;
    } else if (lo[a] !== lo[b]) {
      if (lo[a] > lo[b]) return false;
    } else if (!exact && compareKeysAt(keys, a, keys, b) > 0) return false;
  }
  return true;
}

/** Orders the rows of a single-batch table by key, then `tieBreak`, then arrival. */
export function sortPermutation(
  table: arrow.Table,
  keyColumns: string[],
  tieBreak?: (i: number, j: number) => number,
): Uint32Array {
  return sortByKey(table, keyColumns, tieBreak).order;
}

const SMALL_RUN = 48;

/** Sorts the runs of `order[s, e)` whose first `depth` bytes tie, by the bytes from `depth` on. */
function refine(keys: KeyIndex, order: Uint32Array, s: number, e: number, depth: number): void {
  const { hi, lo, offsets, bytes } = keys;
  const atDepth = depth === 8;
  let runStart = s;
  for (let k = s + 1; k <= e; k++) {
    const same =
      k < e &&
      (atDepth
        ? hi[order[k]] === hi[order[runStart]] && lo[order[k]] === lo[order[runStart]]
        : sameWords(bytes!, offsets!, order[k], order[runStart], depth - 8));
    if (same) continue;
    const len = k - runStart;
    if (len > 1 && longerThan(offsets!, order, runStart, k, depth)) {
      if (len <= SMALL_RUN) {
        const sub = order.subarray(runStart, k);
        sub.sort((x, y) => compareTail(keys, x, keys, y, depth) || x - y);
      } else {
        const sub = order.subarray(runStart, k);
        const h = new Uint32Array(len),
          l = new Uint32Array(len);
        for (let q = 0; q < len; q++) {
          const r = sub[q];
          h[q] = wordAt(bytes!, offsets![r], offsets![r + 1], depth);
          l[q] = wordAt(bytes!, offsets![r], offsets![r + 1], depth + 4);
        }
        sub.set(radixSortWords(h, l, sub.slice()));
        refine(keys, order, runStart, k, depth + 8);
      }
    }
    runStart = k;
  }
}

/** True when the 8 bytes at `depth` of keys x and y are equal. */
function sameWords(bytes: Uint8Array, offsets: Uint32Array, x: number, y: number, depth: number): boolean {
  return (
    wordAt(bytes, offsets[x], offsets[x + 1], depth) === wordAt(bytes, offsets[y], offsets[y + 1], depth) &&
    wordAt(bytes, offsets[x], offsets[x + 1], depth + 4) === wordAt(bytes, offsets[y], offsets[y + 1], depth + 4)
  );
}

/** True when some key in order[s, e) is longer than `depth` bytes, so the tie is not yet resolved. */
function longerThan(offsets: Uint32Array, order: Uint32Array, s: number, e: number, depth: number): boolean {
  for (let k = s; k < e; k++) if (offsets[order[k] + 1] - offsets[order[k]] > depth) return true;
  return false;
}

/** A comparator of rows across tables by key, caching each table's key index. */
export function keyComparator(keyColumns: string[]): {
  compareRows(a: arrow.Table, i: number, b: arrow.Table, j: number): number;
} {
  const cache = new WeakMap<arrow.Table, KeyIndex>();
  const indexOf = (t: arrow.Table) => {
    let k = cache.get(t);
    if (!k) cache.set(t, (k = keyIndex(t, keyColumns)));
    return k;
  };
  return { compareRows: (a, i, b, j) => compareKeysAt(indexOf(a), i, indexOf(b), j) };
}
