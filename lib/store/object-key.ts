/**
 * Object keys: the one set of rules every store enforces, so a key that works on memory works on a
 * folder and on S3 too. A key is a relative '/'-separated path whose segments are non-empty, not
 * `.` or `..`, and free of backslashes and NUL.
 */
import { InvalidKeyError } from '../errors.js';

/**
 * Segment names the local store uses for its own temp and lock files (`.<name>.<uuid>.tmp`,
 * `.<name>.lock`). Reserved in every store, so a listing never differs between stores.
 */
const RESERVED_SEGMENT = /^\..*\.(tmp|lock)$/;

/** True when a file name is one of the local store's temp or lock files. */
export function isReservedSegment(name: string): boolean {
  return RESERVED_SEGMENT.test(name);
}

function reject(what: string, value: string, why: string): never {
  throw new InvalidKeyError(
    `invalid object ${what} ${JSON.stringify(value)}: ${why}; ` +
      `use a relative '/'-separated path such as "db.db/orders/snapshot/snapshot-1"`,
  );
}

function checkChars(what: string, value: string): void {
  if (value.includes('\0')) reject(what, value, 'it contains a NUL character');
  if (value.includes('\\')) reject(what, value, 'it contains a backslash (the separator is /)');
  if (value.startsWith('/')) reject(what, value, 'it is absolute (starts with /)');
}

function checkSegment(what: string, value: string, segment: string): void {
  if (segment === '') reject(what, value, 'it has an empty segment (a leading, trailing or double /)');
  // `.` and `..` would alias or escape the root in a folder; refusing them everywhere keeps stores equal.
  if (segment === '.' || segment === '..') reject(what, value, `it has a "${segment}" segment`);
  if (isReservedSegment(segment)) {
    reject(what, value, `the segment "${segment}" looks like a store temp or lock file (".….tmp", ".….lock")`);
  }
}

/** Returns `key` unchanged when it is a valid object key; throws `InvalidKeyError` otherwise. */
export function checkObjectKey(key: string): string {
  if (typeof key !== 'string' || key === '') reject('key', String(key), 'it is empty');
  checkChars('key', key);
  for (const segment of key.split('/')) checkSegment('key', key, segment);
  return key;
}

/**
 * Returns `prefix` unchanged when it is a valid listing prefix: empty, or a key's beginning. Every
 * segment but the last must be a valid key segment; the last may be partial (`snapshot/snap`) or
 * empty (`snapshot/`), and is only ever compared as text, never used as a path.
 */
export function checkKeyPrefix(prefix: string): string {
  if (typeof prefix !== 'string') reject('prefix', String(prefix), 'it is not a string');
  if (prefix === '') return prefix;
  checkChars('prefix', prefix);
  const segments = prefix.split('/');
  for (let i = 0; i < segments.length - 1; i++) checkSegment('prefix', prefix, segments[i]);
  return prefix;
}

/** Maps a UTF-16 code unit so that comparing mapped units orders strings by code point. */
function codePointRank(unit: number): number {
  // Surrogates (0xD800-0xDFFF) encode code points above 0xFFFF: move them after 0xE000-0xFFFF.
  if (unit >= 0xd800 && unit <= 0xdfff) return unit + 0x2000;
  if (unit >= 0xe000) return unit - 0x800;
  return unit;
}

/**
 * Orders keys by code point, which equals S3's UTF-8 byte order; JavaScript's `<` compares UTF-16
 * units and would put U+E000..U+FFFF after astral characters.
 */
export function compareObjectKeys(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}
