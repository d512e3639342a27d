import { describe, expect, it } from 'vitest';
import { compareKeyTuples, compareValues } from '../../lib/schema/compare.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import type { DataField, DataType, Value } from '../../lib/schema/types.js';
import { rng, testSeed } from '../helpers/random.js';
import { ALL_TYPES, randomValue } from './values-random.js';

function type(text: string): DataType {
  return parseSchemaText(`c ${text}`)[0].type;
}

const sign = (n: number) => Math.sign(n) + 0;

/** An independent reference order for each type (BigInt for decimals, UTF-8 bytes for strings). */
function reference(f: DataField, a: Value, b: Value): number {
  switch (f.type.root) {
    case 'DECIMAL': {
      const scaled = (s: string) => BigInt(s.replace('.', ''));
      const [x, y] = [scaled(a as string), scaled(b as string)];
      return x < y ? -1 : x > y ? 1 : 0;
    }
    case 'STRING':
      return Buffer.compare(Buffer.from(a as string, 'utf8'), Buffer.from(b as string, 'utf8'));
    case 'BYTES':
      return Buffer.compare(a as Uint8Array, b as Uint8Array);
    case 'FLOAT':
    case 'DOUBLE': {
      // Java's Double.compare by sortable bits.
      const key = (v: number) => {
        const view = new DataView(new ArrayBuffer(8));
        view.setFloat64(0, Number.isNaN(v) ? NaN : v);
        const bits = view.getBigInt64(0);
        return bits < 0n ? ~bits : bits | (1n << 63n);
      };
      const [x, y] = [BigInt.asUintN(64, key(a as number)), BigInt.asUintN(64, key(b as number))];
      return x < y ? -1 : x > y ? 1 : 0;
    }
    case 'BOOLEAN':
      return Number(a) - Number(b);
    default:
      return (a as number) < (b as number) ? -1 : (a as number) > (b as number) ? 1 : 0;
  }
}

describe('compareValues', () => {
  it('agrees with an independent reference order on random values of every type', () => {
    const seed = testSeed('schema.compare');
    const r = rng(seed);
    for (let k = 0; k < 400; k++) {
      for (const f of ALL_TYPES) {
        const a = randomValue(r, f);
        const b = r.chance(0.2) ? a : randomValue(r, f);
        expect(sign(compareValues(f.type, a, b)), `${f.type.root} ${String(a)} vs ${String(b)} (seed ${seed})`).toBe(
          sign(reference(f, a, b)),
        );
      }
    }
  });

  it('puts NULL first', () => {
    expect(compareValues(type('INT'), null, -5)).toBeLessThan(0);
    expect(compareValues(type('INT'), 3, null)).toBeGreaterThan(0);
    expect(compareValues(type('INT'), null, null)).toBe(0);
  });

  it('orders floats like Java: -0 before +0, NaN last and equal to itself', () => {
    const d = type('DOUBLE');
    expect(compareValues(d, -0, 0)).toBeLessThan(0);
    expect(compareValues(d, NaN, Infinity)).toBeGreaterThan(0);
    expect(compareValues(d, NaN, NaN)).toBe(0);
  });

  it('compares decimals exactly, beyond double precision', () => {
    const t = type('DECIMAL(38,0)');
    expect(
      compareValues(t, '12345678901234567890123456789012345678', '12345678901234567890123456789012345677'),
    ).toBeGreaterThan(0);
    expect(compareValues(type('DECIMAL(10,2)'), '-1.50', '-1.05')).toBeLessThan(0);
    expect(compareValues(type('DECIMAL(10,2)'), '0.00', '0.00')).toBe(0);
  });

  it('orders strings by code point, so astral characters sort after U+FFFF', () => {
    expect(compareValues(type('STRING'), '😀', '\uffff')).toBeGreaterThan(0);
    expect(compareValues(type('STRING'), 'ab', 'abc')).toBeLessThan(0);
  });
});

describe('compareKeyTuples', () => {
  it('compares column by column', () => {
    const types = [type('STRING'), type('BIGINT')];
    expect(compareKeyTuples(types, ['eu', 2n], ['eu', 10n])).toBeLessThan(0);
    expect(compareKeyTuples(types, ['us', 1n], ['eu', 10n])).toBeGreaterThan(0);
    expect(compareKeyTuples(types, ['eu', 1n], ['eu', 1n])).toBe(0);
    expect(compareKeyTuples(types, ['eu'], ['eu', 1n])).toBeLessThan(0);
  });
});
