/**
 * Column values out of varve: the exact JSON codec used in metadata (min/max keys), the display
 * form for users' JSON output, and text for tables and CSV.
 */
import { CorruptMetadataError } from '../errors.js';
import { formatDate, formatTimestamp } from './temporal.js';
import type { DataType, Value } from './types.js';

/** A JSON-safe value. */
export type JsonValue = string | number | boolean | null;
/** A value as users see it in JSON output. */
export type DisplayValue = string | number | boolean | null;

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}(?:==)?|[A-Za-z0-9+/]{3}=?)?$/;

/** Bytes of standard base64 text (padding optional); undefined when it is not base64. */
export function decodeBase64(text: string): Uint8Array | undefined {
  if (!BASE64.test(text)) return undefined;
  return new Uint8Array(Buffer.from(text, 'base64'));
}

/** Standard base64 text of bytes, padded. */
function encodeBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

/** Shortest decimal text that reads back as the same float32 (what a user wrote, not 0.10000000149011612). */
function float32Text(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  if (Object.is(v, -0)) return '-0';
  for (let p = 1; p < 9; p++) {
    const s = Number(v.toPrecision(p));
    if (Math.fround(s) === v) return String(s);
  }
  return String(Number(v.toPrecision(9)));
}

function doubleText(v: number): string {
  return Object.is(v, -0) ? '-0' : String(v);
}

/**
 * The exact, JSON-safe form of a value for metadata: BIGINT and TIMESTAMP as decimal strings,
 * DECIMAL as its text, BYTES as base64, DATE as days; floats as numbers except NaN, ±Infinity and
 * -0, which JSON numbers cannot carry and are written as strings.
 */
export function toJsonValue(type: DataType, v: Value): JsonValue {
  if (v === null) return null;
  switch (type.root) {
    case 'BIGINT':
    case 'TIMESTAMP':
      return String(v);
    case 'BYTES':
      return encodeBase64(v as Uint8Array);
    case 'FLOAT':
    case 'DOUBLE': {
      const n = v as number;
      return Number.isFinite(n) && !Object.is(n, -0) ? n : doubleText(n);
    }
    default:
      return v as JsonValue;
  }
}

/** Inverse of toJsonValue; throws CorruptMetadataError when `j` does not have the type's JSON shape. */
export function fromJsonValue(type: DataType, j: JsonValue): Value {
  if (j === null) return null;
  switch (type.root) {
    case 'BIGINT':
    case 'TIMESTAMP':
      if (typeof j === 'string' && /^-?\d+$/.test(j)) return BigInt(j);
      break;
    case 'BYTES':
      if (typeof j === 'string') {
        const b = decodeBase64(j);
        if (b) return b;
      }
      break;
    case 'FLOAT':
    case 'DOUBLE':
      if (typeof j === 'number') return j;
      if (j === 'NaN' || j === 'Infinity' || j === '-Infinity' || j === '-0') return Number(j);
      break;
    case 'BOOLEAN':
      if (typeof j === 'boolean') return j;
      break;
    case 'TINYINT':
    case 'SMALLINT':
    case 'INT':
    case 'DATE':
      if (typeof j === 'number' && Number.isInteger(j)) return j;
      break;
    case 'DECIMAL':
    case 'STRING':
      if (typeof j === 'string') return j;
      break;
  }
  throw new CorruptMetadataError(`metadata value ${JSON.stringify(j)} is not a valid ${type.root}`);
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * A value for users' JSON output: BIGINT a number when |v| ≤ 2^53-1 (else a string), DATE
 * `YYYY-MM-DD`, TIMESTAMP ISO-8601 UTC with 3 or 6 decimals, DECIMAL text, BYTES base64, floats as
 * numbers (NaN and ±Infinity as strings).
 */
export function toDisplayValue(type: DataType, v: Value): DisplayValue {
  if (v === null) return null;
  switch (type.root) {
    case 'BIGINT': {
      const b = v as bigint;
      return b <= MAX_SAFE && b >= -MAX_SAFE ? Number(b) : String(b);
    }
    case 'TIMESTAMP':
      return formatTimestamp(v as bigint, type.precision ?? 6);
    case 'DATE':
      return formatDate(v as number);
    case 'BYTES':
      return encodeBase64(v as Uint8Array);
    case 'FLOAT': {
      const n = v as number;
      return Number.isFinite(n) ? Number(float32Text(n)) : String(n);
    }
    case 'DOUBLE': {
      const n = v as number;
      return Number.isFinite(n) ? n : String(n);
    }
    default:
      return v as DisplayValue;
  }
}

/**
 * A value as text for tables and CSV (coerceText reads it back); NULL becomes `nullText`
 * ("" for CSV, "NULL" for a table).
 */
export function formatValue(type: DataType, v: Value, nullText = ''): string {
  if (v === null) return nullText;
  switch (type.root) {
    case 'FLOAT':
      return float32Text(v as number);
    case 'DOUBLE':
      return doubleText(v as number);
    case 'TIMESTAMP':
    case 'DATE':
    case 'BYTES':
      return toDisplayValue(type, v) as string;
    default:
      return String(v);
  }
}
