/**
 * Column values from user input: JSON values (coerceValue, validateRecord) and CSV text
 * (coerceText), checked against the column type and turned into the JS value types.ts documents.
 * Nothing is converted silently across kinds (a number is not a STRING); every error is a
 * RecordValidationError naming the line, the field, the value and the expected type.
 */
import { RecordValidationError } from '../errors.js';
import { canonicalDecimal } from './decimal-text.js';
import { MAX_DAY, MIN_DAY, parseDateText, parseTimestampText, timestampRange } from './temporal.js';
import { formatType } from './type-text.js';
import type { DataField, DataType, Row, Value } from './types.js';
import { decodeBase64 } from './value-codec.js';

export { compareKeyTuples } from './compare.js';
export { formatValue, fromJsonValue, toDisplayValue, toJsonValue } from './value-codec.js';

const INT_RANGES: Record<string, [number, number]> = {
  TINYINT: [-128, 127],
  SMALLINT: [-32768, 32767],
  INT: [-2147483648, 2147483647],
};
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const INTEGER_TEXT = /^[+-]?\d+$/;
const FLOAT_TEXT = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

/** What went wrong with one value; turned into a RecordValidationError with the context. */
class Problem {
  constructor(
    readonly why: string,
    readonly expected?: string,
  ) {}
}

/** Expected-value descriptions, per type root, for error messages. */
function expectation(t: DataType): string {
  switch (t.root) {
    case 'TINYINT':
    case 'SMALLINT':
    case 'INT': {
      const [lo, hi] = INT_RANGES[t.root];
      return `an integer from ${lo} to ${hi}`;
    }
    case 'BIGINT':
      return 'an integer (as a JSON number up to 2^53-1, or as a string of digits for the full 64-bit range)';
    case 'FLOAT':
    case 'DOUBLE':
      return 'a number (or "NaN", "Infinity", "-Infinity")';
    case 'DECIMAL':
      return `a decimal with at most ${t.precision! - t.scale!} integer digits and ${t.scale} decimals, as a number or string`;
    case 'STRING':
      return 'a string';
    case 'BOOLEAN':
      return 'true or false';
    case 'BYTES':
      return 'base64 text';
    case 'DATE':
      return 'a date "YYYY-MM-DD" (or days since 1970-01-01)';
    case 'TIMESTAMP':
      return `an ISO-8601 timestamp such as "2024-01-02T03:04:05.123Z" (or ${t.precision === 3 ? 'milliseconds' : 'microseconds'} since the epoch)`;
  }
}

