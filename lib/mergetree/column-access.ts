/**
 * Typed, allocation-free access to one column of one single-batch Arrow table: null tests, typed
 * reads and comparisons straight on the Arrow buffers. Everything in the merge path (key sort,
 * version order, aggregators) reads columns through this, never through row objects.
 */
import * as arrow from 'apache-arrow';
import { SchemaMismatchError } from '../errors.js';
import { readDecimal } from '../format/decimal.js';
import type { Value } from '../schema/types.js';

/**
 * How a column's values are laid out: `int` (8/16/32-bit integers and DATE, in `num`), `int64`
 * (BIGINT and TIMESTAMP, two 32-bit words per value in `words`), `float` (`num`), `decimal`
 * (128-bit two's complement, four words per value), `bytes` (STRING and BYTES: `bytes` + `offsets`),
 * `bool` (bits in `bits`).
 */
export type ColumnKind = 'int' | 'int64' | 'float' | 'decimal' | 'bytes' | 'bool';

/** One column of one single-batch table, unpacked once for fast reads. */
export interface ColumnChunk {
  readonly kind: ColumnKind;
  readonly type: arrow.DataType;
  readonly length: number;
  /** Validity bitmap (LSB first), or null when the column has no nulls. */
  readonly validity: Uint8Array | null;
  /** Bit position of row 0 in `validity` and `bits` (Arrow slices keep their bitmaps unsliced). */
  readonly bitOffset: number;
  readonly num: Int8Array | Int16Array | Int32Array | Float32Array | Float64Array | null;
  readonly words: Int32Array | null;
  readonly bytes: Uint8Array | null;
  readonly offsets: Int32Array | null;
  readonly bits: Uint8Array | null;
  /** Decimal scale, for reading decimals as text. */
  readonly scale: number;
}

const decoder = new TextDecoder();

/** Unpacks column `index` of a table with exactly one batch (callers normalise with singleBatch). */
export function columnChunk(table: arrow.Table, index: number): ColumnChunk {
  const vector = table.getChildAt(index);
  if (!vector) throw new SchemaMismatchError(`table has no column at position ${index}`);
  const name = table.schema.fields[index].name;
  if (vector.data.length !== 1) {
    throw new SchemaMismatchError(
      `column ${name} has ${vector.data.length} chunks; merge input must be single-batch`,
      name,
    );
  }
  return chunkOfData(vector.data[0], name);
}

/** Unpacks one Arrow Data (a single chunk of a column). */
export function chunkOfData(data: arrow.Data, name: string): ColumnChunk {
  const type = data.type;
  const validity = data.nullCount > 0 && data.nullBitmap && data.nullBitmap.length > 0 ? data.nullBitmap : null;
  const base = {
    type,
    length: data.length,
    validity,
    bitOffset: data.offset,
    num: null,
    words: null,
    bytes: null,
    offsets: null,
    bits: null,
    scale: 0,
  };
  const values = data.values as ArrayBufferView;
  switch (type.typeId) {
    case arrow.Type.Int:
    case arrow.Type.Date:
    case arrow.Type.Timestamp:
      if (values instanceof BigInt64Array) {
        return { ...base, kind: 'int64', words: new Int32Array(values.buffer, values.byteOffset, data.length * 2) };
      }
      if (values instanceof Int8Array || values instanceof Int16Array || values instanceof Int32Array) {
        return { ...base, kind: 'int', num: values.subarray(0, data.length) };
      }
      break;
    case arrow.Type.Float:
      if (values instanceof Float32Array || values instanceof Float64Array)
        return { ...base, kind: 'float', num: values.subarray(0, data.length) };
      break;
    case arrow.Type.Decimal: {
      const dec = type as arrow.Decimal;
      if (dec.bitWidth === 128) {
        const v = values as Uint32Array;
        return {
          ...base,
          kind: 'decimal',
          words: new Int32Array(v.buffer, v.byteOffset, data.length * 4),
          scale: dec.scale,
        };
      }
      break;
    }
    case arrow.Type.Utf8:
    case arrow.Type.Binary:
      return {
        ...base,
        kind: 'bytes',
        bytes: data.values as Uint8Array,
        offsets: (data.valueOffsets as Int32Array).subarray(0, data.length + 1),
      };
    case arrow.Type.Bool:
      return { ...base, kind: 'bool', bits: data.values as Uint8Array };
  }
  throw new SchemaMismatchError(
    `column ${name} has Arrow type ${String(type)}, which the merge path does not read`,
    name,
  );
}

/** True when row `i` of the chunk is NULL. */
export function isNullAt(c: ColumnChunk, i: number): boolean {
  const v = c.validity;
  if (v === null) return false;
  const bit = c.bitOffset + i;
  return ((v[bit >> 3] >> (bit & 7)) & 1) === 0;
}

/** Compares two non-null values of chunks of the same kind; strings and bytes compare bytewise. */
function compareNonNull(a: ColumnChunk, i: number, b: ColumnChunk, j: number): number {
  switch (a.kind) {
    case 'int': {
      const x = a.num![i],
        y = b.num![j];
      return x < y ? -1 : x > y ? 1 : 0;
    }
    case 'int64': {
      const wa = a.words!,
        wb = b.words!;
      const ha = wa[2 * i + 1],
        hb = wb[2 * j + 1];
      if (ha !== hb) return ha < hb ? -1 : 1;
      const la = wa[2 * i] >>> 0,
        lb = wb[2 * j] >>> 0;
      return la < lb ? -1 : la > lb ? 1 : 0;
    }
    case 'float':
      return compareFloat(a.num![i], b.num![j]);
    case 'decimal': {
      const wa = a.words!,
        wb = b.words!;
      const ha = wa[4 * i + 3],
        hb = wb[4 * j + 3];
      if (ha !== hb) return ha < hb ? -1 : 1;
      for (let k = 2; k >= 0; k--) {
        const x = wa[4 * i + k] >>> 0,
          y = wb[4 * j + k] >>> 0;
        if (x !== y) return x < y ? -1 : 1;
      }
      return 0;
    }
    case 'bytes':
      return compareBytes(a.bytes!, a.offsets![i], a.offsets![i + 1], b.bytes!, b.offsets![j], b.offsets![j + 1]);
    case 'bool': {
      const x = boolAt(a, i) ? 1 : 0,
        y = boolAt(b, j) ? 1 : 0;
      return x - y;
    }
  }
}

