/**
 * One Parquet file from several files that each hold consecutive row groups of it (the encoder
 * pool encodes a file's row groups on several threads, each as a small file of its own). A row
 * group's pages do not depend on where it sits in the file, so the row groups' bytes are copied as
 * they are; only what points into the file moves: every offset in the row groups' metadata, and the
 * page index (column and offset indexes, written after the row groups) with the page locations in
 * it. The footer is the first piece's with every piece's row groups, ordinals and row count — what
 * parquet-rs writes for the whole file, byte for byte (test/format/parquet-splice.test.ts).
 *
 * Footers are rewritten through the generic Thrift compact-protocol codec (thrift-compact.ts), which
 * keeps every field it does not know (and its type) as it was.
 */
import { CorruptMetadataError } from '../errors.js';
import {
  decodeStruct,
  encodeStruct,
  getField,
  setField,
  T,
  ThriftDecodeError,
  type ThriftList,
  type ThriftStruct,
} from './thrift-compact.js';

type TStruct = ThriftStruct;

const MAGIC = 0x31524150; // "PAR1" little-endian

/** The struct at the start of `bytes`; a malformed one is a damaged file. */
function readStruct(bytes: Uint8Array, what: string): TStruct {
  try {
    return decodeStruct(bytes).struct;
  } catch (e) {
    if (e instanceof ThriftDecodeError)
      throw new CorruptMetadataError(`${what} cannot be decoded: ${e.message}`, { cause: e });
    throw e;
  }
}

/** Adds `delta` to an integer field when present. */
function shift(s: TStruct, id: number, delta: bigint): void {
  const f = getField(s, id);
  if (f !== undefined) f.value = (f.value as bigint) + delta;
}

/** Sets an integer field, keeping its wire type when present, else adding it with `type`. */
function setInt(s: TStruct, id: number, type: number, v: bigint): void {
  const f = getField(s, id);
  if (f !== undefined) f.value = v;
  else setField(s, { id, type, value: v });
}

// Parquet footer field ids (parquet.thrift).
const FILE = { ROW_GROUPS: 4, NUM_ROWS: 3 } as const;
const ROW_GROUP = { COLUMNS: 1, NUM_ROWS: 3, FILE_OFFSET: 5, ORDINAL: 7 } as const;
const CHUNK = {
  FILE_OFFSET: 2,
  META: 3,
  OFFSET_INDEX_OFFSET: 4,
  OFFSET_INDEX_LENGTH: 5,
  COLUMN_INDEX_OFFSET: 6,
  COLUMN_INDEX_LENGTH: 7,
} as const;
const META = {
  DATA_PAGE_OFFSET: 9,
  INDEX_PAGE_OFFSET: 10,
  DICTIONARY_PAGE_OFFSET: 11,
  BLOOM_FILTER_OFFSET: 14,
  BLOOM_FILTER_LENGTH: 15,
} as const;
const PAGE_LOCATION_OFFSET = 1;

/** One piece: its footer, where its row groups' bytes are, and its page index entries. */
interface Piece {
  bytes: Uint8Array;
  footer: TStruct;
  rowGroups: TStruct[];
  /** Where the row groups' bytes end (the page index or the footer begins). */
  dataEnd: number;
}

function parsePiece(bytes: Uint8Array, what: string): Piece {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (
    bytes.byteLength < 12 ||
    view.getUint32(0, true) !== MAGIC ||
    view.getUint32(bytes.byteLength - 4, true) !== MAGIC
  ) {
    throw new CorruptMetadataError(`${what} is not a Parquet file (no PAR1 magic at both ends)`);
  }
  const footerLength = view.getUint32(bytes.byteLength - 8, true);
  const footerStart = bytes.byteLength - 8 - footerLength;
  if (footerStart < 4)
    throw new CorruptMetadataError(`${what} has a footer length (${footerLength}) longer than the file`);
  const footer = readStruct(bytes.subarray(footerStart, bytes.byteLength - 8), `${what}'s footer`);
  const rowGroups = ((getField(footer, FILE.ROW_GROUPS)?.value as ThriftList | undefined)?.items ?? []) as TStruct[];
  let dataEnd = footerStart;
  for (const g of rowGroups) {
    for (const c of chunksOf(g)) {
      if (getField(meta(c), META.BLOOM_FILTER_OFFSET) !== undefined)
        throw new CorruptMetadataError(`${what} has bloom filters; splicing files with them is not supported`);
      for (const id of [CHUNK.OFFSET_INDEX_OFFSET, CHUNK.COLUMN_INDEX_OFFSET]) {
        const at = getField(c, id)?.value as bigint | undefined;
        if (at !== undefined && Number(at) < dataEnd) dataEnd = Number(at);
      }
    }
  }
  return { bytes, footer, rowGroups, dataEnd };
}

function chunksOf(g: TStruct): TStruct[] {
  return ((getField(g, ROW_GROUP.COLUMNS)?.value as ThriftList | undefined)?.items ?? []) as TStruct[];
}

function meta(c: TStruct): TStruct {
  const m = getField(c, CHUNK.META)?.value as TStruct | undefined;
  if (m === undefined)
    throw new CorruptMetadataError(
      'a Parquet column chunk has no metadata (a file that keeps it elsewhere cannot be spliced)',
    );
  return m;
}

