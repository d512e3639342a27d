/**
 * One Parquet file from several files that each hold consecutive row groups of it (the encoder
 * pool encodes a file's row groups on several threads, each as a small file of its own). A row
 * group's pages do not depend on where it sits in the file, so the row groups' bytes are copied as
 * they are; only what points into the file moves: every offset in the row groups' metadata, and the
 * page index (column and offset indexes, written after the row groups) with the page locations in
 * it. The footer is the first piece's with every piece's row groups, ordinals and row count — what
 * parquet-rs writes for the whole file, byte for byte (test/format/parquet-splice.test.ts).
 *
 * Footers are rewritten through a generic Thrift compact-protocol reader and writer that keeps
 * every field it does not know (and its type) as it was.
 */
import { CorruptMetadataError } from '../errors.js';

/** Thrift compact-protocol type codes. */
const T = { TRUE: 1, FALSE: 2, BYTE: 3, I16: 4, I32: 5, I64: 6, DOUBLE: 7, BINARY: 8, LIST: 9, SET: 10, MAP: 11, STRUCT: 12 } as const;

type TValue = bigint | Uint8Array | TStruct | TList | TMap | number | boolean;
/** A struct's fields in wire order: id, compact type and value (a boolean field's value is its type). */
interface TField {
  id: number;
  type: number;
  value: TValue;
}
interface TStruct {
  fields: TField[];
}
interface TList {
  elemType: number;
  items: TValue[];
}
interface TMap {
  keyType: number;
  valueType: number;
  entries: [TValue, TValue][];
}

const MAGIC = 0x31524150; // "PAR1" little-endian

class Reader {
  pos: number;
  constructor(
    private readonly b: Uint8Array,
    start: number,
  ) {
    this.pos = start;
  }

  byte(): number {
    if (this.pos >= this.b.length) throw new CorruptMetadataError('a Parquet footer ends inside a Thrift value');
    return this.b[this.pos++];
  }

  varint(): bigint {
    let r = 0n;
    let shift = 0n;
    for (;;) {
      const x = this.byte();
      r |= BigInt(x & 0x7f) << shift;
      if ((x & 0x80) === 0) return r;
      shift += 7n;
    }
  }

  zigzag(): bigint {
    const v = this.varint();
    return (v >> 1n) ^ -(v & 1n);
  }

  value(type: number): TValue {
    switch (type) {
      case T.TRUE:
        return true;
      case T.FALSE:
        return false;
      case T.BYTE:
        return this.byte();
      case T.I16:
      case T.I32:
      case T.I64:
        return this.zigzag();
      case T.DOUBLE: {
        const v = this.b.subarray(this.pos, this.pos + 8);
        this.pos += 8;
        return v;
      }
      case T.BINARY: {
        const n = Number(this.varint());
        const v = this.b.subarray(this.pos, this.pos + n);
        this.pos += n;
        return v;
      }
      case T.LIST:
      case T.SET: {
        const h = this.byte();
        const size = h >> 4 === 15 ? Number(this.varint()) : h >> 4;
        const elemType = h & 15;
        // A boolean in a list is one byte (1 true, else false).
        const items: TValue[] = [];
        for (let i = 0; i < size; i++) items.push(elemType === T.TRUE || elemType === T.FALSE ? this.byte() === 1 : this.value(elemType));
        return { elemType, items };
      }
      case T.MAP: {
        const size = Number(this.varint());
        if (size === 0) return { keyType: 0, valueType: 0, entries: [] };
        const kv = this.byte();
        const entries: [TValue, TValue][] = [];
        for (let i = 0; i < size; i++) entries.push([this.value(kv >> 4), this.value(kv & 15)]);
        return { keyType: kv >> 4, valueType: kv & 15, entries };
      }
      case T.STRUCT:
        return this.struct();
      default:
        throw new CorruptMetadataError(`a Parquet footer holds an unknown Thrift type ${type}`);
    }
  }

  struct(): TStruct {
    const fields: TField[] = [];
    let last = 0;
    for (;;) {
      const h = this.byte();
      if (h === 0) return { fields };
      const type = h & 15;
      const id = h >> 4 === 0 ? Number(this.zigzag()) : last + (h >> 4);
      last = id;
      fields.push({ id, type, value: this.value(type) });
    }
  }
}

class Writer {
  private buf = new Uint8Array(4096);
  length = 0;

  bytes(): Uint8Array {
    return this.buf.subarray(0, this.length);
  }

