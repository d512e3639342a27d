/**
 * The gather kernel: output row i of a column is row `row[i]` of chunk `source[i]` (of chunk 0 when
 * `source` is null, which is "take"). One loop per layout, each over a single typed-array class, so
 * every loop stays monomorphic; values are copied as integer words, so floats keep their exact bits.
 */
import type * as arrow from 'apache-arrow';
import { InvalidArgumentError } from '../errors.js';
import {
  allocValues,
  layoutOf,
  makeColumn,
  MAX_VAR_BYTES,
  ownMemory,
  typedFrom,
  validityOf,
  wordView,
  type Allocate,
} from './column-layout.js';

/**
 * Gathers one column from `chunks` (one Data per source) into a new Data of `row.length` rows,
 * its buffers from `alloc`.
 */
export function gatherColumn(
  type: arrow.DataType,
  column: string,
  chunks: arrow.Data[],
  source: Uint16Array | null,
  row: Uint32Array,
  alloc: Allocate = ownMemory,
): arrow.Data {
  const n = row.length;
  const layout = layoutOf(type, column);
  const bitmaps = chunks.map(validityOf);
  let validity: Uint8Array | null = null;
  let nullCount = 0;
  if (bitmaps.some((b) => b !== null)) {
    validity = typedFrom(Uint8Array, alloc, (n + 7) >> 3);
    nullCount =
      n -
      gatherBits(
        bitmaps,
        chunks.map((d) => d.offset),
        source,
        row,
        validity,
      );
  }
  if (layout.kind === 'bool') {
    const values = typedFrom(Uint8Array, alloc, (n + 7) >> 3);
    gatherBits(
      chunks.map((d) => d.values as Uint8Array),
      chunks.map((d) => d.offset),
      source,
      row,
      values,
    );
    return makeColumn(type, n, values, validity, nullCount);
  }
  if (layout.kind === 'var') {
    const { offsets, bytes } = gatherVar(chunks, source, row, column, alloc);
    return makeColumn(type, n, bytes, validity, nullCount, offsets);
  }
  const values = allocValues(type, layout, n, alloc);
  const w = layout.width;
  if (w === 1)
    gather8(
      chunks.map((d) => wordView(d.values, 1) as Uint8Array),
      source,
      row,
      wordView(values, 1) as Uint8Array,
    );
  else if (w === 2)
    gather16(
      chunks.map((d) => wordView(d.values, 2) as Uint16Array),
      source,
      row,
      wordView(values, 2) as Uint16Array,
    );
  else
    gather32(
      chunks.map((d) => wordView(d.values, w) as Int32Array),
      w >> 2,
      source,
      row,
      wordView(values, w) as Int32Array,
    );
  return makeColumn(type, n, values, validity, nullCount);
}

/**
 * Gathers bits (Bool values or validity) into `out`, which must be zeroed; a null entry in `bits`
 * stands for all ones (a chunk without nulls). Returns the number of ones written.
 */
function gatherBits(
  bits: (Uint8Array | null)[],
  offsets: number[],
  source: Uint16Array | null,
  row: Uint32Array,
  out: Uint8Array,
): number {
  const n = row.length;
  let ones = 0;
  let acc = 0;
  for (let i = 0; i < n; i++) {
    const s = source === null ? 0 : source[i];
    const b = bits[s];
    let bit = 1;
    if (b !== null) {
      const p = offsets[s] + row[i];
      bit = (b[p >> 3] >> (p & 7)) & 1;
    }
    acc |= bit << (i & 7);
    ones += bit;
    if ((i & 7) === 7) {
      out[i >> 3] = acc;
      acc = 0;
    }
  }
  if ((n & 7) !== 0) out[n >> 3] = acc;
  return ones;
}

function gather8(src: Uint8Array[], source: Uint16Array | null, row: Uint32Array, out: Uint8Array): void {
  const n = row.length;
  if (source === null) {
    const s = src[0];
    for (let i = 0; i < n; i++) out[i] = s[row[i]];
  } else {
    for (let i = 0; i < n; i++) out[i] = src[source[i]][row[i]];
  }
}

function gather16(src: Uint16Array[], source: Uint16Array | null, row: Uint32Array, out: Uint16Array): void {
  const n = row.length;
  if (source === null) {
    const s = src[0];
    for (let i = 0; i < n; i++) out[i] = s[row[i]];
  } else {
    for (let i = 0; i < n; i++) out[i] = src[source[i]][row[i]];
  }
}

