/**
 * The bucket function. FROZEN: every file ever written was placed by it, so changing a single bit
 * of this spec would split a key across buckets. The same spec is in docs/BUCKETING.md for other
 * tools.
 *
 * 1. Encode the bucket-key values, in bucket-key order, into one byte string. Each value is one
 *    null-flag byte, 0x01 for NULL (nothing follows) or 0x00 followed by its payload:
 *    - TINYINT, SMALLINT, INT, DATE (days): the value as int32, little-endian (4 bytes).
 *    - BIGINT, TIMESTAMP (in the column's unit, ms or µs): int64, little-endian (8 bytes).
 *    - FLOAT: the IEEE-754 binary32 bits, little-endian (4 bytes); -0.0 is written as 0.0 and every
 *      NaN as 0x7FC00000.
 *    - DOUBLE: the IEEE-754 binary64 bits, little-endian (8 bytes); -0.0 as 0.0, every NaN as
 *      0x7FF8000000000000.
 *    - BOOLEAN: one byte, 0x00 false, 0x01 true.
 *    - DECIMAL(p,s): the unscaled integer (value × 10^s) as decimal ASCII text, "-" for negatives,
 *      no leading zeros, "0" for zero ("12.50" in DECIMAL(10,2) → "1250"); variable length.
 *    - STRING: its UTF-8 bytes (a lone surrogate encodes as U+FFFD); variable length.
 *    - BYTES: the raw bytes; variable length.
 *    A variable-length payload is preceded by its byte length as uint32, little-endian.
 * 2. hash = MurmurHash3_x86_32(bytes, seed 42), as an unsigned 32-bit integer.
 * 3. bucket = ((hash | 0) % n + n) % n, with n = `bucket`: the hash is read as a signed 32-bit
 *    integer (two's complement) and reduced to its non-negative remainder (floor modulo).
 */
import { InvalidArgumentError } from '../errors.js';
import { unscaledDecimalText } from './decimal-text.js';
import type { DataType, Value } from './types.js';

/** The MurmurHash3 seed of the bucket function. */
const BUCKET_HASH_SEED = 42;

// One scratch buffer reused by every call: bucketOf runs once per written row and must not allocate.
let scratch = new Uint8Array(1024);
let view = new DataView(scratch.buffer);
// Splitting a bigint through a typed array is ~10x faster than DataView.setBigInt64 or BigInt shifts.
const int64 = new BigInt64Array(1);
const int64Words = new Int32Array(int64.buffer);
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const LO = LITTLE_ENDIAN ? 0 : 1;
const HI = 1 - LO;

function ensure(capacity: number): void {
  if (capacity <= scratch.length) return;
  const next = new Uint8Array(Math.max(capacity, scratch.length * 2));
  next.set(scratch);
  scratch = next;
  view = new DataView(next.buffer);
}

/** The bucket (0 … numBuckets-1) of a bucket key, by the frozen spec above. */
export function bucketOf(types: DataType[], values: Value[], numBuckets: number): number {
  if (!Number.isInteger(numBuckets) || numBuckets < 1) {
    throw new InvalidArgumentError(`number of buckets must be an integer ≥ 1, got ${numBuckets}`);
  }
  const h = (types.length === 1 ? hashSingleFixed(types[0], values[0]) : undefined) ?? hashEncoded(types, values);
  return (((h | 0) % numBuckets) + numBuckets) % numBuckets;
}

/**
 * The bucket of a one-column 64-bit integer key (BIGINT, TIMESTAMP) given as its two 32-bit words:
 * the same hash as `bucketOf`, for a writer routing a column of keys without making a value per row.
 */
export function bucketOfInt64Words(lo: number, hi: number, numBuckets: number): number {
  const h = finish(mixTail(mixBlock(mixBlock(BUCKET_HASH_SEED, lo << 8), (lo >>> 24) | (hi << 8)), hi >>> 24), 9);
  return (((h | 0) % numBuckets) + numBuckets) % numBuckets;
}

/** The bucket of a one-column key of TINYINT, SMALLINT, INT or DATE: the same hash as `bucketOf`. */
export function bucketOfInt32(v: number, numBuckets: number): number {
  const h = finish(mixTail(mixBlock(BUCKET_HASH_SEED, v << 8), v >>> 24), 5);
  return (((h | 0) % numBuckets) + numBuckets) % numBuckets;
}