  private room(n: number): void {
    if (this.length + n <= this.buf.length) return;
    const next = new Uint8Array(Math.max(this.buf.length * 2, this.length + n));
    next.set(this.buf.subarray(0, this.length));
    this.buf = next;
  }

  byte(x: number): void {
    this.room(1);
    this.buf[this.length++] = x;
  }

  raw(b: Uint8Array): void {
    this.room(b.length);
    this.buf.set(b, this.length);
    this.length += b.length;
  }

  varint(v: bigint): void {
    while (v >= 0x80n) {
      this.byte(Number(v & 0x7fn) | 0x80);
      v >>= 7n;
    }
    this.byte(Number(v));
  }

  zigzag(v: bigint): void {
    this.varint(v >= 0n ? v << 1n : ((-v) << 1n) - 1n);
  }

  value(type: number, v: TValue): void {
    switch (type) {
      case T.TRUE:
      case T.FALSE:
        return;
      case T.BYTE:
        return this.byte(v as number);
      case T.I16:
      case T.I32:
      case T.I64:
        return this.zigzag(v as bigint);
      case T.DOUBLE:
        return this.raw(v as Uint8Array);
      case T.BINARY:
        this.varint(BigInt((v as Uint8Array).length));
        return this.raw(v as Uint8Array);
      case T.LIST:
      case T.SET: {
        const l = v as TList;
        if (l.items.length < 15) this.byte((l.items.length << 4) | l.elemType);
        else {
          this.byte(0xf0 | l.elemType);
          this.varint(BigInt(l.items.length));
        }
        for (const item of l.items) {
          if (l.elemType === T.TRUE || l.elemType === T.FALSE) this.byte(item ? 1 : 2);
          else this.value(l.elemType, item);
        }
        return;
      }
      case T.MAP: {
        const m = v as TMap;
        this.varint(BigInt(m.entries.length));
        if (m.entries.length === 0) return;
        this.byte((m.keyType << 4) | m.valueType);
        for (const [k, x] of m.entries) {
          this.value(m.keyType, k);
          this.value(m.valueType, x);
        }
        return;
      }
      case T.STRUCT:
        return this.struct(v as TStruct);
    }
  }

  struct(s: TStruct): void {
    let last = 0;
    for (const f of s.fields) {
      const delta = f.id - last;
      if (delta > 0 && delta <= 15) this.byte((delta << 4) | f.type);
      else {
        this.byte(f.type);
        this.zigzag(BigInt(f.id));
      }
      last = f.id;
      this.value(f.type, f.value);
    }
    this.byte(0);
  }
}

function field(s: TStruct, id: number): TField | undefined {
  return s.fields.find((f) => f.id === id);
}

/** Adds `delta` to an integer field when present. */
function shift(s: TStruct, id: number, delta: bigint): void {
  const f = field(s, id);
  if (f !== undefined) f.value = (f.value as bigint) + delta;
}

function setInt(s: TStruct, id: number, type: number, v: bigint): void {
  const f = field(s, id);
  if (f !== undefined) f.value = v;
  else {
    s.fields.push({ id, type, value: v });
    s.fields.sort((a, b) => a.id - b.id);
  }
}

// Parquet footer field ids (parquet.thrift).
const FILE = { ROW_GROUPS: 4, NUM_ROWS: 3 } as const;
const ROW_GROUP = { COLUMNS: 1, NUM_ROWS: 3, FILE_OFFSET: 5, ORDINAL: 7 } as const;
const CHUNK = { FILE_OFFSET: 2, META: 3, OFFSET_INDEX_OFFSET: 4, OFFSET_INDEX_LENGTH: 5, COLUMN_INDEX_OFFSET: 6, COLUMN_INDEX_LENGTH: 7 } as const;
const META = { DATA_PAGE_OFFSET: 9, INDEX_PAGE_OFFSET: 10, DICTIONARY_PAGE_OFFSET: 11, BLOOM_FILTER_OFFSET: 14, BLOOM_FILTER_LENGTH: 15 } as const;
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
  if (bytes.byteLength < 12 || view.getUint32(0, true) !== MAGIC || view.getUint32(bytes.byteLength - 4, true) !== MAGIC) {
    throw new CorruptMetadataError(`${what} is not a Parquet file (no PAR1 magic at both ends)`);
  }
  const footerLength = view.getUint32(bytes.byteLength - 8, true);
  const footerStart = bytes.byteLength - 8 - footerLength;
  if (footerStart < 4) throw new CorruptMetadataError(`${what} has a footer length (${footerLength}) longer than the file`);
  const footer = new Reader(bytes, footerStart).struct();
  const rowGroups = ((field(footer, FILE.ROW_GROUPS)?.value as TList | undefined)?.items ?? []) as TStruct[];
  let dataEnd = footerStart;
  for (const g of rowGroups) {
    for (const c of chunksOf(g)) {
      if (field(meta(c), META.BLOOM_FILTER_OFFSET) !== undefined) throw new CorruptMetadataError(`${what} has bloom filters; splicing files with them is not supported`);
      for (const id of [CHUNK.OFFSET_INDEX_OFFSET, CHUNK.COLUMN_INDEX_OFFSET]) {
        const at = field(c, id)?.value as bigint | undefined;
        if (at !== undefined && Number(at) < dataEnd) dataEnd = Number(at);
      }
    }
  }
  return { bytes, footer, rowGroups, dataEnd };
}