/** A piece's page-index structure at [offset, offset + length), checked to be inside its file. */
function indexBytes(p: Piece, c: TStruct, offsetId: number, lengthId: number): Uint8Array | undefined {
  const at = getField(c, offsetId)?.value as bigint | undefined;
  if (at === undefined) return undefined;
  const n = Number(getField(c, lengthId)?.value ?? -1n);
  const from = Number(at);
  if (n < 0 || from < p.dataEnd || from + n > p.bytes.byteLength - 8)
    throw new CorruptMetadataError(`a Parquet page index entry [${from}, +${n}) lies outside its file's page index`);
  return p.bytes.subarray(from, from + n);
}

/**
 * One Parquet file holding the row groups of `pieces` in order (each a complete Parquet file of
 * the same schema and writer settings, as one writer would have made them). Its footer is the
 * first piece's with every row group's offsets moved to where its bytes now are.
 */
export function spliceParquetFiles(pieces: readonly Uint8Array[]): Uint8Array {
  if (pieces.length === 0) throw new CorruptMetadataError('no Parquet files to splice');
  if (pieces.length === 1) return pieces[0];
  const parsed = pieces.map((b, i) => parsePiece(b, `piece ${i} of a spliced Parquet file`));
  // The row groups' bytes, one piece after another, behind the leading magic; then the page index.
  const { rowGroups, numRows } = moveRowGroups(parsed);
  const indexStart = 4 + parsed.reduce((s, p) => s + (p.dataEnd - 4), 0);
  const index = movePageIndex(parsed, indexStart);
  const footer = parsed[0].footer;
  setInt(footer, FILE.NUM_ROWS, T.I64, numRows);
  const rg = getField(footer, FILE.ROW_GROUPS);
  if (rg === undefined)
    throw new CorruptMetadataError('piece 0 of a spliced Parquet file has a footer without row groups');
  (rg.value as ThriftList).items = rowGroups;
  const footerBytes = encodeStruct(footer);
  const indexLength = index.reduce((s, entry) => s + entry.length, 0);
  const out = new Uint8Array(indexStart + indexLength + footerBytes.length + 8);
  const view = new DataView(out.buffer);
  view.setUint32(0, MAGIC, true);
  let at = 4;
  for (const p of parsed) {
    out.set(p.bytes.subarray(4, p.dataEnd), at);
    at += p.dataEnd - 4;
  }
  for (const entry of index) {
    out.set(entry, at);
    at += entry.length;
  }
  out.set(footerBytes, at);
  at += footerBytes.length;
  view.setUint32(at, footerBytes.length, true);
  view.setUint32(at + 4, MAGIC, true);
  return out;
}

/**
 * The row groups of every piece, in order, with their offsets moved to where their bytes lie once
 * the pieces' data follow one another behind the leading magic (renumbered), and their row count.
 */
function moveRowGroups(parsed: readonly Piece[]): { rowGroups: TStruct[]; numRows: bigint } {
  const rowGroups: TStruct[] = [];
  let at = 4;
  let numRows = 0n;
  for (const p of parsed) {
    const delta = BigInt(at - 4);
    for (const g of p.rowGroups) {
      shift(g, ROW_GROUP.FILE_OFFSET, delta);
      for (const c of chunksOf(g)) {
        const m = meta(c);
        shift(m, META.DATA_PAGE_OFFSET, delta);
        shift(m, META.INDEX_PAGE_OFFSET, delta);
        shift(m, META.DICTIONARY_PAGE_OFFSET, delta);
        // parquet-rs leaves the chunk's deprecated file_offset at 0; a writer that sets it points into the data.
        const fo = getField(c, CHUNK.FILE_OFFSET);
        if (fo !== undefined && (fo.value as bigint) > 0n) fo.value = (fo.value as bigint) + delta;
      }
      setInt(g, ROW_GROUP.ORDINAL, T.I16, BigInt(rowGroups.length));
      numRows += (getField(g, ROW_GROUP.NUM_ROWS)?.value as bigint | undefined) ?? 0n;
      rowGroups.push(g);
    }
    at += p.dataEnd - 4;
  }
  return { rowGroups, numRows };
}

/**
 * The page index from `indexStart` on, as parquet-rs lays it out: every column index (row group
 * by row group, column by column), then every offset index, each offset index's page locations
 * moved with its pages. Points each chunk at its entry; returns the entries in file order.
 */
function movePageIndex(parsed: readonly Piece[], indexStart: number): Uint8Array[] {
  const index: Uint8Array[] = [];
  let indexLength = 0;
  for (const [kind, offsetId, lengthId] of [
    ['column', CHUNK.COLUMN_INDEX_OFFSET, CHUNK.COLUMN_INDEX_LENGTH],
    ['offset', CHUNK.OFFSET_INDEX_OFFSET, CHUNK.OFFSET_INDEX_LENGTH],
  ] as const) {
    let base = 0;
    for (const p of parsed) {
      const delta = BigInt(base);
      for (const g of p.rowGroups) {
        for (const c of chunksOf(g)) {
          const b = indexBytes(p, c, offsetId, lengthId);
          if (b === undefined) continue;
          let entry = b;
          if (kind === 'offset') {
            const oi = readStruct(b, 'an offset index of a spliced Parquet file');
            for (const loc of ((getField(oi, 1)?.value as ThriftList | undefined)?.items ?? []) as TStruct[])
              shift(loc, PAGE_LOCATION_OFFSET, delta);
            entry = encodeStruct(oi);
          }
          setInt(c, offsetId, T.I64, BigInt(indexStart + indexLength));
          setInt(c, lengthId, T.I32, BigInt(entry.length));
          index.push(entry);
          indexLength += entry.length;
        }
      }
      base += p.dataEnd - 4;
    }
  }
  return index;
}
