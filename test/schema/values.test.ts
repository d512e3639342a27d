import { describe, expect, it } from 'vitest';
import { RecordValidationError } from '../../lib/errors.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import type { DataField } from '../../lib/schema/types.js';
import { coerceText, coerceValue, validateRecord } from '../../lib/schema/values.js';

/** A nullable column of the given type text, e.g. field('DECIMAL(5,2)'). */
function field(type: string, name = 'c'): DataField {
  return parseSchemaText(`${name} ${type}`)[0];
}

function rejection(f: () => unknown): RecordValidationError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(RecordValidationError);
    return e as RecordValidationError;
  }
  throw new Error('expected a RecordValidationError');
}

describe('coerceValue: integers', () => {
  it.each([
    ['TINYINT', -128, 127],
    ['SMALLINT', -32768, 32767],
    ['INT', -2147483648, 2147483647],
  ])('%s accepts its range and refuses one beyond', (type, lo, hi) => {
    const f = field(type);
    expect(coerceValue(f, lo)).toBe(lo);
    expect(coerceValue(f, hi)).toBe(hi);
    expect(coerceValue(f, String(hi))).toBe(hi);
    expect(rejection(() => coerceValue(f, hi + 1)).message).toMatch(
      new RegExp(`out of range for ${type}; expected an integer from ${lo} to ${hi}`),
    );
    expect(rejection(() => coerceValue(f, lo - 1)).message).toMatch(/out of range/);
  });

  it('refuses fractions, booleans and text that is not an integer', () => {
    expect(rejection(() => coerceValue(field('INT'), 1.5)).message).toMatch(/1\.5 is not an integer/);
    expect(rejection(() => coerceValue(field('INT'), true)).message).toMatch(/wrong kind of value \(boolean\)/);
    expect(rejection(() => coerceValue(field('INT'), '12abc')).message).toMatch(/"12abc" is not an integer/);
  });

  it('BIGINT takes safe numbers and integer strings over the whole int64 range', () => {
    const f = field('BIGINT');
    expect(coerceValue(f, 42)).toBe(42n);
    expect(coerceValue(f, -9007199254740991)).toBe(-9007199254740991n);
    expect(coerceValue(f, '9223372036854775807')).toBe(9223372036854775807n);
    expect(coerceValue(f, '-9223372036854775808')).toBe(-9223372036854775808n);
    expect(coerceValue(f, 5n)).toBe(5n);
    expect(rejection(() => coerceValue(f, '9223372036854775808')).message).toMatch(/out of the 64-bit range/);
    expect(rejection(() => coerceValue(f, 2 ** 60)).message).toMatch(/beyond 2\^53-1.*write it as a string/);
  });
});

describe('coerceValue: floats and decimals', () => {
  it('FLOAT and DOUBLE take numbers, numeric strings and the special values', () => {
    expect(coerceValue(field('DOUBLE'), 0.1)).toBe(0.1);
    expect(coerceValue(field('DOUBLE'), '1e-3')).toBe(0.001);
    expect(coerceValue(field('DOUBLE'), 'NaN')).toBeNaN();
    expect(coerceValue(field('DOUBLE'), '-Infinity')).toBe(-Infinity);
    expect(coerceValue(field('FLOAT'), 0.1)).toBe(Math.fround(0.1));
    expect(coerceValue(field('FLOAT'), 'Infinity')).toBe(Infinity);
  });

  it('refuses floats out of range and text that is not a number', () => {
    expect(rejection(() => coerceValue(field('FLOAT'), 1e39)).message).toMatch(/out of range for FLOAT/);
    expect(rejection(() => coerceValue(field('DOUBLE'), '1e400')).message).toMatch(/out of range for DOUBLE/);
    expect(rejection(() => coerceValue(field('DOUBLE'), 'one')).message).toMatch(/"one" is not a number/);
  });

  it.each([
    ['DECIMAL(10,2)', 12.5, '12.50'],
    ['DECIMAL(10,2)', '-0.5', '-0.50'],
    ['DECIMAL(10,2)', '007.10', '7.10'],
    ['DECIMAL(10,2)', '-0.00', '0.00'],
    ['DECIMAL(10,2)', '1.5e2', '150.00'],
    ['DECIMAL(10,2)', '12.3400', '12.34'],
    ['DECIMAL(5,0)', 99999, '99999'],
    ['DECIMAL(38,0)', '12345678901234567890123456789012345678', '12345678901234567890123456789012345678'],
    ['DECIMAL(3,3)', '.125', '0.125'],
    ['DECIMAL(10,4)', 1e-4, '0.0001'],
  ])('%s reads %j as canonical %s', (type, raw, text) => {
    expect(coerceValue(field(type), raw)).toBe(text);
  });

  it.each([
    ['DECIMAL(10,2)', '1.234', /more than 2 decimals for DECIMAL\(10,2\); round it first/],
    ['DECIMAL(5,2)', 1000, /does not fit DECIMAL\(5,2\): at most 3 digits before the point/],
    ['DECIMAL(10,2)', 'ten', /is not a decimal number/],
    ['DECIMAL(10,2)', true, /wrong kind of value/],
  ])('%s refuses %j', (type, raw, message) => {
    expect(rejection(() => coerceValue(field(type), raw)).message).toMatch(message);
  });
});