function chunksOf(g: TStruct): TStruct[] {
  return ((field(g, ROW_GROUP.COLUMNS)?.value as TList | undefined)?.items ?? []) as TStruct[];
}

function meta(c: TStruct): TStruct {
  const m = field(c, CHUNK.META)?.value as TStruct | undefined;
  if (m === undefined) throw new CorruptMetadataError('a Parquet column chunk has no metadata (a file that keeps it elsewhere cannot be spliced)');
  return m;
}

/** A piece's page-index structure at [offset, offset + length), checked to be inside its file. */
function indexBytes(p: Piece, c: TStruct, offsetId: number, lengthId: number): Uint8Array | undefined {
  const at = field(c, offsetId)?.value as bigint | undefined;
  if (at === undefined) return undefined;
  const n = Number(field(c, lengthId)?.value ?? -1n);
  const from = Number(at);
  if (n < 0 || from < p.dataEnd || from + n > p.bytes.byteLength - 8) throw new CorruptMetadataError(`a Parquet page index entry [${from}, +${n}) lies outside its file's page index`);
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
  // The row groups' bytes, one piece after another, behind the leading magic.
  const dataLength = parsed.reduce((s, p) => s + (p.dataEnd - 4), 0);
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
        const fo = field(c, CHUNK.FILE_OFFSET);
        if (fo !== undefined && (fo.value as bigint) > 0n) fo.value = (fo.value as bigint) + delta;
      }
      setInt(g, ROW_GROUP.ORDINAL, T.I16, BigInt(rowGroups.length));
      numRows += (field(g, ROW_GROUP.NUM_ROWS)?.value as bigint | undefined) ?? 0n;
      rowGroups.push(g);
    }
    at += p.dataEnd - 4;
  }
  // The page index, as parquet-rs lays it out: every column index (row group by row group, column
  // by column), then every offset index, each offset index's page locations moved with its pages.
  const index = new Writer();
  const indexStart = 4 + dataLength;
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
          const from = index.length;
          if (kind === 'column') index.raw(b);
          else {
            const oi = new Reader(b, 0).struct();
            for (const loc of ((field(oi, 1)?.value as TList | undefined)?.items ?? []) as TStruct[]) shift(loc, PAGE_LOCATION_OFFSET, delta);
            index.struct(oi);
          }
          setInt(c, offsetId, T.I64, BigInt(indexStart + from));
          setInt(c, lengthId, T.I32, BigInt(index.length - from));
        }
      }
      base += p.dataEnd - 4;
    }
  }
  const footer = parsed[0].footer;
  setInt(footer, FILE.NUM_ROWS, T.I64, numRows);
  const rg = field(footer, FILE.ROW_GROUPS);
  if (rg === undefined) throw new CorruptMetadataError('piece 0 of a spliced Parquet file has a footer without row groups');
  rg.value = { elemType: T.STRUCT, items: rowGroups };
  const f = new Writer();
  f.struct(footer);
  const footerBytes = f.bytes();
  const out = new Uint8Array(indexStart + index.length + footerBytes.length + 8);
  const view = new DataView(out.buffer);
  view.setUint32(0, MAGIC, true);
  at = 4;
  for (const p of parsed) {
    out.set(p.bytes.subarray(4, p.dataEnd), at);
    at += p.dataEnd - 4;
  }
  out.set(index.bytes(), at);
  at += index.length;
  out.set(footerBytes, at);
  at += footerBytes.length;
  view.setUint32(at, footerBytes.length, true);
  view.setUint32(at + 4, MAGIC, true);
  return out;
}