function hashEncoded(types: DataType[], values: Value[]): number {
  // Encode first: encoding may replace `scratch` with a larger buffer.
  const length = encodeInto(types, values);
  return murmurHash3x86_32(scratch, BUCKET_HASH_SEED, length);
}

/**
 * Fast path for the common one-column integer key: the hash of its 5 or 9 encoded bytes (flag
 * 0x00, then the value little-endian) computed straight from the value's 32-bit words, without
 * writing bytes. Undefined when the key is not such a value (the general path then decides).
 */
function hashSingleFixed(type: DataType, v: Value): number | undefined {
  switch (type.root) {
    case 'TINYINT':
    case 'SMALLINT':
    case 'INT':
    case 'DATE':
      if (typeof v !== 'number' || (v | 0) !== v) return undefined;
      // Bytes 00 v0 v1 v2 | v3: one block (v << 8), one tail byte.
      return finish(mixTail(mixBlock(BUCKET_HASH_SEED, v << 8), v >>> 24), 5);
    case 'BIGINT':
    case 'TIMESTAMP': {
      let lo: number, hi: number;
      if (typeof v === 'bigint') {
        if (v < INT64_MIN || v > INT64_MAX) return undefined;
        int64[0] = v;
        lo = int64Words[LO];
        hi = int64Words[HI];
      } else if (typeof v === 'number' && Number.isSafeInteger(v)) {
        hi = Math.floor(v / 4294967296);
        lo = (v - hi * 4294967296) | 0;
      } else {
        return undefined;
      }
      // Bytes 00 l0 l1 l2 | l3 h0 h1 h2 | h3: two blocks, one tail byte.
      const h = mixBlock(mixBlock(BUCKET_HASH_SEED, lo << 8), (lo >>> 24) | (hi << 8));
      return finish(mixTail(h, hi >>> 24), 9);
    }
    default:
      return undefined;
  }
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** The canonical bytes of a bucket key (step 1 of the spec), as a fresh array. */
export function encodeBucketKey(types: DataType[], values: Value[]): Uint8Array {
  const length = encodeInto(types, values);
  return scratch.slice(0, length);
}

/** Writes the key's canonical bytes into `scratch` and returns their length. */
function encodeInto(types: DataType[], values: Value[]): number {
  if (types.length !== values.length) {
    throw new InvalidArgumentError(
      `bucket key has ${types.length} types but ${values.length} values; pass one value per bucket-key column`,
    );
  }
  let p = 0;
  for (let i = 0; i < types.length; i++) {
    const v = values[i];
    ensure(p + 13);
    if (v === null || v === undefined) {
      scratch[p++] = 1;
      continue;
    }
    scratch[p++] = 0;
    const root = types[i].root;
    switch (root) {
      case 'TINYINT':
      case 'SMALLINT':
      case 'INT':
      case 'DATE':
        if (typeof v !== 'number' || (v | 0) !== v) throw wrongKind(v, root);
        view.setInt32(p, v, true);
        p += 4;
        break;
      case 'BIGINT':
      case 'TIMESTAMP':
        writeInt64(p, v, root);
        p += 8;
        break;
      case 'FLOAT': {
        const f = expectNumber(v, root);
        // One bit pattern per value: -0.0 equals 0.0 and all NaNs are one NaN.
        // biome-ignore lint/suspicious/noSelfCompare: the NaN test, one compare on the hashing hot path
        if (f !== f) view.setUint32(p, 0x7fc00000, true);
        else view.setFloat32(p, f === 0 ? 0 : f, true);
        p += 4;
        break;
      }
      case 'DOUBLE': {
        const d = expectNumber(v, root);
        // biome-ignore lint/suspicious/noSelfCompare: the NaN test, one compare on the hashing hot path
        if (d !== d) {
          view.setUint32(p, 0, true);
          view.setUint32(p + 4, 0x7ff80000, true);
        } else {
          view.setFloat64(p, d === 0 ? 0 : d, true);
        }
        p += 8;
        break;
      }
      case 'BOOLEAN':
        if (typeof v !== 'boolean') throw wrongKind(v, root);
        scratch[p++] = v ? 1 : 0;
        break;
      case 'DECIMAL':
        if (typeof v !== 'string') throw wrongKind(v, root);
        p = writeText(p, unscaledDecimalText(v, types[i].scale ?? 0));
        break;
      case 'STRING':
        if (typeof v !== 'string') throw wrongKind(v, root);
        p = writeText(p, v);
        break;
      case 'BYTES': {
        if (!(v instanceof Uint8Array)) throw wrongKind(v, root);
        ensure(p + 4 + v.length);
        view.setUint32(p, v.length, true);
        scratch.set(v, p + 4);
        p += 4 + v.length;
        break;
      }
    }
  }
  return p;
}

function expectNumber(v: Value, root: string): number {
  if (typeof v !== 'number') throw wrongKind(v, root);
  return v;
}

function writeInt64(p: number, v: Value, root: string): void {
  if (typeof v === 'bigint' && v >= INT64_MIN && v <= INT64_MAX) {
    int64[0] = v;
    view.setInt32(p, int64Words[LO], true);
    view.setInt32(p + 4, int64Words[HI], true);
  } else if (typeof v === 'number' && Number.isSafeInteger(v)) {
    // Two's complement halves without going through BigInt.
    const hi = Math.floor(v / 4294967296);
    view.setUint32(p, v - hi * 4294967296, true);
    view.setInt32(p + 4, hi, true);
  } else {
    throw wrongKind(v, root);
  }
}

function wrongKind(v: Value, root: string): InvalidArgumentError {
  return new InvalidArgumentError(
    `bucket key value ${String(v)} (${typeof v}) does not fit bucket-key type ${root}; coerce rows with lib/schema/values first`,
  );
}

/** Writes a uint32 LE byte length then the UTF-8 bytes of `s`; returns the new end. */
function writeText(p: number, s: string): number {
  ensure(p + 4 + 3 * s.length);
  const start = p + 4;
  let q = start;
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c < 0x80) {
      scratch[q++] = c;
    } else if (c < 0x800) {
      scratch[q++] = 0xc0 | (c >> 6);
      scratch[q++] = 0x80 | (c & 0x3f);
    } else {
      if (c >= 0xd800 && c <= 0xdfff) {
        const next = i + 1 < s.length ? s.charCodeAt(i + 1) : 0;
        if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
          const cp = 0x10000 + ((c - 0xd800) << 10) + (next - 0xdc00);
          scratch[q++] = 0xf0 | (cp >> 18);
          scratch[q++] = 0x80 | ((cp >> 12) & 0x3f);
          scratch[q++] = 0x80 | ((cp >> 6) & 0x3f);
          scratch[q++] = 0x80 | (cp & 0x3f);
          i++;
          continue;
        }
        c = 0xfffd;
      }
      scratch[q++] = 0xe0 | (c >> 12);
      scratch[q++] = 0x80 | ((c >> 6) & 0x3f);
      scratch[q++] = 0x80 | (c & 0x3f);
    }
  }
  view.setUint32(p, q - start, true);
  return q;
}

