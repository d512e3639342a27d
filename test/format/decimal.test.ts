import { describe, expect, it } from 'vitest';
import { SchemaMismatchError } from '../../lib/errors.js';
import { readDecimal, writeDecimal } from '../../lib/format/decimal.js';
import { rng, testSeed } from '../helpers/random.js';

/** The unscaled value a canonical text stands for, by BigInt arithmetic (the reference). */
function unscaled(text: string, scale: number): bigint {
  const neg = text.startsWith('-');
  const [int, frac = ''] = text.replace(/^[-+]/, '').split('.');
  const v = BigInt((int || '0') + frac.padEnd(scale, '0'));
  return neg ? -v : v;
}

function words(w: Int32Array): bigint {
  return BigInt.asIntN(
    128,
    [...w].reduce((acc, x, k) => acc | (BigInt(x >>> 0) << BigInt(32 * k)), 0n),
  );
}

describe('decimal', () => {
  it('round-trips random values of every precision through 128-bit words', () => {
    const r = rng(testSeed('format.decimal'));
    for (let k = 0; k < 2000; k++) {
      const precision = r.int(1, 38);
      const scale = r.int(0, precision);
      let digits = '';
      for (let i = r.int(1, precision); i > 0; i--) digits += String(r.int(0, 9));
      digits = digits.padStart(scale + 1, '0');
      let text = scale > 0 ? `${digits.slice(0, -scale)}.${digits.slice(-scale)}` : digits;
      text = text.replace(/^0+(?=\d)/, '');
      if (r.chance(0.5) && /[1-9]/.test(text)) text = `-${text}`;
      const w = new Int32Array(4);
      writeDecimal(text, precision, scale, w, 0, 'd');
      expect(words(w), text).toBe(unscaled(text, scale));
      expect(readDecimal(w, 0, scale)).toBe(text);
    }
  });

  it('normalises padding and refuses rounding and overflow', () => {
    const w = new Int32Array(4);
    writeDecimal('+1.5000', 5, 2, w, 0, 'd');
    expect(readDecimal(w, 0, 2)).toBe('1.50');
    writeDecimal('-0', 5, 2, w, 0, 'd');
    expect(readDecimal(w, 0, 2)).toBe('0.00');
    expect(() => writeDecimal('1.505', 5, 2, w, 0, 'd')).toThrow(SchemaMismatchError);
    expect(() => writeDecimal('1000', 5, 2, w, 0, 'd')).toThrow(/DECIMAL\(5,2\)/);
    expect(() => writeDecimal('1e5', 5, 2, w, 0, 'd')).toThrow(SchemaMismatchError);
    expect(() => writeDecimal('.', 5, 2, w, 0, 'd')).toThrow(SchemaMismatchError);
  });
});
