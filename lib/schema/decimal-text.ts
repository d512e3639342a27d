/**
 * DECIMAL(p,s) values as canonical text: an optional "-", the integer digits without leading
 * zeros (at least "0"), and exactly `s` decimals ("12.50", "-0.05", "7" for scale 0). Canonical
 * text makes equal values equal strings; comparison is exact, digit by digit.
 */
import { InvalidArgumentError } from '../errors.js';

const DECIMAL_INPUT = /^([+-])?(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d{1,4}))?$/;
/** Exponents beyond this cannot fit DECIMAL(38,…) anyway; refusing them bounds the work. */
const MAX_EXPONENT = 80;

/**
 * The canonical text of `text` (plain or with an exponent, e.g. "1.5e3") as DECIMAL(precision,
 * scale), or an error text: extra decimals are accepted only when they are zeros (no rounding).
 */
export function canonicalDecimal(
  text: string,
  precision: number,
  scale: number,
): { value: string } | { error: string } {
  const m = DECIMAL_INPUT.exec(text);
  if (m === null || (m[2] === '' && (m[3] === undefined || m[3] === '')))
    return { error: 'is not a decimal number such as "12.50"' };
  const exp = m[4] === undefined ? 0 : Number(m[4]);
  if (Math.abs(exp) > MAX_EXPONENT) return { error: `has an exponent too large for DECIMAL(${precision},${scale})` };
  let int = m[2];
  let frac = m[3] ?? '';
  if (exp > 0) {
    const moved = frac.slice(0, exp).padEnd(exp, '0');
    int += moved;
    frac = frac.slice(exp);
  } else if (exp < 0) {
    const padded = int.padStart(-exp, '0');
    frac = padded.slice(padded.length + exp) + frac;
    int = padded.slice(0, padded.length + exp);
  }
  if (frac.length > scale) {
    if (!/^0*$/.test(frac.slice(scale))) {
      return { error: `has more than ${scale} decimals for DECIMAL(${precision},${scale}); round it first` };
    }
    frac = frac.slice(0, scale);
  }
  frac = frac.padEnd(scale, '0');
  int = int.replace(/^0+/, '');
  if (int.length > precision - scale) {
    return {
      error: `does not fit DECIMAL(${precision},${scale}): at most ${precision - scale} digits before the point`,
    };
  }
  const zero = int === '' && /^0*$/.test(frac);
  const sign = m[1] === '-' && !zero ? '-' : '';
  return { value: `${sign}${int || '0'}${scale > 0 ? `.${frac}` : ''}` };
}

/** Splits decimal text into sign and magnitude digits (integer without leading zeros, fraction). */
function parts(text: string): { negative: boolean; int: string; frac: string } {
  const negative = text.startsWith('-');
  const body = negative || text.startsWith('+') ? text.slice(1) : text;
  const dot = body.indexOf('.');
  const int = (dot < 0 ? body : body.slice(0, dot)).replace(/^0+/, '');
  const frac = dot < 0 ? '' : body.slice(dot + 1).replace(/0+$/, '');
  return { negative: negative && (int !== '' || frac !== ''), int, frac };
}

/** Exact order of two decimal texts (any scale): negative, zero or positive. */
export function compareDecimalText(a: string, b: string): number {
  if (a === b) return 0;
  const x = parts(a);
  const y = parts(b);
  if (x.negative !== y.negative) return x.negative ? -1 : 1;
  const magnitude = compareMagnitude(x, y);
  return x.negative ? -magnitude : magnitude;
}

function compareMagnitude(x: { int: string; frac: string }, y: { int: string; frac: string }): number {
  if (x.int.length !== y.int.length) return x.int.length < y.int.length ? -1 : 1;
  if (x.int !== y.int) return x.int < y.int ? -1 : 1;
  const n = Math.max(x.frac.length, y.frac.length);
  const fx = x.frac.padEnd(n, '0');
  const fy = y.frac.padEnd(n, '0');
  return fx === fy ? 0 : fx < fy ? -1 : 1;
}

/**
 * The unscaled integer of a decimal at `scale` as decimal text ("12.50" at scale 2 → "1250",
 * "-0.05" → "-5", zero → "0"); used by the bucket hash. Throws InvalidArgumentError when the
 * text has non-zero digits beyond `scale` (it was not coerced to the column's type).
 */
export function unscaledDecimalText(text: string, scale: number): string {
  const { negative, int, frac } = parts(text);
  if (frac.length > scale || !/^\d*$/.test(int + frac)) {
    throw new InvalidArgumentError(
      `decimal value "${text}" is not a DECIMAL with scale ${scale}; coerce it with lib/schema/values first`,
    );
  }
  const digits = (int + frac.padEnd(scale, '0')).replace(/^0+/, '');
  if (digits === '') return '0';
  return negative ? `-${digits}` : digits;
}
