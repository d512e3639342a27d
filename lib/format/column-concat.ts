/**
 * The concat kernel: one contiguous column from the chunks of a multi-batch column (what a Parquet
 * read returns), with bulk copies of value words, byte-aligned bitmap copies when possible, and
 * rebased string offsets.
 */
import type * as arrow from 'apache-arrow';
import { InvalidArgumentError } from '../errors.js';
import { allocValues, layoutOf, makeColumn, MAX_VAR_BYTES, validityOf, wordView } from './column-layout.js';

/** Concatenates the chunks of one column, in order, into a single new Data. */
export function concatColumn(type: arrow.DataType, column: string, chunks: arrow.Data[]): arrow.Data {
  const layout = layoutOf(type, column);
  let n = 0;
  let nullCount = 0;
  for (const d of chunks) {
    n += d.length;
    nullCount += d.nullCount;
  }
  let validity: Uint8Array | null = null;
  if (nullCount > 0) {
    validity = new Uint8Array((n + 7) >> 3);
    let pos = 0;
    for (const d of chunks) {
      const bm = validityOf(d);
      if (bm === null) setBits(validity, pos, d.length);
      else copyBits(validity, pos, bm, d.offset, d.length);
      pos += d.length;
    }
  }
  if (layout.kind === 'bool') {
    const values = new Uint8Array((n + 7) >> 3);
    let pos = 0;
    for (const d of chunks) {
      copyBits(values, pos, d.values as Uint8Array, d.offset, d.length);
      pos += d.length;
    }
    return makeColumn(type, n, values, validity, nullCount);
  }
  if (layout.kind === 'var') {
    let total = 0;
    for (const d of chunks) {
      const o = d.valueOffsets as Int32Array;
      total += o[d.length] - o[0];
    }
    if (total > MAX_VAR_BYTES) {
      throw new InvalidArgumentError(
        `column ${column}: ${n} rows hold more than 2 GiB of string/bytes data, too much for one batch; read or merge fewer rows at a time`,
      );
    }
    const offsets = new Int32Array(n + 1);
    const bytes = new Uint8Array(total);
    let row = 0;
    let pos = 0;
    for (const d of chunks) {
      const o = d.valueOffsets as Int32Array;
      const start = o[0];
      const delta = pos - start;
      for (let i = 1; i <= d.length; i++) offsets[row + i] = o[i] + delta;
      bytes.set((d.values as Uint8Array).subarray(start, o[d.length]), pos);
      pos += o[d.length] - start;
      row += d.length;
    }
    return makeColumn(type, n, bytes, validity, nullCount, offsets);
  }
  const values = allocValues(type, layout, n);
  const out = wordView(values, layout.width);
  // Words per row in the view: 1 for 1- and 2-byte views, width/4 for the Int32 view.
  const perRow = layout.width <= 2 ? 1 : layout.width >> 2;
  let pos = 0;
  for (const d of chunks) {
    const src = wordView(d.values, layout.width);
    out.set(src.subarray(0, d.length * perRow) as never, pos * perRow);
    pos += d.length;
  }
  return makeColumn(type, n, values, validity, nullCount);
}

/** Sets bits [pos, pos+len) of a zeroed bitmap to 1. */
function setBits(dst: Uint8Array, pos: number, len: number): void {
  let i = pos;
  const end = pos + len;
  while (i < end && (i & 7) !== 0) dst[i >> 3] |= 1 << (i++ & 7);
  while (i + 8 <= end) {
    dst[i >> 3] = 0xff;
    i += 8;
  }
  while (i < end) dst[i >> 3] |= 1 << (i++ & 7);
}

/** ORs `len` bits from `src` at bit `srcPos` into zeroed `dst` at bit `dstPos`. */
function copyBits(dst: Uint8Array, dstPos: number, src: Uint8Array, srcPos: number, len: number): void {
  let i = 0;
  if ((dstPos & 7) === 0 && (srcPos & 7) === 0) {
    // Both byte-aligned (the usual case: 65536-row batches, unsliced): copy whole bytes.
    const bytes = len >> 3;
    dst.set(src.subarray(srcPos >> 3, (srcPos >> 3) + bytes), dstPos >> 3);
    i = bytes << 3;
  }
  for (; i < len; i++) {
    const s = srcPos + i;
    if ((src[s >> 3] >> (s & 7)) & 1) {
      const d = dstPos + i;
      dst[d >> 3] |= 1 << (d & 7);
    }
  }
}
