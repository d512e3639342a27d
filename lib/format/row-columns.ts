/**
 * Conversions between row objects and one Arrow column, using the JS value of each type documented
 * in lib/schema/types.ts. Used by the row-oriented edges (CLI input and output, tests), never by
 * the merge path; each type still gets its own loop over typed arrays.
 */
import type * as arrow from 'apache-arrow';
import { SchemaMismatchError } from '../errors.js';
import type { DataField, Row, Value } from '../schema/types.js';
import { toArrowType } from './arrow-schema.js';
import { makeColumn, validityOf } from './column-layout.js';
import { readDecimal, writeDecimal } from './decimal.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const INT_RANGES = {
  TINYINT: [-128, 127],
  SMALLINT: [-32768, 32767],
  INT: [-2147483648, 2147483647],
  DATE: [-2147483648, 2147483647],
};

/** One column's cells as the builders read them: each null recorded in the validity bitmap and counted as it is read, a bad value thrown naming its row. */
interface Cells {
  n: number;
  type: arrow.DataType;
  validity: Uint8Array;
  nulls(): number;
  /** The row's value before null handling (to size a buffer). */
  raw(i: number): Value | undefined;
  /** The row's value, or undefined after recording a null (which a NOT NULL column refuses). */
  valueAt(i: number): Exclude<Value, null> | undefined;
  bad(i: number, v: unknown, expected: string): never;
}

function cellsOf(field: DataField, rows: Row[]): Cells {
  const n = rows.length;
  const { name, type: t } = field;
  const validity = new Uint8Array((n + 7) >> 3);
  let nulls = 0;
  const bad = (i: number, v: unknown, expected: string): never => {
    const shown = typeof v === 'bigint' ? `${v}n` : v instanceof Uint8Array ? `${v.length} bytes` : JSON.stringify(v);
    throw new SchemaMismatchError(`column ${name}, row ${i}: expected ${expected}, got ${shown}`, name);
  };
  const valueAt = (i: number): Exclude<Value, null> | undefined => {
    const v = rows[i][name];
    if (v === null || v === undefined) {
      if (!t.nullable) bad(i, null, `a value: ${name} is NOT NULL`);
      nulls++;
      return undefined;
    }
    validity[i >> 3] |= 1 << (i & 7);
    return v;
  };
  return { n, type: toArrowType(t), validity, nulls: () => nulls, raw: (i) => rows[i][name], valueAt, bad };
}

/** Builds the Arrow column of `field` from `rows[*][field.name]` (missing keys read as null). */
export function columnFromRows(field: DataField, rows: Row[]): arrow.Data {
  const cells = cellsOf(field, rows);
  const t = field.type;
  switch (t.root) {
    case 'BOOLEAN':
      return booleanColumn(cells);
    case 'TINYINT':
    case 'SMALLINT':
    case 'INT':
    case 'DATE':
      return int32Column(cells, INT_RANGES[t.root]);
    case 'BIGINT':
    case 'TIMESTAMP':
      return int64Column(cells);
    case 'FLOAT':
    case 'DOUBLE':
      return floatColumn(cells);
    case 'DECIMAL':
      return decimalColumn(cells, t.precision ?? 10, t.scale ?? 0, field.name);
    case 'STRING':
      return stringColumn(cells);
    case 'BYTES':
      return bytesColumn(cells);
  }
}

function booleanColumn({ n, type, validity, nulls, valueAt, bad }: Cells): arrow.Data {
  const values = new Uint8Array((n + 7) >> 3);
  for (let i = 0; i < n; i++) {
    const v = valueAt(i);
    if (v === undefined) continue;
    if (typeof v !== 'boolean') bad(i, v, 'a boolean');
    if (v) values[i >> 3] |= 1 << (i & 7);
  }
  return makeColumn(type, n, values, validity, nulls());
}

/** TINYINT, SMALLINT, INT and DATE: 32-bit integers (Arrow's narrower arrays for the small ones), each checked against its range. */
function int32Column({ n, type, validity, nulls, valueAt, bad }: Cells, [min, max]: number[]): arrow.Data {
  const values = new (type.ArrayType as Int32ArrayConstructor)(n);
  for (let i = 0; i < n; i++) {
    const v = valueAt(i);
    if (v === undefined) continue;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max)
      bad(i, v, `an integer in [${min}, ${max}]`);
    values[i] = v as number;
  }
  return makeColumn(type, n, values, validity, nulls());
}

/** BIGINT and TIMESTAMP: a bigint, or a number that is a safe integer. */
function int64Column({ n, type, validity, nulls, valueAt, bad }: Cells): arrow.Data {
  const values = new BigInt64Array(n);
  for (let i = 0; i < n; i++) {
    const v = valueAt(i);
    if (v === undefined) continue;
    const b =
      typeof v === 'bigint' ? v : typeof v === 'number' && Number.isSafeInteger(v) ? BigInt(v) : bad(i, v, 'a bigint');
    if (BigInt.asIntN(64, b) !== b) bad(i, v, 'a 64-bit integer');
    values[i] = b;
  }
  return makeColumn(type, n, values, validity, nulls());
}

