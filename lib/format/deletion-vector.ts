/**
 * Deletion vectors as Iceberg stores them (https://iceberg.apache.org/puffin-spec/, blob type
 * `deletion-vector-v1`), so an Iceberg v3 manifest can point at the very bytes varve writes:
 *
 *   blob   = length (4 bytes, big-endian, of magic + bitmap) | magic D1 D3 39 64 | bitmap | CRC-32 (4 bytes, big-endian, of magic + bitmap)
 *   bitmap = 64-bit Roaring, portable serialization: number of 32-bit bitmaps (8 bytes LE), then for
 *            each its key (the high 32 bits, 4 bytes LE) and the 32-bit Roaring bitmap of the low
 *            bits in the portable format (https://github.com/RoaringBitmap/RoaringFormatSpec).
 *
 * The writer emits array containers (≤ 4,096 values) and bitmap containers (more), the choice
 * CRoaring makes without run optimisation; the reader also accepts run containers. Positions are
 * row positions in one data file (< 2^32 here: a data file holds far fewer rows).
 *
 * A Puffin file holds blobs followed by a footer: magic `PFA1` | blobs | magic | footer JSON |
 * footer length (4 bytes LE) | flags (4 bytes, 0: uncompressed) | magic.
 */
import { CorruptMetadataError, InvalidArgumentError } from '../errors.js';
import { checksum } from './data-file-checksum.js';
import { jsonInt, jsonStringMap, parseJsonFile } from '../json.js';
import * as v from 'valibot';

/** The Puffin blob type of a deletion vector. */
const DELETION_VECTOR_BLOB_TYPE = 'deletion-vector-v1';
/** Iceberg's `_pos` metadata column, the field a deletion vector blob is about. */
const ROW_POSITION_FIELD_ID = 2147483645;
const DV_MAGIC = [0xd1, 0xd3, 0x39, 0x64] as const;
const PUFFIN_MAGIC = [0x50, 0x46, 0x41, 0x31] as const;
const SERIAL_COOKIE_NO_RUN = 12346;
const SERIAL_COOKIE = 12347;
const NO_OFFSET_THRESHOLD = 4;
const ARRAY_MAX = 4096;

// --- 32-bit Roaring (portable format) ---

/** Where each container's values start in sorted positions (by their high 16 bits), and the end. */
function containerStarts(positions: Uint32Array): number[] {
  const starts: number[] = [];
  let start = 0;
  while (start < positions.length) {
    starts.push(start);
    const key = positions[start] >>> 16;
    // The container ends at the first position of a higher key: binary search for (key + 1) << 16.
    let lo = start + 1;
    let hi = positions.length;
    const next = (key + 1) * 65536;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (positions[mid] < next) lo = mid + 1;
      else hi = mid;
    }
    start = lo;
  }
  starts.push(positions.length);
  return starts;
}

function containerBytes(cardinality: number): number {
  return cardinality > ARRAY_MAX ? 8192 : cardinality * 2;
}

/** The portable serialization of a 32-bit Roaring bitmap of `positions` (sorted, unique), without run containers. */
function encodeRoaring32(positions: Uint32Array): Uint8Array {
  const starts = containerStarts(positions);
  const n = starts.length - 1;
  const header = 8 + 4 * n + 4 * n;
  let size = header;
  for (let i = 0; i < n; i++) size += containerBytes(starts[i + 1] - starts[i]);
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  view.setUint32(0, SERIAL_COOKIE_NO_RUN, true);
  view.setUint32(4, n, true);
  let offset = header;
  for (let i = 0; i < n; i++) {
    const from = starts[i];
    const to = starts[i + 1];
    const card = to - from;
    view.setUint16(8 + 4 * i, positions[from] >>> 16, true);
    view.setUint16(10 + 4 * i, card - 1, true);
    view.setUint32(8 + 4 * n + 4 * i, offset, true);
    if (card > ARRAY_MAX) {
      for (let j = from; j < to; j++) {
        const x = positions[j] & 0xffff;
        out[offset + (x >>> 3)] |= 1 << (x & 7);
      }
    } else {
      for (let j = from, at = offset; j < to; j++, at += 2) {
        out[at] = positions[j] & 0xff;
        out[at + 1] = (positions[j] >>> 8) & 0xff;
      }
    }
    offset += containerBytes(card);
  }
  return out;
}