describe('coerceValue: strings, booleans, bytes', () => {
  it('STRING takes strings only; numbers and booleans are not converted', () => {
    expect(coerceValue(field('STRING'), ' padded ')).toBe(' padded ');
    expect(rejection(() => coerceValue(field('STRING'), 42)).message).toMatch(/42 is a number, not a string.*quote it/);
    expect(rejection(() => coerceValue(field('STRING'), false)).message).toMatch(/is a boolean, not a string/);
  });

  it('BOOLEAN takes booleans only', () => {
    expect(coerceValue(field('BOOLEAN'), false)).toBe(false);
    expect(rejection(() => coerceValue(field('BOOLEAN'), 'true')).message).toMatch(
      /"true" is a string; expected true or false/,
    );
    expect(rejection(() => coerceValue(field('BOOLEAN'), 1)).message).toMatch(/wrong kind/);
  });

  it('BYTES takes base64', () => {
    expect(coerceValue(field('BYTES'), 'AP8=')).toEqual(new Uint8Array([0, 255]));
    expect(coerceValue(field('BYTES'), 'AP8')).toEqual(new Uint8Array([0, 255]));
    expect(coerceValue(field('BYTES'), '')).toEqual(new Uint8Array(0));
    expect(rejection(() => coerceValue(field('BYTES'), 'not base64!')).message).toMatch(
      /not valid base64; expected base64 text/,
    );
  });
});

describe('coerceValue: dates and timestamps', () => {
  it('DATE takes YYYY-MM-DD or integer days', () => {
    expect(coerceValue(field('DATE'), '1970-01-01')).toBe(0);
    expect(coerceValue(field('DATE'), '2024-02-29')).toBe(19782);
    expect(coerceValue(field('DATE'), '1969-12-31')).toBe(-1);
    expect(coerceValue(field('DATE'), 19723)).toBe(19723);
    expect(rejection(() => coerceValue(field('DATE'), '2023-02-29')).message).toMatch(
      /"2023-02-29" is not a valid date/,
    );
    expect(rejection(() => coerceValue(field('DATE'), '01/02/2024')).message).toMatch(/expected a date "YYYY-MM-DD"/);
    expect(rejection(() => coerceValue(field('DATE'), 10_000_000)).message).toMatch(/outside years 0001-9999/);
  });

  it.each([
    ['TIMESTAMP(3)', '2024-01-01T00:00:00Z', 1704067200000n],
    ['TIMESTAMP(3)', '2024-01-01T00:00:00', 1704067200000n],
    ['TIMESTAMP(3)', '2024-01-01 02:00:00.5+02:00', 1704067200500n],
    ['TIMESTAMP(3)', '2023-12-31T19:00:00-0500', 1704067200000n],
    ['TIMESTAMP(3)', '2024-01-01', 1704067200000n],
    ['TIMESTAMP(3)', '2024-01-01T00:00:00.123000Z', 1704067200123n],
    ['TIMESTAMP(6)', '2024-01-01T00:00:00.123456Z', 1704067200123456n],
    ['TIMESTAMP(6)', '1969-12-31T23:59:59.999999Z', -1n],
    ['TIMESTAMP(3)', 1704067200000, 1704067200000n],
    ['TIMESTAMP(6)', '1704067200000000', 1704067200000000n],
  ])('%s reads %j', (type, raw, value) => {
    expect(coerceValue(field(type), raw)).toBe(value);
  });

  it('refuses timestamps that need truncation, are malformed or out of range', () => {
    expect(rejection(() => coerceValue(field('TIMESTAMP(3)'), '2024-01-01T00:00:00.1234Z')).message).toMatch(
      /more than 3 fractional digits, but TIMESTAMP\(3\) keeps milliseconds/,
    );
    expect(rejection(() => coerceValue(field('TIMESTAMP(3)'), '2024-13-01T00:00:00Z')).message).toMatch(
      /impossible date/,
    );
    expect(rejection(() => coerceValue(field('TIMESTAMP(3)'), '2024-01-01T24:00:00Z')).message).toMatch(
      /impossible time/,
    );
    expect(rejection(() => coerceValue(field('TIMESTAMP(3)'), 'yesterday')).message).toMatch(
      /not an ISO-8601 timestamp/,
    );
    expect(rejection(() => coerceValue(field('TIMESTAMP(3)'), 1.5)).message).toMatch(/not a whole number/);
    expect(rejection(() => coerceValue(field('TIMESTAMP(6)'), '9223372036854775807')).message).toMatch(
      /outside years 0001-9999/,
    );
  });
});