/** Compares two values with NULL ordered before every non-null value. */
export function compareAt(a: ColumnChunk, i: number, b: ColumnChunk, j: number): number {
  const na = isNullAt(a, i),
    nb = isNullAt(b, j);
  if (na || nb) return na === nb ? 0 : na ? -1 : 1;
  return compareNonNull(a, i, b, j);
}

/** Compares two values (NULL first) of chunks of one kind. */
export type ChunkComparator = (a: ColumnChunk, i: number, b: ColumnChunk, j: number) => number;

/**
 * A comparator specialised to one kind. Each is its own function, so the typed-array reads in a
 * hot loop (min/max, sequence groups) see one or two array types instead of every kind's.
 */
export function comparatorFor(kind: ColumnKind): ChunkComparator {
  return COMPARATORS[kind];
}

const nullOrder = (a: ColumnChunk, i: number, b: ColumnChunk, j: number): number => {
  const na = isNullAt(a, i),
    nb = isNullAt(b, j);
  return na === nb ? 0 : na ? -1 : 1;
};

const COMPARATORS: Record<ColumnKind, ChunkComparator> = {
  int: (a, i, b, j) => {
    if (a.validity !== null || b.validity !== null) {
      const n = nullOrder(a, i, b, j);
      if (n !== 0 || isNullAt(a, i)) return n;
    }
    const x = a.num![i],
      y = b.num![j];
    return x < y ? -1 : x > y ? 1 : 0;
  },
  float: (a, i, b, j) => {
    if (a.validity !== null || b.validity !== null) {
      const n = nullOrder(a, i, b, j);
      if (n !== 0 || isNullAt(a, i)) return n;
    }
    return compareFloat(a.num![i], b.num![j]);
  },
  int64: (a, i, b, j) => compareAt(a, i, b, j),
  decimal: (a, i, b, j) => compareAt(a, i, b, j),
  bytes: (a, i, b, j) => compareAt(a, i, b, j),
  bool: (a, i, b, j) => compareAt(a, i, b, j),
};

/** Total order on doubles (Java's Double.compare): -0 before +0, NaN after everything. */
function compareFloat(x: number, y: number): number {
  if (x < y) return -1;
  if (x > y) return 1;
  if (x === y) {
    if (x !== 0) return 0;
    const sx = Object.is(x, -0),
      sy = Object.is(y, -0);
    return sx === sy ? 0 : sx ? -1 : 1;
  }
  const nx = Number.isNaN(x),
    ny = Number.isNaN(y);
  return nx === ny ? 0 : nx ? 1 : -1;
}

/** Lexicographic unsigned byte comparison; for UTF-8 this is Unicode code-point order. */
export function compareBytes(a: Uint8Array, as: number, ae: number, b: Uint8Array, bs: number, be: number): number {
  const la = ae - as,
    lb = be - bs;
  const n = Math.min(la, lb);
  for (let k = 0; k < n; k++) {
    const x = a[as + k],
      y = b[bs + k];
    if (x !== y) return x < y ? -1 : 1;
  }
  return la - lb;
}

/** The boolean at row `i` of a `bool` chunk. */
export function boolAt(c: ColumnChunk, i: number): boolean {
  const bit = c.bitOffset + i;
  return ((c.bits![bit >> 3] >> (bit & 7)) & 1) === 1;
}

/** The 64-bit integer at row `i` of an `int64` chunk. */
export function int64At(c: ColumnChunk, i: number): bigint {
  const w = c.words!;
  return (BigInt(w[2 * i + 1]) << 32n) | BigInt(w[2 * i] >>> 0);
}

/** The unscaled 128-bit value at row `i` of a `decimal` chunk. */
export function decimalUnscaledAt(c: ColumnChunk, i: number): bigint {
  const w = c.words!;
  const hi = (BigInt(w[4 * i + 3]) << 32n) | BigInt(w[4 * i + 2] >>> 0);
  const lo = (BigInt(w[4 * i + 1] >>> 0) << 32n) | BigInt(w[4 * i] >>> 0);
  return (hi << 64n) | lo;
}

/** The string at row `i` of a `bytes` chunk, decoded as UTF-8. */
export function stringAt(c: ColumnChunk, i: number): string {
  return decoder.decode(c.bytes!.subarray(c.offsets![i], c.offsets![i + 1]));
}

/** The row-API value (schema/types mapping) at row `i`; used off the hot path only. */
export function valueAt(c: ColumnChunk, i: number): Value {
  if (isNullAt(c, i)) return null;
  switch (c.kind) {
    case 'int':
    case 'float':
      return c.num![i];
    case 'int64':
      return int64At(c, i);
    case 'decimal':
      return readDecimal(c.words!, 4 * i, c.scale);
    case 'bytes':
      return c.type.typeId === arrow.Type.Utf8 ? stringAt(c, i) : c.bytes!.slice(c.offsets![i], c.offsets![i + 1]);
    case 'bool':
      return boolAt(c, i);
  }
}