/** Reads bytes of a serialized bitmap, failing with `bad` when they run out. */
class Cursor {
  readonly view: DataView;
  constructor(
    readonly bytes: Uint8Array,
    public pos: number,
    private readonly bad: (problem: string) => never,
  ) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  need(n: number): void {
    if (this.pos + n > this.bytes.length)
      this.bad(`the bitmap ends early (needs ${n} bytes at ${this.pos}, has ${this.bytes.length - this.pos})`);
  }
  u16(): number {
    this.need(2);
    const x = this.view.getUint16(this.pos, true);
    this.pos += 2;
    return x;
  }
  u32(): number {
    this.need(4);
    const x = this.view.getUint32(this.pos, true);
    this.pos += 4;
    return x;
  }
}

/** Header of a 32-bit bitmap: each container's key, cardinality and whether it is a run container. */
function readRoaring32Header(c: Cursor, bad: (p: string) => never): Array<{ key: number; card: number; run: boolean }> {
  const cookie = c.u32();
  let n: number;
  let runFlags: Uint8Array | undefined;
  if (cookie === SERIAL_COOKIE_NO_RUN) n = c.u32();
  else if ((cookie & 0xffff) === SERIAL_COOKIE) {
    n = (cookie >>> 16) + 1;
    const flagBytes = (n + 7) >>> 3;
    c.need(flagBytes);
    runFlags = c.bytes.subarray(c.pos, c.pos + flagBytes);
    c.pos += flagBytes;
  } else bad(`unknown Roaring cookie ${cookie}`);
  if (n > 65536) bad(`${n} containers in one 32-bit bitmap (at most 65,536)`);
  const out = [];
  let last = -1;
  for (let i = 0; i < n; i++) {
    const key = c.u16();
    const card = c.u16() + 1;
    if (key <= last) bad('container keys are not ascending');
    last = key;
    out.push({ key, card, run: runFlags !== undefined && (runFlags[i >>> 3] & (1 << (i & 7))) !== 0 });
  }
  // Offsets are present without runs, or with runs from NO_OFFSET_THRESHOLD containers on; containers follow in order anyway.
  if (runFlags === undefined || n >= NO_OFFSET_THRESHOLD) c.need(4 * n), (c.pos += 4 * n);
  return out;
}

/**
 * Writes the values of one container (low 16 bits of the positions under key `h.key`) into `out`
 * from `at`, and returns where the next container's values go. The positions need no further
 * check: containers come in ascending key order and each one's values ascend.
 */
function readContainer(
  c: Cursor,
  h: { key: number; card: number; run: boolean },
  out: Uint32Array,
  at: number,
  bad: (p: string) => never,
): number {
  const base = h.key * 65536;
  const bytes = c.bytes;
  let n = at;
  if (h.run) {
    const runs = c.u16();
    c.need(4 * runs);
    let count = 0;
    let next = 0;
    for (let r = 0; r < runs; r++) {
      const p = c.pos + 4 * r;
      const start = bytes[p] | (bytes[p + 1] << 8);
      const len = (bytes[p + 2] | (bytes[p + 3] << 8)) + 1;
      if (start < next) bad('the runs of a run container are not ascending');
      if (start + len > 65536) bad('a run container run goes past 65,535');
      count += len;
      if (count > h.card) bad(`a run container holds more values than its header says (${h.card})`);
      for (let x = start; x < start + len; x++) out[n++] = base + x;
      next = start + len;
    }
    c.pos += 4 * runs;
    if (count !== h.card) bad(`a run container holds ${count} values, its header says ${h.card}`);
  } else if (h.card > ARRAY_MAX) {
    c.need(8192);
    const end = at + h.card;
    for (let b = 0; b < 8192; b++) {
      let byte = bytes[c.pos + b];
      while (byte !== 0) {
        const bit = 31 - Math.clz32(byte & -byte);
        if (n === end) bad(`a bitmap container holds more values than its header says (${h.card})`);
        out[n++] = base + b * 8 + bit;
        byte &= byte - 1;
      }
    }
    c.pos += 8192;
    if (n !== end) bad(`a bitmap container holds ${n - at} values, its header says ${h.card}`);
  } else {
    c.need(2 * h.card);
    let prev = -1;
    for (let i = 0, p = c.pos; i < h.card; i++, p += 2) {
      const x = bytes[p] | (bytes[p + 1] << 8);
      if (x <= prev) bad('an array container is not sorted');
      prev = x;
      out[n++] = base + x;
    }
    c.pos += 2 * h.card;
  }
  return n;
}

