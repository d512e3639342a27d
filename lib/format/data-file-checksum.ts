/**
 * End-to-end checksums of data and changelog files. Every file varve writes carries a CRC-32 of
 * each column chunk in its footer's key-value metadata (`varve.chunk-crc32`), and its manifest
 * entry carries a CRC-32 of the footer itself (`DataFileMeta.footerCrc32`). A reader checks the
 * footer it fetched against the manifest, then every column chunk it fetched against the footer,
 * before any byte reaches parquet-wasm: a ranged read of two columns of one row group checks
 * exactly what it fetched, and together the two cover every byte a reader ever decodes.
 *
 * CRC-32 (zlib's polynomial, node:zlib's native `crc32`, Node ≥ 20.15): the value gzip and the
 * Parquet page header's `crc` field use, so any tool can recompute it from a chunk's byte range.
 * Files written before checksums have neither value and read as before ("unchecked" to verify).
 *
 * A streamed file (compaction output goes to the store as it is encoded) never holds its bytes:
 * `ChunkChecksummer` walks its page headers as the bytes pass, keeps a CRC per page, and combines
 * a chunk's pages once the footer says where the chunks are.
 */
import { crc32 } from 'node:zlib';
import { CorruptMetadataError, DataFileChecksumError } from '../errors.js';
import {
  decodeStruct,
  encodeStruct,
  getField,
  setField,
  T,
  type ThriftList,
  type ThriftStruct,
} from './thrift-compact.js';

/** Footer key-value metadata key holding the column chunk CRCs: row groups split by `;`, chunks by `,`, 8 hex digits each. */
export const CHUNK_CRC_KEY = 'varve.chunk-crc32';
const MAGIC = [0x50, 0x41, 0x52, 0x31]; // PAR1
// parquet.thrift field ids
const FILE_KV = 5;
const FILE_ROW_GROUPS = 4;
const RG_COLUMNS = 1;
const CHUNK_META = 3;
const META_SIZE = 7;
const META_DATA_PAGE = 9;
const META_DICT_PAGE = 11;
const PAGE_COMPRESSED_SIZE = 3;
/** A page header longer than this is not one (the walker stops: see ChunkChecksummer). */
const MAX_PAGE_HEADER = 64 * 1024;

/** The CRC-32 of `bytes`, continuing `crc` when given (crc32(b, crc32(a)) = crc32(a ++ b)). */
export function checksum(bytes: Uint8Array, crc?: number): number {
  return crc === undefined ? crc32(bytes) : crc32(bytes, crc);
}

// --- combining: crc32(a ++ b) from crc32(a), crc32(b) and b's length (zlib's crc32_combine). ---
const POLY = 0xedb88320;

/** a·b modulo the CRC polynomial (bit-reflected, as zlib's multmodp). */
function multModP(a: number, b: number): number {
  let m = 0x80000000;
  let p = 0;
  for (;;) {
    if ((a & m) !== 0) {
      p ^= b;
      if ((a & (m - 1)) === 0) break;
    }
    m >>>= 1;
    b = b & 1 ? (b >>> 1) ^ POLY : b >>> 1;
  }
  return p >>> 0;
}

/** x^(2^k) modulo the polynomial, k = 0..31. */
const X2N: number[] = (() => {
  const t: number[] = [];
  let p = 0x40000000; // x^1
  t.push(p);
  for (let k = 1; k < 32; k++) t.push((p = multModP(p, p)));
  return t;
})();

/** x^(n·2^k) modulo the polynomial. */
function x2nModP(n: number, k: number): number {
  let p = 0x80000000; // x^0
  while (n > 0) {
    if (n % 2 === 1) p = multModP(X2N[k & 31], p);
    n = Math.floor(n / 2);
    k++;
  }
  return p;
}

/** crc32(a ++ b) from crcA = crc32(a), crcB = crc32(b) and b's length in bytes. */
export function combineChecksums(crcA: number, crcB: number, lengthB: number): number {
  return (multModP(x2nModP(lengthB, 3), crcA) ^ crcB) >>> 0;
}

// --- the footer ---

/** Where the footer of a complete Parquet file starts (its FileMetaData; the file ends with its length and PAR1). */
function footerStart(bytes: Uint8Array): number {
  const n = bytes.length;
  if (n < 12 || !MAGIC.every((b, i) => bytes[n - 4 + i] === b))
    throw new CorruptMetadataError(`a data file being written does not end with the Parquet magic PAR1`);
  const len = new DataView(bytes.buffer, bytes.byteOffset + n - 8, 4).getUint32(0, true);
  if (len + 12 > n)
    throw new CorruptMetadataError(`a data file being written has a footer of ${len} bytes, longer than the file`);
  return n - 8 - len;
}

