import { describe, expect, it } from 'vitest';
import { CorruptMetadataError } from '../../lib/errors.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import type { DataType, Value } from '../../lib/schema/types.js';
import {
  coerceText,
  coerceValue,
  formatValue,
  fromJsonValue,
  toDisplayValue,
  toJsonValue,
} from '../../lib/schema/values.js';
import { rng, testSeed } from '../helpers/random.js';
import { ALL_TYPES, randomValue } from './values-random.js';

function type(text: string): DataType {
  return parseSchemaText(`c ${text}`)[0].type;
}

/** Equality that tells -0 from 0 and NaN equals NaN (Object.is), bytes by content. */
function same(a: Value, b: Value): boolean {
  if (a instanceof Uint8Array && b instanceof Uint8Array) return a.length === b.length && a.every((x, i) => x === b[i]);
  return Object.is(a, b);
}

describe('value codecs round-trip', () => {
  it('JSON metadata, display and text forms read back to the same value, for random values of every type', () => {
    const seed = testSeed('schema.value-codec');
    const r = rng(seed);
    for (let k = 0; k < 300; k++) {
      for (const f of ALL_TYPES) {
        // Prepare
        const v = randomValue(r, f);
        const label = `${f.type.root} ${String(v)} (seed ${seed})`;

        // Act
        const viaJson = fromJsonValue(f.type, JSON.parse(JSON.stringify(toJsonValue(f.type, v))));
        const viaText = coerceText(f, formatValue(f.type, v), 1, { quoted: true });
        const viaDisplay = coerceValue(f, JSON.parse(JSON.stringify(toDisplayValue(f.type, v))));

        // Assess
        expect(same(viaJson, v), `json ${label}`).toBe(true);
        expect(same(viaText, v), `text ${label}`).toBe(true);
        // JSON numbers cannot carry -0: display drops the sign of a float zero, nothing else.
        const displaySame = same(viaDisplay, v) || (Object.is(v, -0) && viaDisplay === 0);
        expect(displaySame, `display ${label}`).toBe(true);
      }
    }
  });

  it('keeps NULL as null in every form', () => {
    for (const f of ALL_TYPES) {
      expect(toJsonValue(f.type, null)).toBeNull();
      expect(fromJsonValue(f.type, null)).toBeNull();
      expect(toDisplayValue(f.type, null)).toBeNull();
      expect(formatValue(f.type, null)).toBe('');
      expect(formatValue(f.type, null, 'NULL')).toBe('NULL');
    }
  });
});

describe('toJsonValue', () => {
  it('writes exact JSON-safe values', () => {
    expect(toJsonValue(type('BIGINT'), 9223372036854775807n)).toBe('9223372036854775807');
    expect(toJsonValue(type('TIMESTAMP(6)'), 1704067200123456n)).toBe('1704067200123456');
    expect(toJsonValue(type('DECIMAL(10,2)'), '12.50')).toBe('12.50');
    expect(toJsonValue(type('BYTES'), new Uint8Array([0, 255]))).toBe('AP8=');
    expect(toJsonValue(type('DATE'), 19723)).toBe(19723);
    expect(toJsonValue(type('DOUBLE'), NaN)).toBe('NaN');
    expect(toJsonValue(type('DOUBLE'), -0)).toBe('-0');
    expect(toJsonValue(type('DOUBLE'), 1.5)).toBe(1.5);
  });

  it('refuses metadata of the wrong shape', () => {
    expect(() => fromJsonValue(type('BIGINT'), 12)).toThrow(CorruptMetadataError);
    expect(() => fromJsonValue(type('INT'), '12')).toThrow(/not a valid INT/);
    expect(() => fromJsonValue(type('BYTES'), '**')).toThrow(CorruptMetadataError);
  });
});

describe('toDisplayValue', () => {
  it('shows values the way users read them', () => {
    expect(toDisplayValue(type('BIGINT'), 9007199254740991n)).toBe(9007199254740991);
    expect(toDisplayValue(type('BIGINT'), 9007199254740992n)).toBe('9007199254740992');
    expect(toDisplayValue(type('BIGINT'), -9007199254740992n)).toBe('-9007199254740992');
    expect(toDisplayValue(type('DATE'), 19723)).toBe('2024-01-01');
    expect(toDisplayValue(type('DATE'), -1)).toBe('1969-12-31');
    expect(toDisplayValue(type('TIMESTAMP(3)'), 1704067200123n)).toBe('2024-01-01T00:00:00.123Z');
    expect(toDisplayValue(type('TIMESTAMP(6)'), 1704067200123456n)).toBe('2024-01-01T00:00:00.123456Z');
    expect(toDisplayValue(type('TIMESTAMP(6)'), -1n)).toBe('1969-12-31T23:59:59.999999Z');
    expect(toDisplayValue(type('TIMESTAMP(3)'), -62135596800000n)).toBe('0001-01-01T00:00:00.000Z');
    expect(toDisplayValue(type('DECIMAL(10,2)'), '-0.50')).toBe('-0.50');
    expect(toDisplayValue(type('BYTES'), new Uint8Array([104, 105]))).toBe('aGk=');
    expect(toDisplayValue(type('FLOAT'), Math.fround(0.1))).toBe(0.1);
    expect(toDisplayValue(type('DOUBLE'), Infinity)).toBe('Infinity');
    expect(toDisplayValue(type('BOOLEAN'), true)).toBe(true);
  });
});

describe('formatValue', () => {
  it('writes text for tables and CSV', () => {
    expect(formatValue(type('FLOAT'), Math.fround(3.14))).toBe('3.14');
    expect(formatValue(type('DOUBLE'), -0)).toBe('-0');
    expect(formatValue(type('BIGINT'), -5n)).toBe('-5');
    expect(formatValue(type('TIMESTAMP(3)'), 0n)).toBe('1970-01-01T00:00:00.000Z');
    expect(formatValue(type('STRING'), 'a,b')).toBe('a,b');
  });
});