/** The 64-bit Roaring portable serialization of `positions` (sorted ascending, unique, < 2^32). */
export function encodeRoaring64(positions: Uint32Array): Uint8Array {
  checkPositions(positions);
  if (positions.length === 0) return new Uint8Array(8);
  const inner = encodeRoaring32(positions);
  const out = new Uint8Array(12 + inner.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, 1, true);
  view.setUint32(4, 0, true);
  view.setUint32(8, 0, true);
  out.set(inner, 12);
  return out;
}

/**
 * The positions of a 64-bit Roaring bitmap in the portable serialization (sorted ascending), and
 * how many bytes it took. Positions must be < 2^32 (a varve data file's rows).
 */
export function decodeRoaring64(bytes: Uint8Array, what: string): { positions: Uint32Array; length: number } {
  const bad = (problem: string): never => {
    throw new CorruptMetadataError(`deletion vector ${what} is damaged: ${problem}; restore the file from a backup`, {
      file: what,
    });
  };
  const c = new Cursor(bytes, 0, bad);
  c.need(8);
  const count = c.view.getUint32(0, true) + c.view.getUint32(4, true) * 2 ** 32;
  c.pos = 8;
  // Positions are < 2^32: at most one 32-bit bitmap, under key 0; its header gives the cardinality.
  if (count > 1) bad(`${count} 32-bit bitmaps: positions past the 2^32 rows a data file can hold`);
  if (count === 0) return { positions: new Uint32Array(), length: c.pos };
  const high = c.u32();
  if (high !== 0) bad(`position ${high * 2 ** 32} is past the 2^32 rows a data file can hold`);
  const headers = readRoaring32Header(c, bad);
  const out = new Uint32Array(headers.reduce((s, h) => s + h.card, 0));
  let at = 0;
  for (const h of headers) at = readContainer(c, h, out, at, bad);
  return { positions: out, length: c.pos };
}

function checkPositions(positions: Uint32Array): void {
  for (let i = 1; i < positions.length; i++) {
    if (positions[i] <= positions[i - 1])
      throw new InvalidArgumentError(
        `deletion vector positions must be sorted ascending and distinct (position ${i}: ${positions[i]} after ${positions[i - 1]})`,
      );
  }
}

// --- the deletion-vector-v1 blob ---

/** The `deletion-vector-v1` blob of `positions` (sorted ascending, unique). */
export function encodeDeletionVectorBlob(positions: Uint32Array): Uint8Array {
  const bitmap = encodeRoaring64(positions);
  const out = new Uint8Array(4 + 4 + bitmap.length + 4);
  const view = new DataView(out.buffer);
  view.setUint32(0, 4 + bitmap.length, false);
  out.set(DV_MAGIC, 4);
  out.set(bitmap, 8);
  view.setUint32(8 + bitmap.length, checksum(out.subarray(4, 8 + bitmap.length)), false);
  return out;
}