/** The checksums a manifest entry records of a data file (DataFileMeta.footerCrc32, fileCrc32). */
export interface DataFileChecksums {
  /** CRC-32 of the file's last bytes, from its FileMetaData to PAR1: what a ranged reader checks. */
  footerCrc32: number;
  /** CRC-32 of the whole file: what `varve verify` checks (it covers the page indexes too, which varve never decodes). */
  fileCrc32: number;
}

/** The checksums of a sealed file's bytes (see DataFileChecksums). */
export function dataFileChecksums(bytes: Uint8Array): DataFileChecksums {
  return { footerCrc32: checksum(bytes.subarray(footerStart(bytes))), fileCrc32: checksum(bytes) };
}

function int(s: ThriftStruct, id: number): number | undefined {
  const v = getField(s, id)?.value;
  return typeof v === 'bigint' ? Number(v) : undefined;
}

function structOf(v: unknown): ThriftStruct {
  if (typeof v !== 'object' || v === null || (v as ThriftStruct).kind !== 'struct')
    throw new CorruptMetadataError('a data file being written has a malformed footer');
  return v as ThriftStruct;
}

/** The [start, end) byte range of every column chunk of every row group, as the footer records them. */
function chunkRanges(meta: ThriftStruct): Array<Array<[number, number]>> {
  const groups = (getField(meta, FILE_ROW_GROUPS)?.value as ThriftList | undefined)?.items ?? [];
  return groups.map((g) =>
    ((getField(structOf(g), RG_COLUMNS)?.value as ThriftList | undefined)?.items ?? []).map((c) => {
      const cmd = structOf(getField(structOf(c), CHUNK_META)?.value);
      const data = int(cmd, META_DATA_PAGE) ?? 0;
      const dict = int(cmd, META_DICT_PAGE);
      const start = dict !== undefined && dict > 0 && dict < data ? dict : data;
      return [start, start + (int(cmd, META_SIZE) ?? 0)] as [number, number];
    }),
  );
}

/** The footer bytes (FileMetaData, its length, PAR1) of `meta` with the chunk CRCs added to its key-value metadata. */
function sealedFooter(meta: ThriftStruct, crcs: number[][]): Uint8Array {
  const value = crcs.map((g) => g.map((c) => c.toString(16).padStart(8, '0')).join(',')).join(';');
  const enc = new TextEncoder();
  const kv: ThriftStruct = {
    kind: 'struct',
    fields: [
      { id: 1, type: T.BINARY, value: enc.encode(CHUNK_CRC_KEY) },
      { id: 2, type: T.BINARY, value: enc.encode(value) },
    ],
  };
  const list = getField(meta, FILE_KV)?.value as ThriftList | undefined;
  if (list === undefined)
    setField(meta, {
      id: FILE_KV,
      type: T.LIST,
      value: { kind: 'list', wire: T.LIST, elemType: T.STRUCT, items: [kv] },
    });
  else list.items.push(kv);
  const body = encodeStruct(meta);
  const out = new Uint8Array(body.length + 8);
  out.set(body);
  new DataView(out.buffer).setUint32(body.length, body.length, true);
  out.set(MAGIC, body.length + 4);
  return out;
}

function decodeFooter(footer: Uint8Array): ThriftStruct {
  try {
    return decodeStruct(footer).struct;
  } catch (e) {
    throw new CorruptMetadataError(
      `a data file being written has a footer that cannot be decoded: ${(e as Error).message}`,
      { cause: e },
    );
  }
}

/** A complete data file with its checksums: the bytes, and what its manifest entry records. */
export interface SealedDataFile extends DataFileChecksums {
  bytes: Uint8Array;
}

/**
 * The file with the CRC-32 of each column chunk in its footer (CHUNK_CRC_KEY), and the CRC of
 * that footer: every writer of whole files in memory seals them (one pass over the chunks, one copy).
 */
export function sealDataFile(bytes: Uint8Array): SealedDataFile {
  const start = footerStart(bytes);
  const meta = decodeFooter(bytes.subarray(start, bytes.length - 8));
  const crcs = chunkRanges(meta).map((g) => g.map(([s, e]) => checksum(bytes.subarray(s, e))));
  const footer = sealedFooter(meta, crcs);
  const out = new Uint8Array(start + footer.length);
  out.set(bytes.subarray(0, start));
  out.set(footer, start);
  return { bytes: out, footerCrc32: checksum(footer), fileCrc32: checksum(out) };
}

/**
 * The chunk checksums of a file whose bytes stream past (DataFileStreamWriter with a sink): `push`
 * every piece in order, then `seal` with the last piece, which holds the footer. Pieces straddle
 * chunks (parquet-rs flushes about a MB at a time), so the bytes are walked page by page as they
 * pass (a chunk is whole pages, each a Thrift PageHeader then `compressed_page_size` bytes); a
 * page's CRC is kept, and a chunk's CRC is its pages' combined. After the last row group come the
 * page indexes, which do not parse as pages: the walk stops there, and only pages inside chunk
 * ranges are used.
 */