/** Gathers rows of `words` 32-bit words each (1: 4-byte types, 2: 8-byte, 4: Decimal128). */
function gather32(
  src: Int32Array[],
  words: number,
  source: Uint16Array | null,
  row: Uint32Array,
  out: Int32Array,
): void {
  const n = row.length;
  if (words === 1) {
    if (source === null) {
      const s = src[0];
      for (let i = 0; i < n; i++) out[i] = s[row[i]];
    } else {
      for (let i = 0; i < n; i++) out[i] = src[source[i]][row[i]];
    }
  } else if (words === 2) {
    for (let i = 0, o = 0; i < n; i++, o += 2) {
      const s = source === null ? src[0] : src[source[i]];
      const r = row[i] << 1;
      out[o] = s[r];
      out[o + 1] = s[r + 1];
    }
  } else {
    for (let i = 0, o = 0; i < n; i++, o += 4) {
      const s = source === null ? src[0] : src[source[i]];
      const r = row[i] * 4;
      out[o] = s[r];
      out[o + 1] = s[r + 1];
      out[o + 2] = s[r + 2];
      out[o + 3] = s[r + 3];
    }
  }
}

/** Gathers Utf8/Binary rows: offsets first (sizing the byte buffer exactly), then the bytes. */
function gatherVar(
  chunks: arrow.Data[],
  source: Uint16Array | null,
  row: Uint32Array,
  column: string,
  alloc: Allocate,
): { offsets: Int32Array; bytes: Uint8Array } {
  const n = row.length;
  const srcOffsets = chunks.map((d) => d.valueOffsets as Int32Array);
  const srcBytes = chunks.map((d) => d.values as Uint8Array);
  const offsets = typedFrom(Int32Array, alloc, n + 1);
  // Where each value starts in its source, read once with its length: the copy pass reads these
  // in order instead of looking the source offsets up again at random.
  const starts = startsScratch(n);
  // A double sum cannot wrap; it is checked once before it is trusted as Int32 offsets.
  let total = 0;
  if (source === null) {
    const o = srcOffsets[0];
    for (let i = 0; i < n; i++) {
      const r = row[i];
      const from = o[r];
      starts[i] = from;
      total += o[r + 1] - from;
      offsets[i + 1] = total;
    }
  } else {
    for (let i = 0; i < n; i++) {
      const o = srcOffsets[source[i]];
      const r = row[i];
      const from = o[r];
      starts[i] = from;
      total += o[r + 1] - from;
      offsets[i + 1] = total;
    }
  }
  if (total > MAX_VAR_BYTES) {
    throw new InvalidArgumentError(
      `column ${column}: gathering ${n} rows needs more than 2 GiB of string/bytes data in one batch; gather fewer rows at a time`,
    );
  }
  const bytes = typedFrom(Uint8Array, alloc, total);
  if (source === null) copyRuns(srcBytes[0], starts, offsets, bytes);
  else copySourceRuns(srcBytes, source, starts, offsets, bytes);
  return { offsets, bytes };
}

/**
 * gatherVar's value starts (used only during the call) for up to this many rows are kept for the
 * next gather (4 bytes a row: at most 1 MB) instead of fresh per gather: new ArrayBuffers are what
 * set off full garbage collections (issue 32's full compaction gathered 7 MB of them).
 */
const REUSED_STARTS = 1 << 18;
let reusedStarts = new Int32Array(0);

function startsScratch(n: number): Int32Array {
  if (n > REUSED_STARTS) return new Int32Array(n);
  if (reusedStarts.length < n)
    reusedStarts = new Int32Array(Math.min(REUSED_STARTS, Math.max(n, 2 * reusedStarts.length, 1024)));
  return reusedStarts.subarray(0, n);
}

/** Copies value i of `v`, which starts at `starts[i]`, to `out` at `offsets[i]` (its length is the offsets' difference). */
function copyRuns(v: Uint8Array, starts: Int32Array, offsets: Int32Array, out: Uint8Array): void {
  const n = starts.length;
  for (let i = 0; i < n; i++) {
    let from = starts[i];
    let to = offsets[i];
    const end = offsets[i + 1];
    if (end - to < 32) {
      while (to < end) out[to++] = v[from++];
    } else {
      out.set(v.subarray(from, from + end - to), to);
    }
  }
}

/** copyRuns over several sources: value i comes from `v[source[i]]`. */
function copySourceRuns(
  v: Uint8Array[],
  source: Uint16Array,
  starts: Int32Array,
  offsets: Int32Array,
  out: Uint8Array,
): void {
  const n = starts.length;
  for (let i = 0; i < n; i++) {
    const b = v[source[i]];
    let from = starts[i];
    let to = offsets[i];
    const end = offsets[i + 1];
    if (end - to < 32) {
      while (to < end) out[to++] = b[from++];
    } else {
      out.set(b.subarray(from, from + end - to), to);
    }
  }
}