/** The positions (sorted ascending) of a `deletion-vector-v1` blob; CorruptMetadataError naming `what` when its length, magic, CRC or bitmap is wrong. */
export function decodeDeletionVectorBlob(bytes: Uint8Array, what = 'blob'): Uint32Array {
  const bad = (problem: string): never => {
    throw new CorruptMetadataError(`deletion vector ${what} is damaged: ${problem}; restore the file from a backup`, {
      file: what,
    });
  };
  if (bytes.length < 12) bad(`${bytes.length} bytes is shorter than any deletion vector blob`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const length = view.getUint32(0, false);
  if (length + 8 !== bytes.length) bad(`its length field says ${length + 8} bytes, the blob has ${bytes.length}`);
  if (DV_MAGIC.some((b, i) => bytes[4 + i] !== b)) bad('the magic bytes are not D1 D3 39 64');
  const expected = view.getUint32(4 + length, false);
  const actual = checksum(bytes.subarray(4, 4 + length));
  if (expected !== actual) bad(`CRC-32 ${actual.toString(16)} does not match the stored ${expected.toString(16)}`);
  const { positions, length: used } = decodeRoaring64(bytes.subarray(8, 4 + length), what);
  if (used !== length - 4) bad(`${length - 4 - used} bytes follow the bitmap`);
  return positions;
}

// --- Puffin ---

/** A blob to write into a Puffin file. */
export interface PuffinBlobInput {
  bytes: Uint8Array;
  properties: Record<string, string>;
}

/** Where a blob landed in a Puffin file, as its footer says. */
export interface PuffinBlobMeta {
  type: string;
  offset: number;
  length: number;
  properties: Record<string, string>;
}

const footerSchema = v.object({
  blobs: v.array(
    v.object({
      type: v.string(),
      fields: v.array(jsonInt),
      'snapshot-id': jsonInt,
      'sequence-number': jsonInt,
      offset: jsonInt,
      length: jsonInt,
      'compression-codec': v.optional(v.string()),
      properties: v.optional(jsonStringMap),
    }),
  ),
  properties: v.optional(jsonStringMap),
});

/** A Puffin file holding `blobs`, all of type deletion-vector-v1, and where each one lies in it. */
export function writeDeletionVectorPuffin(blobs: readonly PuffinBlobInput[]): {
  bytes: Uint8Array;
  blobs: PuffinBlobMeta[];
} {
  let offset = 4;
  const metas: PuffinBlobMeta[] = blobs.map((b) => {
    const m = { type: DELETION_VECTOR_BLOB_TYPE, offset, length: b.bytes.length, properties: b.properties };
    offset += b.bytes.length;
    return m;
  });
  const footer = {
    blobs: metas.map((m) => ({
      type: m.type,
      fields: [ROW_POSITION_FIELD_ID],
      'snapshot-id': -1,
      'sequence-number': -1,
      offset: m.offset,
      length: m.length,
      properties: m.properties,
    })),
    properties: { 'created-by': 'varve' },
  };
  const payload = new TextEncoder().encode(JSON.stringify(footer));
  const out = new Uint8Array(offset + 4 + payload.length + 12);
  out.set(PUFFIN_MAGIC, 0);
  let at = 4;
  for (const b of blobs) out.set(b.bytes, at), (at += b.bytes.length);
  out.set(PUFFIN_MAGIC, at);
  out.set(payload, at + 4);
  const view = new DataView(out.buffer);
  view.setInt32(at + 4 + payload.length, payload.length, true);
  view.setUint32(at + 8 + payload.length, 0, true);
  out.set(PUFFIN_MAGIC, at + 12 + payload.length);
  return { bytes: out, blobs: metas };
}

/** The blobs a Puffin file's footer lists; CorruptMetadataError naming `what` when the file is not a Puffin file. */
export function readPuffinFooter(bytes: Uint8Array, what: string): PuffinBlobMeta[] {
  const bad = (problem: string): never => {
    throw new CorruptMetadataError(`Puffin file ${what} is damaged: ${problem}; restore it from a backup`, {
      file: what,
    });
  };
  const magicAt = (at: number) => PUFFIN_MAGIC.every((b, i) => bytes[at + i] === b);
  if (bytes.length < 20 || !magicAt(0) || !magicAt(bytes.length - 4))
    bad('it does not start and end with the magic PFA1');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const size = view.getInt32(bytes.length - 12, true);
  const flags = view.getUint32(bytes.length - 8, true);
  if (flags !== 0) bad(`footer flags ${flags}: a compressed footer is not written by varve`);
  const start = bytes.length - 12 - size;
  if (size < 0 || start < 8 || !magicAt(start - 4)) bad(`footer length ${size} does not fit the file`);
  const footer = parseJsonFile(bytes.subarray(start, start + size), footerSchema, what, { what: 'Puffin footer of' });
  return footer.blobs.map((b) => {
    if (b['compression-codec'] !== undefined) bad(`blob at ${b.offset} is compressed (${b['compression-codec']})`);
    if (b.offset < 4 || b.offset + b.length > start - 4)
      bad(`blob at ${b.offset} (${b.length} bytes) lies outside the blob area`);
    return { type: b.type, offset: b.offset, length: b.length, properties: b.properties ?? {} };
  });
}