export class ChunkChecksummer {
  private offset = 0;
  private pageStart = 4;
  private pageEnd = -1;
  private pageCrc = 0;
  private carry: Uint8Array = new Uint8Array(0);
  private stopped = false;
  /** Pages walked: start offset → [length, crc]. */
  private readonly pages = new Map<number, [number, number]>();

  /** The next bytes of the file. */
  push(piece: Uint8Array): void {
    let i = this.offset < 4 ? Math.min(4 - this.offset, piece.length) : 0;
    while (i < piece.length && !this.stopped) {
      if (this.pageEnd < 0) i = this.header(piece, i);
      else {
        const n = Math.min(piece.length - i, this.pageEnd - (this.offset + i));
        this.pageCrc = checksum(piece.subarray(i, i + n), this.pageCrc);
        i += n;
        if (this.offset + i === this.pageEnd) {
          this.pages.set(this.pageStart, [this.pageEnd - this.pageStart, this.pageCrc]);
          this.pageStart = this.pageEnd;
          this.pageEnd = -1;
        }
      }
    }
    this.offset += piece.length;
  }

  /** Parses the page header starting at piece[i] (after `carry`); returns where its page body starts in the piece. */
  private header(piece: Uint8Array, i: number): number {
    const room = MAX_PAGE_HEADER - this.carry.length;
    const more = piece.subarray(i, i + room);
    const view = this.carry.length === 0 ? more : concat(this.carry, more);
    let parsed: { struct: ThriftStruct; length: number } | undefined;
    try {
      parsed = decodeStruct(view);
    } catch {
      parsed = undefined;
    }
    const size = parsed === undefined ? undefined : getField(parsed.struct, PAGE_COMPRESSED_SIZE);
    if (parsed === undefined || size === undefined || typeof size.value !== 'bigint' || size.value < 0n) {
      // A header cut by the end of the piece waits for the next; anything else is past the pages.
      if (i + more.length === piece.length && view.length < MAX_PAGE_HEADER) this.carry = view.slice();
      else this.stopped = true;
      return piece.length;
    }
    const used = parsed.length - this.carry.length;
    this.pageCrc = checksum(view.subarray(0, parsed.length));
    this.pageEnd = this.pageStart + parsed.length + Number(size.value);
    this.carry = new Uint8Array(0);
    return i + used;
  }

  /**
   * The last piece split into what goes before the sealed footer and the sealed footer itself
   * (with the chunk CRCs), and that footer's CRC. `last` is the piece pushed last and must hold
   * the whole footer (parquet-rs writes the page indexes and the footer in one flush at close).
   */
  seal(last: Uint8Array): { head: Uint8Array; footer: Uint8Array; footerCrc32: number } {
    const start = footerStart(last);
    const meta = decodeFooter(last.subarray(start, last.length - 8));
    const crcs = chunkRanges(meta).map((g) => g.map(([s, e]) => this.chunkCrc(s, e)));
    const footer = sealedFooter(meta, crcs);
    return { head: last.subarray(0, start), footer, footerCrc32: checksum(footer) };
  }

  private chunkCrc(start: number, end: number): number {
    let crc: number | undefined;
    for (let at = start; at < end; ) {
      const page = this.pages.get(at);
      if (page === undefined || at + page[0] > end) {
        throw new CorruptMetadataError(
          `the column chunk at [${start}, ${end}) of a data file being written is not whole pages; its checksum cannot be computed`,
        );
      }
      crc = crc === undefined ? page[1] : combineChecksums(crc, page[1], page[0]);
      at += page[0];
    }
    return crc ?? checksum(new Uint8Array(0));
  }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

/** A CRC as 8 hex digits, for messages. */
export function crcHex(crc: number): string {
  return crc.toString(16).padStart(8, '0');
}

// --- reading ---

/** What a reader checks a data file against, from its manifest entry (absent fields: not checked). */
export interface DataFileCheck {
  /** DataFileMeta.footerCrc32: the CRC of the footer's bytes. */
  footerCrc32?: number;
  /** The table, for error messages. */
  table?: string;
}

/** The chunk CRCs a footer records (CHUNK_CRC_KEY), by row group and chunk; undefined when it records none. */
export function parseChunkChecksums(
  value: string | undefined,
  file: string,
  table: string | undefined,
): number[][] | undefined {
  if (value === undefined) return undefined;
  const groups = value === '' ? [] : value.split(';').map((g) => (g === '' ? [] : g.split(',')));
  const out: number[][] = [];
  for (const g of groups) {
    const row: number[] = [];
    for (const c of g) {
      if (!/^[0-9a-f]{8}$/.test(c))
        throw new DataFileChecksumError(file, table, `its footer's ${CHUNK_CRC_KEY} is malformed`);
      row.push(parseInt(c, 16));
    }
    out.push(row);
  }
  return out;
}