describe('coerceValue: nulls and error context', () => {
  it('turns null and undefined into NULL for nullable columns', () => {
    expect(coerceValue(field('INT'), null)).toBeNull();
    expect(coerceValue(field('INT'), undefined)).toBeNull();
  });

  it('refuses NULL in a NOT NULL column', () => {
    const e = rejection(() => coerceValue(field('INT NOT NULL', 'qty'), null, 3));
    expect(e.message).toBe(
      'line 3, field "qty" (INT NOT NULL): null is not allowed: the column is NOT NULL; expected a value',
    );
  });

  it('names the line, the field, the value and the expected type', () => {
    const e = rejection(() => coerceValue(field('TINYINT', 'level'), 300, 17));
    expect(e.line).toBe(17);
    expect(e.field).toBe('level');
    expect(e.message).toBe(
      'line 17, field "level" (TINYINT): 300 is out of range for TINYINT; expected an integer from -128 to 127',
    );
  });
});

describe('coerceText', () => {
  it('reads CSV text per type, empty as NULL', () => {
    expect(coerceText(field('INT'), ' 42 ')).toBe(42);
    expect(coerceText(field('BIGINT'), '-7')).toBe(-7n);
    expect(coerceText(field('DOUBLE'), 'NaN')).toBeNaN();
    expect(coerceText(field('DECIMAL(4,1)'), '3.25e1')).toBe('32.5');
    expect(coerceText(field('STRING'), ' as is ')).toBe(' as is ');
    expect(coerceText(field('BOOLEAN'), 'TRUE')).toBe(true);
    expect(coerceText(field('BOOLEAN'), '0')).toBe(false);
    expect(coerceText(field('DATE'), '2024-01-01')).toBe(19723);
    expect(coerceText(field('TIMESTAMP(3)'), '2024-01-01T00:00:00Z')).toBe(1704067200000n);
    expect(coerceText(field('BYTES'), 'AQI=')).toEqual(new Uint8Array([1, 2]));
    expect(coerceText(field('STRING'), '')).toBeNull();
    expect(coerceText(field('STRING'), '', 1, { quoted: true })).toBe('');
    expect(coerceText(field('INT'), '')).toBeNull();
  });

  it('refuses bad text with the line and field', () => {
    const e = rejection(() => coerceText(field('BOOLEAN', 'ok'), 'maybe', 4));
    expect(e.message).toBe('line 4, field "ok" (BOOLEAN): "maybe" is not a boolean; expected true or false');
    expect(rejection(() => coerceText(field('INT NOT NULL', 'n'), '', 2)).message).toMatch(
      /line 2, field "n".*NOT NULL/,
    );
  });
});

describe('validateRecord', () => {
  const fields = parseSchemaText('id BIGINT NOT NULL, name STRING, qty INT NOT NULL');

  it('coerces every column and fills missing nullable ones with NULL', () => {
    expect(validateRecord(fields, ['id'], { id: '7', qty: 2 })).toEqual({ id: 7n, name: null, qty: 2 });
  });

  it('names an unknown column and lists the columns', () => {
    const e = rejection(() => validateRecord(fields, ['id'], { id: 1, qty: 1, colour: 'red' }, 5));
    expect(e.message).toBe('line 5: unknown column "colour"; the table\'s columns are id, name, qty');
    expect(e.field).toBe('colour');
  });

  it('requires the primary key and NOT NULL columns', () => {
    expect(rejection(() => validateRecord(fields, ['id'], { qty: 1 }, 2)).message).toMatch(
      /line 2: primary key column "id" is missing/,
    );
    expect(rejection(() => validateRecord(fields, ['id'], { id: 1 }, 2)).message).toMatch(
      /field "qty" \(INT NOT NULL\): nothing is given/,
    );
  });

  it('refuses a record that is not an object', () => {
    expect(
      rejection(() => validateRecord(fields, ['id'], [1, 2] as unknown as Record<string, unknown>, 9)).message,
    ).toMatch(/line 9: expected a JSON object/);
  });
});