function show(raw: unknown): string {
  let s: string;
  if (typeof raw === 'bigint') s = `${raw}`;
  else if (raw instanceof Uint8Array) s = `<${raw.length} bytes>`;
  else if (raw === undefined) s = 'nothing';
  else s = JSON.stringify(raw) ?? String(raw);
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

function fail(field: DataField, raw: unknown, line: number | undefined, p: Problem): RecordValidationError {
  const where = `${line !== undefined ? `line ${line}, ` : ''}field "${field.name}" (${formatType(field.type)})`;
  return new RecordValidationError(
    `${where}: ${show(raw)} ${p.why}; expected ${p.expected ?? expectation(field.type)}`,
    line,
    field.name,
  );
}

/** The value of `field` from a JSON-parsed `raw` (null/undefined = NULL); throws RecordValidationError. */
export function coerceValue(field: DataField, raw: unknown, line?: number): Value {
  if (raw === null || raw === undefined) {
    if (field.type.nullable) return null;
    throw fail(
      field,
      raw,
      line,
      new Problem(
        raw === null ? 'is not allowed: the column is NOT NULL' : 'is given: the column is NOT NULL',
        'a value',
      ),
    );
  }
  const v = fromJson(field.type, raw);
  if (v instanceof Problem) throw fail(field, raw, line, v);
  return v;
}

/**
 * The value of `field` from CSV text. Empty text is NULL (CSV cannot tell "" from nothing unless
 * the caller knows the field was quoted: pass `quoted` to read it as an empty STRING or BYTES).
 */
export function coerceText(field: DataField, text: string, line?: number, opts: { quoted?: boolean } = {}): Value {
  const emptyValue = field.type.root === 'STRING' || field.type.root === 'BYTES';
  if (text === '' && !(opts.quoted && emptyValue)) return coerceValue(field, null, line);
  const t = field.type;
  let v: Value | Problem;
  switch (t.root) {
    case 'STRING':
      v = text;
      break;
    case 'BOOLEAN': {
      const b = text.trim().toLowerCase();
      v =
        b === 'true' || b === '1'
          ? true
          : b === 'false' || b === '0'
            ? false
            : new Problem('is not a boolean', 'true or false');
      break;
    }
    default:
      v = fromString(t, text.trim());
  }
  if (v instanceof Problem) throw fail(field, text, line, v);
  return v;
}

function fromJson(t: DataType, raw: unknown): Value | Problem {
  if (typeof raw === 'string') {
    if (t.root === 'STRING') return raw;
    if (t.root === 'BOOLEAN') return new Problem('is a string');
    return fromString(t, raw.trim());
  }
  switch (t.root) {
    case 'TINYINT':
    case 'SMALLINT':
    case 'INT':
      if (typeof raw === 'number') return Number.isInteger(raw) ? checkInt(t, raw) : new Problem('is not an integer');
      if (typeof raw === 'bigint') return checkInt(t, Number(raw));
      break;
    case 'BIGINT':
      if (typeof raw === 'number') {
        if (!Number.isInteger(raw)) return new Problem('is not an integer');
        if (!Number.isSafeInteger(raw))
          return new Problem('is beyond 2^53-1, where JSON numbers lose digits; write it as a string of digits');
        return BigInt(raw);
      }
      if (typeof raw === 'bigint')
        return raw >= INT64_MIN && raw <= INT64_MAX ? raw : new Problem('is out of the 64-bit range');
      break;
    case 'FLOAT':
    case 'DOUBLE':
      if (typeof raw === 'number') return checkFloat(t, raw);
      break;
    case 'DECIMAL':
      if (typeof raw === 'number')
        return Number.isFinite(raw) ? decimal(t, String(raw)) : new Problem('is not a finite number');
      break;
    case 'BOOLEAN':
      if (typeof raw === 'boolean') return raw;
      break;
    case 'BYTES':
      if (raw instanceof Uint8Array) return raw;
      break;
    case 'DATE':
      if (typeof raw === 'number')
        return Number.isInteger(raw) ? checkDays(raw) : new Problem('is not a whole number of days');
      break;
    case 'TIMESTAMP':
      if (typeof raw === 'number') {
        return Number.isSafeInteger(raw)
          ? checkTimestamp(t, BigInt(raw))
          : new Problem('is not a whole number within 2^53-1; write it as a string');
      }
      if (typeof raw === 'bigint') return checkTimestamp(t, raw);
      break;
    case 'STRING':
      return new Problem(
        `is a ${typeof raw === 'object' ? (Array.isArray(raw) ? 'array' : 'object') : typeof raw}, not a string (numbers and booleans are not converted); quote it`,
      );
  }
  return new Problem(`has the wrong kind of value (${Array.isArray(raw) ? 'array' : typeof raw})`);
}

/** Parses trimmed text as a value of any type but STRING and BOOLEAN. */
function fromString(t: DataType, s: string): Value | Problem {
  switch (t.root) {
    case 'TINYINT':
    case 'SMALLINT':
    case 'INT':
      return INTEGER_TEXT.test(s) ? checkInt(t, Number(s)) : new Problem('is not an integer');
    case 'BIGINT': {
      if (!INTEGER_TEXT.test(s)) return new Problem('is not an integer');
      const v = BigInt(s);
      return v >= INT64_MIN && v <= INT64_MAX ? v : new Problem('is out of the 64-bit range');
    }
    case 'FLOAT':
    case 'DOUBLE': {
      const special = SPECIAL_FLOATS[s.toLowerCase()];
      if (special !== undefined) return special;
      if (!FLOAT_TEXT.test(s)) return new Problem('is not a number');
      const n = Number(s);
      return Number.isFinite(n) ? checkFloat(t, n) : new Problem(`is out of range for ${t.root}`);
    }
    case 'DECIMAL':
      return decimal(t, s);
    case 'BYTES': {
      const bytes = decodeBase64(s);
      return bytes ?? new Problem('is not valid base64');
    }
    case 'DATE': {
      if (INTEGER_TEXT.test(s)) return checkDays(Number(s));
      const days = parseDateText(s);
      return days === undefined ? new Problem('is not a valid date') : checkDays(days);
    }
    case 'TIMESTAMP': {
      if (INTEGER_TEXT.test(s)) return checkTimestamp(t, BigInt(s));
      const r = parseTimestampText(s, t.precision ?? 6);
      return 'error' in r ? new Problem(r.error) : r.value;
    }
    default:
      return new Problem('cannot be read from text');
  }
}

const SPECIAL_FLOATS: Record<string, number> = {
  nan: NaN,
  infinity: Infinity,
  '+infinity': Infinity,
  '-infinity': -Infinity,
};

function checkInt(t: DataType, n: number): number | Problem {
  const [lo, hi] = INT_RANGES[t.root];
  return n >= lo && n <= hi ? n + 0 : new Problem(`is out of range for ${t.root}`);
}

function checkFloat(t: DataType, n: number): number | Problem {
  if (t.root === 'DOUBLE') return n;
  const f = Math.fround(n);
  // A finite double beyond float32's range would silently become Infinity.
  return Number.isFinite(n) && !Number.isFinite(f) ? new Problem('is out of range for FLOAT (about ±3.4e38)') : f;
}

function decimal(t: DataType, s: string): string | Problem {
  const r = canonicalDecimal(s, t.precision ?? 10, t.scale ?? 0);
  return 'error' in r ? new Problem(r.error) : r.value;
}

function checkDays(d: number): number | Problem {
  return d >= MIN_DAY && d <= MAX_DAY ? d : new Problem('is outside years 0001-9999');
}

function checkTimestamp(t: DataType, v: bigint): bigint | Problem {
  const { min, max } = timestampRange(t.precision ?? 6);
  return v >= min && v <= max ? v : new Problem('is outside years 0001-9999');
}

const namesCache = new WeakMap<DataField[], Set<string>>();

/**
 * A whole JSON record as a Row: every key must be a column (else the error lists the columns),
 * every primary key column must be present, missing nullable columns are NULL, each value is
 * coerced with coerceValue.
 */
export function validateRecord(
  fields: DataField[],
  primaryKeys: string[],
  obj: Record<string, unknown>,
  line?: number,
): Row {
  const at = line !== undefined ? `line ${line}: ` : '';
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) {
    throw new RecordValidationError(
      `${at}expected a JSON object of column values, e.g. {"${fields[0]?.name ?? 'id'}": …}`,
      line,
    );
  }
  let names = namesCache.get(fields);
  if (names === undefined) namesCache.set(fields, (names = new Set(fields.map((f) => f.name))));
  for (const key in obj) {
    if (!names.has(key)) {
      throw new RecordValidationError(
        `${at}unknown column "${key}"; the table's columns are ${[...names].join(', ')}`,
        line,
        key,
      );
    }
  }
  const row: Row = {};
  for (const f of fields) {
    const raw = obj[f.name];
    if (raw === undefined && primaryKeys.includes(f.name)) {
      throw new RecordValidationError(
        `${at}primary key column "${f.name}" is missing; every record needs its whole primary key (${primaryKeys.join(', ')})`,
        line,
        f.name,
      );
    }
    row[f.name] = coerceValue(f, raw, line);
  }
  return row;
}
