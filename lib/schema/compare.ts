/**
 * Order of column values, the same order the merge tree sorts keys in (lib/mergetree/key-order.ts):
 * NULL first; numbers, dates and timestamps numerically; floats as Java's Double.compare (-0 before
 * +0, NaN after everything); DECIMAL exactly; STRING in code-point order (= UTF-8 byte order);
 * BYTES bytewise; false before true.
 */
import { compareDecimalText } from './decimal-text.js';
import type { DataType, Value } from './types.js';

/** Negative, zero or positive as `a` sorts before, with, or after `b` (NULL first). */
export function compareValues(type: DataType, a: Value, b: Value): number {
  if (a === null || b === null) return a === null ? (b === null ? 0 : -1) : 1;
  switch (type.root) {
    case 'STRING':
      return compareCodePoints(a as string, b as string);
    case 'DECIMAL':
      return compareDecimalText(a as string, b as string);
    case 'BYTES':
      return compareBytes(a as Uint8Array, b as Uint8Array);
    case 'FLOAT':
    case 'DOUBLE':
      return compareFloat(a as number, b as number);
    case 'BOOLEAN':
      return a === b ? 0 : a ? 1 : -1;
    default:
      // Integers (number), BIGINT and TIMESTAMP (bigint), DATE (number).
      return a < b ? -1 : a > b ? 1 : 0;
  }
}

/** Lexicographic order of key tuples (column by column; a proper prefix sorts first). */
export function compareKeyTuples(types: DataType[], a: Value[], b: Value[]): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const c = compareValues(types[i], a[i], b[i]);
    if (c !== 0) return c;
  }
  return a.length - b.length;
}

/** Java's Double.compare: -0 < +0, NaN equal to itself and greater than everything. */
function compareFloat(x: number, y: number): number {
  if (x < y) return -1;
  if (x > y) return 1;
  if (x === y) {
    if (x !== 0) return 0;
    const nx = Object.is(x, -0);
    return nx === Object.is(y, -0) ? 0 : nx ? -1 : 1;
  }
  const xn = Number.isNaN(x);
  return xn === Number.isNaN(y) ? 0 : xn ? 1 : -1;
}

/** Code-point order of two strings, computed on UTF-16 units without decoding. */
function compareCodePoints(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    // Surrogates (U+D800-DFFF) encode code points above U+FFFF, so they must sort after
    // U+E000-FFFF: shift them up past that block (and the block down) before comparing.
    if (x >= 0xd800 && y >= 0xd800) {
      x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
      y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
    }
    return x - y;
  }
  return a.length - b.length;
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
}
