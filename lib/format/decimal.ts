/**
 * DECIMAL(p,s) values between their JS form (canonical decimal text, e.g. "-12.50") and Arrow's
 * Decimal128 storage: a 128-bit two's-complement unscaled integer, little-endian, as four 32-bit
 * words per value.
 */
import { SchemaMismatchError } from '../errors.js';

const TWO_32 = 4294967296;
const DECIMAL_TEXT = /^([+-])?(\d*)(?:\.(\d*))?$/;
// Unscaled integers up to 15 digits are exact as doubles, so they skip BigInt entirely.
const NUMBER_SAFE_DIGITS = 15;

/**
 * Writes the unscaled 128-bit integer of `text` at words [at, at+4) of `out`. Accepts fewer
 * decimals than `scale` (padded) and extra trailing zeros; throws SchemaMismatchError naming
 * `column` when the text is not a decimal, needs rounding, or exceeds the precision.
 */
export function writeDecimal(
  text: string,
  precision: number,
  scale: number,
  out: Int32Array,
  at: number,
  column: string,
): void {
  const m = DECIMAL_TEXT.exec(text);
  if (m === null || (m[2] === '' && (m[3] === undefined || m[3] === ''))) {
    throw new SchemaMismatchError(`column ${column}: "${text}" is not a decimal number; write it like "12.50"`, column);
  }
  const negative = m[1] === '-';
  let frac = m[3] ?? '';
  if (frac.length > scale) {
    // Extra digits are fine only when they are zeros: anything else would need rounding.
    if (!/^0*$/.test(frac.slice(scale))) {
      throw new SchemaMismatchError(
        `column ${column}: "${text}" has more than ${scale} decimals for DECIMAL(${precision},${scale}); round it first`,
        column,
      );
    }
    frac = frac.slice(0, scale);
  }
  const digits = (m[2] + frac.padEnd(scale, '0')).replace(/^0+/, '');
  if (digits.length > precision) {
    throw new SchemaMismatchError(
      `column ${column}: "${text}" does not fit DECIMAL(${precision},${scale}) (at most ${precision - scale} integer digits)`,
      column,
    );
  }
  if (digits.length <= NUMBER_SAFE_DIGITS) {
    const n = digits === '' ? 0 : Number(digits);
    out[at] = (n % TWO_32) | 0;
    out[at + 1] = Math.floor(n / TWO_32) | 0;
    out[at + 2] = 0;
    out[at + 3] = 0;
    if (negative && n !== 0) negate128(out, at);
    return;
  }
  let v = BigInt(digits);
  if (negative) v = -v;
  const u = BigInt.asUintN(128, v);
  out[at] = Number(u & 0xffffffffn) | 0;
  out[at + 1] = Number((u >> 32n) & 0xffffffffn) | 0;
  out[at + 2] = Number((u >> 64n) & 0xffffffffn) | 0;
  out[at + 3] = Number(u >> 96n) | 0;
}

/** Two's-complement negation of the 128-bit integer at words [at, at+4), in place. */
function negate128(w: Int32Array, at: number): void {
  let carry = 1;
  for (let k = 0; k < 4; k++) {
    const x = (~w[at + k] >>> 0) + carry;
    w[at + k] = x | 0;
    carry = x > 0xffffffff ? 1 : 0;
  }
}

/** The canonical text (exactly `scale` decimals) of the Decimal128 value at words [at, at+4). */
export function readDecimal(words: Int32Array, at: number, scale: number): string {
  const w0 = words[at],
    w1 = words[at + 1],
    w2 = words[at + 2],
    w3 = words[at + 3];
  let negative: boolean;
  let digits: string;
  const sign = w1 >> 31;
  // Fast path: the value is a sign-extended 54-bit integer, exact as a double.
  if (w3 === sign && w2 === sign && w1 >= -0x200000 && w1 < 0x200000) {
    const n = w1 * TWO_32 + (w0 >>> 0);
    negative = n < 0;
    digits = String(negative ? -n : n);
  } else {
    const u = (BigInt(w3 >>> 0) << 96n) | (BigInt(w2 >>> 0) << 64n) | (BigInt(w1 >>> 0) << 32n) | BigInt(w0 >>> 0);
    const v = BigInt.asIntN(128, u);
    negative = v < 0n;
    digits = String(negative ? -v : v);
  }
  if (scale > 0) {
    digits = digits.padStart(scale + 1, '0');
    digits = `${digits.slice(0, digits.length - scale)}.${digits.slice(digits.length - scale)}`;
  }
  return negative ? `-${digits}` : digits;
}
