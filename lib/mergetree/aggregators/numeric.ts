/**
 * Exact arithmetic that keeps a column's type: TINYINT/SMALLINT/INT as numbers with range checks,
 * BIGINT as bigint with a 64-bit range check, FLOAT rounded to single precision, DOUBLE as is,
 * DECIMAL(p,s) as unscaled bigint checked against p digits. Overflow is an error, never a wrap.
 */
import { InvalidArgumentError } from '../../errors.js';
import type { DataField } from '../../schema/types.js';
import type { VersionColumn } from '../version-set.js';

/** A number or an unscaled/64-bit bigint, depending on the column type. */
export type Numeric = number | bigint;

/** The arithmetic of one numeric column. */
export interface Arithmetic {
  read(col: VersionColumn, v: number): Numeric;
  /** `n` (a small count) in the column's representation. */
  of(n: number): Numeric;
  add(a: Numeric, b: Numeric): Numeric;
  sub(a: Numeric, b: Numeric): Numeric;
  mul(a: Numeric, b: Numeric): Numeric;
  div(a: Numeric, b: Numeric): Numeric;
  neg(a: Numeric): Numeric;
}

const INT_RANGE: Record<string, [number, number]> = {
  TINYINT: [-128, 127],
  SMALLINT: [-32768, 32767],
  INT: [-2147483648, 2147483647],
};

/** The arithmetic of `field`'s type, or null when the type is not numeric. */
export function arithmeticFor(field: DataField, fn: string): Arithmetic | null {
  const root = field.type.root;
  const overflow = (expr: string): never => {
    throw new InvalidArgumentError(
      `${fn} of column ${field.name} overflows ${root}${root === 'DECIMAL' ? `(${field.type.precision},${field.type.scale})` : ''}: ${expr}; declare the column with a wider type`,
    );
  };
  const range = INT_RANGE[root];
  if (range) {
    const [min, max] = range;
    const check = (x: number, expr: () => string) => (x < min || x > max ? overflow(expr()) : x);
    return {
      read: (col, v) => col.number(v),
      of: (n) => n,
      add: (a, b) => check((a as number) + (b as number), () => `${a} + ${b}`),
      sub: (a, b) => check((a as number) - (b as number), () => `${a} - ${b}`),
      mul: (a, b) => check((a as number) * (b as number), () => `${a} * ${b}`),
      div: (a, b) => check(Math.trunc((a as number) / (nonZero(b, field, fn) as number)), () => `${a} / ${b}`),
      neg: (a) => check(-(a as number), () => `-${a}`),
    };
  }
  if (root === 'BIGINT') {
    const check = (x: bigint, expr: () => string) => (BigInt.asIntN(64, x) !== x ? overflow(expr()) : x);
    return {
      read: (col, v) => col.int64(v),
      of: (n) => BigInt(n),
      add: (a, b) => check((a as bigint) + (b as bigint), () => `${a} + ${b}`),
      sub: (a, b) => check((a as bigint) - (b as bigint), () => `${a} - ${b}`),
      mul: (a, b) => check((a as bigint) * (b as bigint), () => `${a} * ${b}`),
      div: (a, b) => check((a as bigint) / (nonZero(b as bigint, field, fn) as bigint), () => `${a} / ${b}`),
      neg: (a) => check(-(a as bigint), () => `-${a}`),
    };
  }
  if (root === 'FLOAT' || root === 'DOUBLE') {
    const round = root === 'FLOAT' ? Math.fround : (x: number) => x;
    return {
      read: (col, v) => col.number(v),
      of: (n) => n,
      add: (a, b) => round((a as number) + (b as number)),
      sub: (a, b) => round((a as number) - (b as number)),
      mul: (a, b) => round((a as number) * (b as number)),
      div: (a, b) => round((a as number) / (b as number)),
      neg: (a) => -(a as number),
    };
  }
  if (root === 'DECIMAL') {
    const limit = 10n ** BigInt(field.type.precision ?? 38);
    const unit = 10n ** BigInt(field.type.scale ?? 0);
    const check = (x: bigint, expr: () => string) => (x >= limit || x <= -limit ? overflow(expr()) : x);
    return {
      read: (col, v) => col.decimal(v),
      of: (n) => BigInt(n) * unit,
      add: (a, b) => check((a as bigint) + (b as bigint), () => `${a} + ${b} (unscaled)`),
      sub: (a, b) => check((a as bigint) - (b as bigint), () => `${a} - ${b} (unscaled)`),
      // The product of two scale-s values has scale 2s: rescale to s, rounding half away from zero.
      mul: (a, b) => check(divideHalfUp((a as bigint) * (b as bigint), unit), () => `${a} * ${b} (unscaled)`),
      div: (a, b) =>
        check(
          divideHalfUp((a as bigint) * unit, nonZero(b as bigint, field, fn) as bigint),
          () => `${a} / ${b} (unscaled)`,
        ),
      neg: (a) => -(a as bigint),
    };
  }
  return null;
}

function nonZero(b: Numeric, field: DataField, fn: string): Numeric {
  if (b === 0 || b === 0n) {
    throw new InvalidArgumentError(
      `${fn} of column ${field.name} cannot retract a zero factor; product retraction divides by it`,
    );
  }
  return b;
}

/** a / b rounded half away from zero (BigDecimal HALF_UP). */
function divideHalfUp(a: bigint, b: bigint): bigint {
  const q = a / b;
  const r = a % b;
  if (r === 0n) return q;
  const twice = 2n * (r < 0n ? -r : r);
  const absB = b < 0n ? -b : b;
  if (twice < absB) return q;
  return a < 0n !== b < 0n ? q - 1n : q + 1n;
}