function floatColumn({ n, type, validity, nulls, valueAt, bad }: Cells): arrow.Data {
  const values = new (type.ArrayType as Float64ArrayConstructor)(n);
  for (let i = 0; i < n; i++) {
    const v = valueAt(i);
    if (v === undefined) continue;
    if (typeof v !== 'number') bad(i, v, 'a number');
    values[i] = v as number;
  }
  return makeColumn(type, n, values, validity, nulls());
}

/** DECIMAL(p, s) as 128-bit little-endian words, from a decimal string (or a number or bigint). */
function decimalColumn(
  { n, type, validity, nulls, valueAt, bad }: Cells,
  precision: number,
  scale: number,
  name: string,
): arrow.Data {
  const values = new Uint32Array(n * 4);
  const words = new Int32Array(values.buffer);
  for (let i = 0; i < n; i++) {
    const v = valueAt(i);
    if (v === undefined) continue;
    if (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'bigint') bad(i, v, 'a decimal string');
    writeDecimal(String(v), precision, scale, words, i * 4, name);
  }
  return makeColumn(type, n, values, validity, nulls());
}

/** UTF-8 encodes a STRING column; ASCII is written byte by byte, anything else by encodeInto. */
function stringColumn({ n, type, validity, nulls, valueAt, bad }: Cells): arrow.Data {
  const offsets = new Int32Array(n + 1);
  let bytes = new Uint8Array(Math.max(64, n * 16));
  let pos = 0;
  for (let i = 0; i < n; i++) {
    const v = valueAt(i);
    if (v !== undefined) {
      if (typeof v !== 'string') bad(i, v, 'a string');
      const s = v as string;
      const len = s.length;
      // A UTF-16 code unit never takes more than 3 UTF-8 bytes.
      if (pos + len * 3 > bytes.length) {
        const grown = new Uint8Array(Math.max(bytes.length * 2, pos + len * 3));
        grown.set(bytes.subarray(0, pos));
        bytes = grown;
      }
      let j = 0;
      for (; j < len; j++) {
        const c = s.charCodeAt(j);
        if (c >= 0x80) break;
        bytes[pos + j] = c;
      }
      pos += j === len ? len : encoder.encodeInto(s, bytes.subarray(pos)).written;
    }
    offsets[i + 1] = pos;
  }
  return makeColumn(type, n, bytes.subarray(0, pos), validity, nulls(), offsets);
}

/** BYTES: the values' total size first, then one copy each. */
function bytesColumn({ n, type, validity, nulls, raw, valueAt, bad }: Cells): arrow.Data {
  let total = 0;
  for (let i = 0; i < n; i++) {
    const v = raw(i);
    if (v instanceof Uint8Array) total += v.length;
  }
  const bytes = new Uint8Array(total);
  const offsets = new Int32Array(n + 1);
  let pos = 0;
  for (let i = 0; i < n; i++) {
    const v = valueAt(i);
    if (v !== undefined) {
      if (!(v instanceof Uint8Array)) bad(i, v, 'a Uint8Array');
      bytes.set(v as Uint8Array, pos);
      pos += (v as Uint8Array).length;
    }
    offsets[i + 1] = pos;
  }
  return makeColumn(type, n, bytes, validity, nulls(), offsets);
}

/** Writes the JS values of column chunk `d` into `rows[base + i][field.name]`. */
export function rowsFromColumn(d: arrow.Data, field: DataField, rows: Row[], base: number): void {
  const { name, type: t } = field;
  const n = d.length;
  const bm = validityOf(d);
  const off = d.offset;
  const isNull = (i: number) => bm !== null && ((bm[(off + i) >> 3] >> ((off + i) & 7)) & 1) === 0;
  const put = (read: (i: number) => Value) => {
    for (let i = 0; i < n; i++) rows[base + i][name] = isNull(i) ? null : read(i);
  };
  switch (t.root) {
    case 'BOOLEAN': {
      const v = d.values as Uint8Array;
      put((i) => ((v[(off + i) >> 3] >> ((off + i) & 7)) & 1) === 1);
      return;
    }
    case 'TINYINT':
    case 'SMALLINT':
    case 'INT':
    case 'FLOAT':
    case 'DOUBLE':
    case 'DATE': {
      const v = d.values as Int32Array | Float64Array;
      put((i) => v[i]);
      return;
    }
    case 'BIGINT':
    case 'TIMESTAMP': {
      const v = d.values as BigInt64Array;
      put((i) => v[i]);
      return;
    }
    case 'DECIMAL': {
      const v = d.values as Uint32Array;
      const words = new Int32Array(v.buffer, v.byteOffset, v.length);
      const scale = t.scale ?? 0;
      put((i) => readDecimal(words, i * 4, scale));
      return;
    }
    case 'STRING':
    case 'BYTES': {
      const o = d.valueOffsets as Int32Array;
      const v = d.values as Uint8Array;
      if (t.root === 'STRING') put((i) => decoder.decode(v.subarray(o[i], o[i + 1])));
      else put((i) => v.slice(o[i], o[i + 1]));
      return;
    }
  }
}