function scramble(k: number): number {
  k = Math.imul(k, 0xcc9e2d51);
  k = (k << 15) | (k >>> 17);
  return Math.imul(k, 0x1b873593);
}

function mixBlock(h: number, k: number): number {
  h ^= scramble(k);
  h = (h << 13) | (h >>> 19);
  return (Math.imul(h, 5) + 0xe6546b64) | 0;
}

function mixTail(h: number, k: number): number {
  return h ^ scramble(k);
}

function finish(h: number, length: number): number {
  h ^= length;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** MurmurHash3_x86_32 of `bytes[0, length)` with `seed`, as an unsigned 32-bit integer. */
export function murmurHash3x86_32(bytes: Uint8Array, seed = 0, length = bytes.length): number {
  let h = seed | 0;
  const blocks = length & ~3;
  for (let i = 0; i < blocks; i += 4) {
    h = mixBlock(h, bytes[i] | (bytes[i + 1] << 8) | (bytes[i + 2] << 16) | (bytes[i + 3] << 24));
  }
  const tail = length & 3;
  if (tail > 0) {
    let k = bytes[blocks];
    if (tail >= 2) k |= bytes[blocks + 1] << 8;
    if (tail === 3) k |= bytes[blocks + 2] << 16;
    h = mixTail(h, k);
  }
  return finish(h, length);
}
