/**
 * Ranged row-group reads of a Parquet file: the footer is fetched by range from the end of the file,
 * then each row group's column chunks (only the projected ones with `columns`) by range, and each
 * row group is decoded by parquet-wasm from a small standalone Parquet buffer: `PAR1`, the fetched
 * chunks, and the original footer rewritten to hold that one row group at the new offsets. Memory
 * holds the footer and one row group (compressed and decoded), never the file.
 *
 * Why a rebuilt buffer: parquet-wasm reads ranges itself only through fetch(url) or a Blob, and a
 * read that fails inside it traps the wasm instance. Here every byte is fetched in JS (a store error
 * stays the store's, retryable or not), and parquet-wasm only decodes bytes it already has. It gets
 * them through a Blob look-alike over the fetched parts (ParquetBytes), not a Blob: a Blob would copy
 * the row group once more, into memory outside the JS heap that the GC does not count.
 *
 * Decoded batches leave wasm through the Arrow C Data Interface (arrow-import.ts), into a fresh
 * buffer per column buffer or, with a ReusedBatchMemory, into slabs reused batch after batch.
 */
import * as arrow from 'apache-arrow';
import { ParquetFile, wasmMemory, type RecordBatch as WasmRecordBatch, type Table as WasmTable } from 'parquet-wasm';
import { CorruptMetadataError, DataFileChecksumError } from '../errors.js';
import { checksum, CHUNK_CRC_KEY, crcHex, parseChunkChecksums } from './data-file-checksum.js';
import { freshBatchMemory, importWasmBatch, type BatchMemory } from './arrow-import.js';
import { normalizeArrowTypes } from './normalize.js';
import {
  decodeStruct,
  encodeStruct,
  getField,
  removeField,
  setI64,
  T,
  ThriftDecodeError,
  type ThriftList,
  type ThriftStruct,
} from './thrift-compact.js';

/** Where the bytes of one Parquet file come from: its size and ranged reads [start, end). */
export interface ByteSource {
  /** Size of the file in bytes. */
  size: number;
  /** Bytes [start, end) of the file; a shorter answer means the file is shorter than `size`. */
  read(start: number, end: number): Promise<Uint8Array>;
  /** Names the file in error messages. */
  name: string;
  /** The CRC-32 of the footer its manifest entry records (data-file-checksum.ts): checked when set. */
  footerCrc32?: number;
  /** The table the file belongs to, for error messages. */
  table?: string;
}

/** Rows per decoded batch of a row group: small enough that wasm and JS hold a few MB per batch. */
export const DECODE_BATCH_ROWS = 32_768;
/** Bytes fetched from the end for the footer in one read; a longer footer costs a second read. */
export const FOOTER_READ_BYTES = 64 * 1024;
/** Chunks of one row group closer than this are fetched in one read (a projection skips larger gaps). */
const COALESCE_GAP_BYTES = 256 * 1024;
const MAGIC = new Uint8Array([0x50, 0x41, 0x52, 0x31]); // PAR1

/** One column chunk of a row group: where its bytes are and the column it belongs to. */
interface ChunkLayout {
  /** Top-level column name (first element of path_in_schema). */
  column: string;
  start: number;
  length: number;
}

/** A row group of the footer: rows, compressed bytes and chunks. */
export interface RowGroupInfo {
  numRows: number;
  /** Bytes of its column chunks (compressed). */
  bytes: number;
  /** Min and max of its INT32 / INT64 columns (by top-level name) whose chunk statistics record them. */
  intStats: Map<string, IntRange>;
}

/** The smallest and largest value of an integer column chunk. */
export interface IntRange {
  min: bigint;
  max: bigint;
}

/**
 * The rows of a sorted file a read wants (a key range), decided row group by row group: first from
 * the chunk statistics, then from the row group's decoded `columns` (the keys); only the rows in
 * the span are then decoded (parquet-rs skips the pages before and after it).
 */
export interface RowSpanFilter {
  /** The columns `span` reads, fetched and decoded before the others. */
  readonly columns: readonly string[];
  /** False when the row group's integer column ranges show that none of its rows is wanted. */
  rowGroupMay(stats: ReadonlyMap<string, IntRange>): boolean;
  /** Rows [start, end) of a row group, given its `columns` (varve types), that may be wanted. */
  span(keys: arrow.Table): [number, number];
  /** What the readers did, for `--explain` (they add to it). */
  readonly counts: RowSpanCounts;
  /** Bounded on both sides (a point or a closed range): few rows, so worth reading on one thread. */
  readonly closed: boolean;
}

/** Row groups skipped by statistics or by their decoded keys, row groups read, and the rows decoded of them. */
export interface RowSpanCounts {
  skippedByStats: number;
  skippedByKeys: number;
  read: number;
  rowsRead: number;
}

/** Rows [offset, offset + limit) of a row group. */
export interface RowSlice {
  offset: number;
  limit: number;
}

/**
 * The rows of row group `g` (its standalone file, which holds the filter's columns) that `filter`
 * wants, or undefined when none (counted in the filter either way).
 */
export async function rowGroupSpan(
  file: ParquetBytes,
  footer: ParquetFooter,
  g: number,
  filter: RowSpanFilter,
): Promise<RowSlice | undefined> {
  const rows = footer.rowGroups[g].numRows;
  const keys = normalizeArrowTypes(arrow.tableFromIPC(await decodeRowGroupIPC(file, filter.columns, rows)));
  const [start, end] = filter.span(keys);
  if (end <= start) {
    filter.counts.skippedByKeys++;
    return undefined;
  }
  filter.counts.read++;
  filter.counts.rowsRead += end - start;
  return { offset: start, limit: end - start };
}

/** The chunk statistics check of `filter` for row group `g` (counted when it skips). */
export function rowGroupMay(footer: ParquetFooter, g: number, filter: RowSpanFilter): boolean {
  if (filter.rowGroupMay(footer.rowGroups[g].intStats)) return true;
  filter.counts.skippedByStats++;
  return false;
}

/** The columns to fetch of a row group for `wanted` (undefined: all) and the filter's columns. */
function withSpanColumns(
  wanted: ReadonlySet<string> | undefined,
  filter: RowSpanFilter | undefined,
): ReadonlySet<string> | undefined {
  return wanted === undefined || filter === undefined ? wanted : new Set([...wanted, ...filter.columns]);
}

/** A parsed footer: the decoded FileMetaData and what callers need of it. */
export interface ParquetFooter {
  /** The file's name (for error messages). */
  name: string;
  numRows: number;
  rowGroups: RowGroupInfo[];
  /** Top-level column names in file order (from the schema). */
  columns: string[];
  /** @internal */
  meta: ThriftStruct;
  /** @internal */
  chunks: ChunkLayout[][];
  /** CRC-32 of each chunk (by row group, chunk), when the file was written with checksums; checked on every fetch. */
  chunkCrcs?: number[][];
  /** The table named in the footer or by the reader, for error messages. */
  table?: string;
}

const decoder = new TextDecoder();

function i64(s: ThriftStruct, id: number): number | undefined {
  const f = getField(s, id);
  if (f === undefined) return undefined;
  if (typeof f.value !== 'bigint') throw new CorruptMetadataError(`footer field ${id} is not an integer`);
  return Number(f.value);
}

function list(s: ThriftStruct, id: number): ThriftList | undefined {
  const f = getField(s, id);
  if (f === undefined) return undefined;
  if (typeof f.value !== 'object' || !('kind' in f.value) || f.value.kind !== 'list')
    throw new CorruptMetadataError(`footer field ${id} is not a list`);
  return f.value;
}

function struct(v: unknown, what: string): ThriftStruct {
  if (typeof v !== 'object' || v === null || !('kind' in v) || (v as ThriftStruct).kind !== 'struct')
    throw new CorruptMetadataError(`${what} is not a struct`);
  return v as ThriftStruct;
}

/** Reads and parses the footer of `src` (one read of its last 64 KiB; a second for a longer footer). */
export async function readParquetFooter(src: ByteSource): Promise<ParquetFooter> {
  if (src.size < 12) throw new CorruptMetadataError(`${src.name} has ${src.size} bytes, too few for a Parquet file`);
  const tailStart = Math.max(0, src.size - FOOTER_READ_BYTES);
  const tail = await src.read(tailStart, src.size);
  if (tail.length !== src.size - tailStart)
    throw new DataFileChecksumError(
      src.name,
      src.table,
      `it is shorter than its recorded size of ${src.size} bytes (cut short)`,
    );
  const end = tail.subarray(tail.length - 8);
  if (!MAGIC.every((b, i) => end[4 + i] === b))
    throw new CorruptMetadataError(`${src.name} does not end with the Parquet magic PAR1`);
  const footerLength = new DataView(end.buffer, end.byteOffset, 8).getUint32(0, true);
  if (footerLength + 12 > src.size)
    throw new CorruptMetadataError(`${src.name}: footer length ${footerLength} exceeds the file (${src.size} bytes)`);
  let footer: Uint8Array;
  if (footerLength + 8 <= tail.length) footer = tail.subarray(tail.length - 8 - footerLength, tail.length - 8);
  else {
    footer = await src.read(src.size - 8 - footerLength, src.size - 8);
    if (footer.length !== footerLength)
      throw new DataFileChecksumError(
        src.name,
        src.table,
        `it is shorter than its recorded size of ${src.size} bytes (cut short)`,
      );
  }
  // Checked before the footer is decoded: what it says about the chunks (their places, their CRCs) is then the writer's.
  if (src.footerCrc32 !== undefined) {
    const crc = checksum(end, checksum(footer));
    if (crc !== src.footerCrc32) {
      throw new DataFileChecksumError(
        src.name,
        src.table,
        `its footer has CRC-32 ${crcHex(crc)}, its manifest entry records ${crcHex(src.footerCrc32)}`,
      );
    }
  }
  let meta: ThriftStruct;
  try {
    meta = decodeStruct(footer).struct;
  } catch (e) {
    if (e instanceof ThriftDecodeError)
      throw new CorruptMetadataError(`${src.name}: the Parquet footer cannot be decoded: ${e.message}`, { cause: e });
    throw e;
  }
  return describeFooter(meta, src);
}

function describeFooter(meta: ThriftStruct, src: ByteSource): ParquetFooter {
  if (getField(meta, 8) !== undefined)
    throw new CorruptMetadataError(`${src.name} is an encrypted Parquet file, which varve cannot read`);
  const columns = topLevelColumns(meta, src);
  const rowGroups: RowGroupInfo[] = [];
  const chunks: ChunkLayout[][] = [];
  for (const item of list(meta, 4)?.items ?? []) {
    const { info, layout } = describeRowGroup(struct(item, 'row group'), src);
    rowGroups.push(info);
    chunks.push(layout);
  }
  const kv = keyValues(meta);
  const table = src.table ?? kv.get('varve.table');
  const chunkCrcs = chunkChecksumsOf(kv, chunks, src, table);
  return {
    name: src.name,
    numRows: i64(meta, 3) ?? 0,
    rowGroups,
    columns,
    meta,
    chunks,
    ...(chunkCrcs ? { chunkCrcs } : {}),
    ...(table !== undefined ? { table } : {}),
  };
}

/** The top-level column names in file order: the schema is flattened depth-first, the root's children are the columns. */
function topLevelColumns(meta: ThriftStruct, src: ByteSource): string[] {
  const schema = (list(meta, 2)?.items ?? []).map((s) => struct(s, 'schema element'));
  const columns: string[] = [];
  const rootChildren = schema.length > 0 ? (i64(schema[0], 5) ?? 0) : 0;
  let at = 1;
  const skip = (): void => {
    const el = schema[at++];
    if (el === undefined) throw new CorruptMetadataError(`${src.name}: the Parquet schema is truncated`);
    const n = i64(el, 5) ?? 0;
    for (let i = 0; i < n; i++) skip();
  };
  for (let c = 0; c < rootChildren; c++) {
    const el = schema[at];
    const name = getField(el ?? { kind: 'struct', fields: [] }, 4)?.value;
    columns.push(name instanceof Uint8Array ? decoder.decode(name) : '');
    skip();
  }
  return columns;
}

/** A row group's size and integer statistics, and where each of its column chunks lies (checked against the file). */
function describeRowGroup(rg: ThriftStruct, src: ByteSource): { info: RowGroupInfo; layout: ChunkLayout[] } {
  const groupRows = i64(rg, 3) ?? 0;
  const layout: ChunkLayout[] = [];
  const intStats = new Map<string, IntRange>();
  for (const c of list(rg, 1)?.items ?? []) {
    const chunk = struct(c, 'column chunk');
    if (getField(chunk, 1) !== undefined)
      throw new CorruptMetadataError(
        `${src.name} keeps column data in another file (file_path), which varve cannot read`,
      );
    const md = getField(chunk, 3);
    if (md === undefined)
      throw new CorruptMetadataError(
        `${src.name} has a column chunk without metadata (encrypted columns are not supported)`,
      );
    const cmd = struct(md.value, 'column metadata');
    const path = list(cmd, 3)?.items ?? [];
    const column = path[0] instanceof Uint8Array ? decoder.decode(path[0]) : '';
    const { start, length } = chunkRange(cmd);
    if (groupRows === 0) {
      // A row group of no rows has nothing to read (pyarrow writes one for an empty table, its
      // chunks' data page offset 0): its chunks are kept as empty ones, and readers skip it.
      layout.push({ column, start: 4, length: 0 });
      continue;
    }
    if (start < 4 || length < 0 || start + length > src.size) {
      throw new CorruptMetadataError(
        `${src.name}: column chunk of ${column} at [${start}, ${start + length}) lies outside the file (${src.size} bytes)`,
      );
    }
    layout.push({ column, start, length });
    const range = path.length === 1 ? intRange(cmd) : undefined;
    if (range !== undefined) intStats.set(column, range);
  }
  return { info: { numRows: groupRows, bytes: layout.reduce((n, c) => n + c.length, 0), intStats }, layout };
}

/** The chunk checksums the footer records (undefined: none), which must cover exactly its row groups and chunks. */
function chunkChecksumsOf(
  kv: Map<string, string>,
  chunks: ChunkLayout[][],
  src: ByteSource,
  table: string | undefined,
): number[][] | undefined {
  const chunkCrcs = parseChunkChecksums(kv.get(CHUNK_CRC_KEY), src.name, table);
  if (
    chunkCrcs !== undefined &&
    (chunkCrcs.length !== chunks.length || chunkCrcs.some((g, i) => g.length !== chunks[i].length))
  ) {
    throw new DataFileChecksumError(
      src.name,
      table,
      `its footer records checksums for ${chunkCrcs.length} row groups of ${chunkCrcs.map((g) => g.length).join('/')} chunks, but has ${chunks.length} of ${chunks.map((g) => g.length).join('/')}`,
    );
  }
  return chunkCrcs;
}

/**
 * The min and max of an INT32 / INT64 column chunk from its statistics (min_value / max_value, 6 and 5,
 * else the older min / max, 2 and 1, which are the same for signed integers), little-endian; undefined
 * when it records none or the column is of another physical type.
 */
function intRange(cmd: ThriftStruct): IntRange | undefined {
  const physical = i64(cmd, 1);
  const width = physical === 1 ? 4 : physical === 2 ? 8 : 0;
  const stats = getField(cmd, 12)?.value;
  if (width === 0 || typeof stats !== 'object' || stats === null || (stats as ThriftStruct).kind !== 'struct')
    return undefined;
  const bytes = (id: number): Uint8Array | undefined => {
    const v = getField(stats as ThriftStruct, id)?.value;
    return v instanceof Uint8Array && v.length === width ? v : undefined;
  };
  const min = bytes(6) ?? bytes(2);
  const max = bytes(5) ?? bytes(1);
  if (min === undefined || max === undefined) return undefined;
  const read = (b: Uint8Array) => {
    const view = new DataView(b.buffer, b.byteOffset, width);
    return width === 4 ? BigInt(view.getInt32(0, true)) : view.getBigInt64(0, true);
  };
  return { min: read(min), max: read(max) };
}

/** The footer's key-value metadata (field 5), keys and values as strings. */
function keyValues(meta: ThriftStruct): Map<string, string> {
  const out = new Map<string, string>();
  for (const item of list(meta, 5)?.items ?? []) {
    const kv = struct(item, 'key-value metadata');
    const k = getField(kv, 1)?.value;
    const v = getField(kv, 2)?.value;
    if (k instanceof Uint8Array) out.set(decoder.decode(k), v instanceof Uint8Array ? decoder.decode(v) : '');
  }
  return out;
}

/** Throws DataFileChecksumError unless chunk `c` of row group `g`, fetched as `bytes`, has the CRC its footer records. */
function checkChunk(footer: ParquetFooter, g: number, c: number, bytes: Uint8Array): void {
  const want = footer.chunkCrcs?.[g]?.[c];
  if (want === undefined) return;
  const got = checksum(bytes);
  if (got !== want) {
    const { column, start, length } = footer.chunks[g][c];
    throw new DataFileChecksumError(
      footer.name,
      footer.table,
      `column ${column} of row group ${g} (bytes [${start}, ${start + length})) has CRC-32 ${crcHex(got)}, its footer records ${crcHex(want)}`,
    );
  }
}

/** A chunk's bytes as parquet-rs finds them: from the dictionary page when there is one, for total_compressed_size. */
function chunkRange(cmd: ThriftStruct): { start: number; length: number } {
  const data = i64(cmd, 9) ?? 0;
  const dict = i64(cmd, 11);
  const start = dict !== undefined && dict > 0 && dict < data ? dict : data;
  return { start, length: i64(cmd, 7) ?? 0 };
}

/**
 * A standalone Parquet file (a Blob) holding row group `g` of the footer, with only the chunks
 * of `wanted` columns (all when undefined) filled in: `fetch` returns the file's bytes [start, end).
 * Chunks of other columns stay in the footer (the schema is unchanged) as empty chunks at offset 4;
 * a reader must then project to `wanted`.
 */
export async function rowGroupFile(
  footer: ParquetFooter,
  g: number,
  wanted: ReadonlySet<string> | undefined,
  fetch: (start: number, end: number) => Promise<Uint8Array>,
): Promise<{ file: ParquetBytes; fetched: number }> {
  const layout = footer.chunks[g];
  const picked = layout.map((c, i) => ({ ...c, i })).filter((c) => wanted === undefined || wanted.has(c.column));
  // Fetch ranges: the picked chunks in file order, neighbours closer than COALESCE_GAP_BYTES merged.
  const sorted = [...picked].sort((a, b) => a.start - b.start);
  const ranges: { start: number; end: number }[] = [];
  for (const c of sorted) {
    const last = ranges[ranges.length - 1];
    if (last !== undefined && c.start - last.end <= COALESCE_GAP_BYTES)
      last.end = Math.max(last.end, c.start + c.length);
    else ranges.push({ start: c.start, end: c.start + c.length });
  }
  // The rewritten footer is encoded before the buffer is sized; chunks go in file order from byte 4.
  const newStart = new Map<number, number>();
  let at = 4;
  for (const c of sorted) {
    newStart.set(c.i, at);
    at += c.length;
  }
  const metaBytes = encodeStruct(rewriteFooter(footer, g, newStart));
  const tail = new Uint8Array(8);
  new DataView(tail.buffer).setUint32(0, metaBytes.length, true);
  tail.set(MAGIC, 4);
  // The parts are the fetched ranges themselves (subarrays): nothing is copied until parquet-wasm reads.
  const parts: Uint8Array[] = [MAGIC];
  let fetched = 0;
  for (const r of ranges) {
    const got = await fetch(r.start, r.end);
    if (got.length !== r.end - r.start)
      throw new DataFileChecksumError(
        footer.name,
        footer.table,
        `row group ${g}: bytes [${r.start}, ${r.end}) are past the end of the file (cut short)`,
      );
    fetched += got.length;
    for (const c of sorted) {
      if (c.start < r.start || c.start + c.length > r.end) continue;
      const chunk = got.subarray(c.start - r.start, c.start - r.start + c.length);
      // Before parquet-wasm sees a byte of it: a damaged page must fail here, not decode to other rows.
      checkChunk(footer, g, c.i, chunk);
      parts.push(chunk);
    }
  }
  parts.push(metaBytes, tail);
  return { file: parquetBytes(parts), fetched };
}

/** A file's bytes as parquet-wasm reads a Blob: its size, and slice(start, end).arrayBuffer(). */
export interface ParquetBytes {
  readonly size: number;
  slice(start?: number, end?: number): { arrayBuffer(): Promise<ArrayBuffer> };
  /** The bytes as a real Blob (one copy), for what must post them to a worker. */
  blob(): Blob;
}

/**
 * The concatenation of `parts` as ParquetBytes. parquet-wasm 0.8 (pinned) reads a "Blob" only
 * through `size` and `slice(start, end).arrayBuffer()` (its JS glue calls exactly these; a test
 * decodes through it), so each read copies just the asked range, once.
 */
export function parquetBytes(parts: readonly Uint8Array[]): ParquetBytes {
  const starts: number[] = [];
  let size = 0;
  for (const p of parts) {
    starts.push(size);
    size += p.length;
  }
  const read = (start: number, end: number): ArrayBuffer => {
    let i = 0;
    while (i < parts.length - 1 && starts[i + 1] <= start) i++;
    const whole = wholeBuffer(parts, starts, i, start, end);
    if (whole !== undefined) return whole;
    const out = new Uint8Array(end - start);
    for (let at = start; at < end; i++) {
      const n = Math.min(parts[i].length - (at - starts[i]), end - at);
      out.set(parts[i].subarray(at - starts[i], at - starts[i] + n), at - start);
      at += n;
    }
    return out.buffer;
  };
  // Blob.slice's clamping: negative positions count from the end.
  const clamp = (x: number | undefined, dflt: number): number =>
    x === undefined ? dflt : x < 0 ? Math.max(size + x, 0) : Math.min(x, size);
  return {
    size,
    blob: () => new Blob(parts as Uint8Array<ArrayBuffer>[]),
    slice(start, end) {
      const s = clamp(start, 0);
      const e = Math.max(s, clamp(end, size));
      return { arrayBuffer: async () => read(s, e) };
    },
  };
}

/**
 * The ArrayBuffer that bytes [start, end) of the parts are, when they are one fetched range exactly
 * (the parts from part `i` on are adjacent views of one buffer that they cover whole): parquet-wasm
 * asks for all the chunks of a row group in one read, and a store returns each range in its own
 * buffer, so that read needs no copy (wasm only reads it, into its own memory).
 */
function wholeBuffer(
  parts: readonly Uint8Array[],
  starts: readonly number[],
  i: number,
  start: number,
  end: number,
): ArrayBuffer | undefined {
  const first = parts[i];
  const buffer = first.buffer;
  if (!(buffer instanceof ArrayBuffer) || first.byteOffset + (start - starts[i]) !== 0) return undefined;
  let j = i;
  while (starts[j] + parts[j].length < end) {
    const next = parts[j + 1];
    if (next === undefined || next.buffer !== buffer || next.byteOffset !== parts[j].byteOffset + parts[j].length)
      return undefined;
    j++;
  }
  return parts[j].byteOffset + (end - starts[j]) === buffer.byteLength ? buffer : undefined;
}

/** parquet-wasm's reader over `bytes` (typed for a Blob; see ParquetBytes for what it calls). */
function openParquetBytes(bytes: ParquetBytes | Blob): Promise<ParquetFile> {
  return ParquetFile.fromFile(bytes as unknown as Blob);
}

/** FileMetaData with row group `g` only, its chunks moved to `newStart` (absent: an empty chunk). */
function rewriteFooter(footer: ParquetFooter, g: number, newStart: Map<number, number>): ThriftStruct {
  const rg = struct(list(footer.meta, 4)!.items[g], 'row group');
  const chunks = list(rg, 1)!.items.map((item, i) => {
    const chunk = struct(item, 'column chunk');
    const cmd = struct(getField(chunk, 3)!.value, 'column metadata');
    const { start } = chunkRange(cmd);
    const to = newStart.get(i);
    const newCmd: ThriftStruct = { kind: 'struct', fields: [...cmd.fields] };
    // The bloom filter (14, 15) lies elsewhere in the file; the size statistics stay.
    removeField(newCmd, 14);
    removeField(newCmd, 15);
    const newChunk: ThriftStruct = { kind: 'struct', fields: chunk.fields.filter((f) => f.id < 4 || f.id > 7) };
    if (to !== undefined) {
      const delta = to - start;
      for (const id of [9, 10, 11]) {
        const v = i64(cmd, id);
        if (v !== undefined) setI64(newCmd, id, BigInt(v + delta));
      }
      const fo = i64(chunk, 2);
      if (fo !== undefined) setI64(newChunk, 2, BigInt(fo + delta));
    } else {
      // Not read (projected away): an empty chunk at the start of the data.
      for (const id of [10, 11]) removeField(newCmd, id);
      setI64(newCmd, 9, 4n);
      setI64(newCmd, 7, 0n);
      if (i64(chunk, 2) !== undefined) setI64(newChunk, 2, 4n);
    }
    newChunk.fields = newChunk.fields.map((f) => (f.id === 3 ? { ...f, value: newCmd } : f));
    return newChunk as ThriftStruct;
  });
  const newRg: ThriftStruct = {
    kind: 'struct',
    fields: rg.fields.map((f) => (f.id === 1 ? { ...f, value: { ...(f.value as ThriftList), items: chunks } } : f)),
  };
  if (i64(rg, 5) !== undefined) setI64(newRg, 5, 4n);
  if (getField(rg, 7) !== undefined) {
    removeField(newRg, 7);
    newRg.fields.push({ id: 7, type: T.I16, value: 0n });
    newRg.fields.sort((a, b) => a.id - b.id);
  }
  const meta: ThriftStruct = {
    kind: 'struct',
    fields: footer.meta.fields.map((f) =>
      f.id === 4 ? { ...f, value: { ...(f.value as ThriftList), items: [newRg] } } : f,
    ),
  };
  setI64(meta, 3, BigInt(footer.rowGroups[g].numRows));
  return meta;
}

/**
 * Decodes a standalone one-row-group Parquet file (from rowGroupFile) to Arrow, one table per
 * batch of at most DECODE_BATCH_ROWS rows; with `columns`, only those (in file order). parquet-wasm's stream
 * decodes batch by batch, so its memory holds the compressed row group and one decoded batch, not
 * the decoded row group (the sync readParquet decodes it whole and ignores projections). Each
 * batch's buffers go into `memory` (see arrow-import.ts for what that means for
 * how long a batch stays valid).
 */
export async function* decodeRowGroupBatches(
  bytes: ParquetBytes,
  columns?: readonly string[],
  memory: BatchMemory = freshBatchMemory,
  slice?: RowSlice,
): AsyncGenerator<arrow.Table> {
  const file = await openParquetBytes(bytes);
  let reader: ReadableStreamDefaultReader<WasmRecordBatch> | undefined;
  let done = false;
  try {
    const stream = await file.stream({
      batchSize: DECODE_BATCH_ROWS,
      ...(columns === undefined ? {} : { columns: [...columns] }),
      ...slice,
    });
    reader = stream.getReader() as ReadableStreamDefaultReader<WasmRecordBatch>;
    for (;;) {
      const next = await reader.read();
      if (next.done) break;
      yield wasmBatchToArrow(next.value, memory);
    }
    done = true;
  } finally {
    // A consumer that stops early: the stream is cancelled before its file is freed.
    if (reader !== undefined && !done) await reader.cancel().catch(() => undefined);
    file.free();
  }
}

/**
 * Decodes the `columns` (in file order) of a standalone one-row-group Parquet file (from
 * rowGroupFile) of `rows` rows to Arrow IPC stream bytes, one batch: the step the decode pool's
 * workers run (decode-worker.ts), and the calling thread inline.
 */
export async function decodeRowGroupIPC(
  blob: Blob | ParquetBytes,
  columns: readonly string[],
  rows: number,
  slice?: RowSlice,
): Promise<Uint8Array> {
  const file = await openParquetBytes(blob);
  try {
    return (await file.read({ columns: [...columns], batchSize: Math.max(1, rows), ...slice })).intoIPCStream();
  } finally {
    file.free();
  }
}

/**
 * Decodes the `columns` of a standalone one-row-group Parquet file (from rowGroupFile) of `rows`
 * rows to one Arrow table, inline: as decodeRowGroupIPC, but its batch leaves wasm through the C
 * Data Interface (wasmBatchToArrow) instead of an IPC stream built in wasm, copied and parsed;
 * its buffers go into `memory` (default: an ArrayBuffer each).
 */
export async function decodeRowGroupArrow(
  bytes: ParquetBytes,
  columns: readonly string[],
  rows: number,
  slice?: RowSlice,
  memory: BatchMemory = freshBatchMemory,
): Promise<arrow.Table> {
  const file = await openParquetBytes(bytes);
  let table: WasmTable | undefined;
  try {
    table = await file.read({ columns: [...columns], batchSize: Math.max(1, rows), ...slice });
    if (table.numBatches !== 1) {
      // intoIPCStream consumes the handle: freeing it again below would fail ("null pointer passed to rust").
      const whole = table;
      table = undefined;
      return arrow.tableFromIPC(whole.intoIPCStream());
    }
    return wasmBatchToArrow(table.recordBatch(0)!, memory);
  } finally {
    table?.free();
    file.free();
  }
}

/**
 * A parquet-wasm batch as an Arrow JS table, the batch freed: copied out through the C Data
 * Interface into `memory`, or, for a column that way does not handle, through an IPC stream.
 */
function wasmBatchToArrow(batch: WasmRecordBatch, memory: BatchMemory): arrow.Table {
  let table: arrow.Table | undefined;
  const ffi = batch.toFFI();
  try {
    // Read after toFFI: an allocation there may have grown (moved) wasm memory.
    table = importWasmBatch(wasmMemory().buffer as ArrayBuffer, ffi.arrayAddr(), ffi.schemaAddr(), memory);
  } finally {
    ffi.free();
  }
  if (table !== undefined) {
    batch.free();
    return table;
  }
  return arrow.tableFromIPC(batch.intoIPCStream());
}

/**
 * The rows of a Parquet file, fetched by range: the footer first, then per row group only its
 * chunks (of `columns`, when given), decoded one batch (≤ DECODE_BATCH_ROWS rows) at a time.
 * `onRowGroup` is told each row group before its batches; `decodeError` maps an error of decoding
 * row group `group` (fetch errors pass unchanged). A consumer that stops early frees the row
 * group's wasm file.
 */
export async function* readRowGroupsRanged(
  src: ByteSource,
  opts: {
    columns?: readonly string[];
    footer?: ParquetFooter;
    onRowGroup?: (group: number) => void;
    /** False skips row group `group` (the file's rows [firstRow, firstRow + rows)) unfetched; default: every one is read. */
    rowGroupWanted?: (group: number, firstRow: number, rows: number) => boolean;
    decodeError?: (e: unknown, group: number) => unknown;
    /** Where decoded batches go (default: a fresh buffer each); one memory serves every row group. */
    memory?: BatchMemory;
    /** Only the rows of a key range (a sorted file): other row groups are skipped, and rows outside it not decoded. */
    span?: RowSpanFilter;
  } = {},
): AsyncGenerator<arrow.Table> {
  const footer = opts.footer ?? (await readParquetFooter(src));
  const wanted = opts.columns === undefined ? undefined : new Set(opts.columns);
  const span = opts.span;
  let firstRow = 0;
  for (let g = 0; g < footer.rowGroups.length; g++) {
    const rows = footer.rowGroups[g].numRows;
    firstRow += rows;
    if (rows === 0) continue;
    if (opts.rowGroupWanted !== undefined && !opts.rowGroupWanted(g, firstRow - rows, rows)) continue;
    if (span !== undefined && !rowGroupMay(footer, g, span)) continue;
    const { file } = await rowGroupFile(footer, g, withSpanColumns(wanted, span), (s, e) => src.read(s, e));
    let slice: RowSlice | undefined;
    try {
      if (span !== undefined && (slice = await rowGroupSpan(file, footer, g, span)) === undefined) continue;
    } catch (e) {
      throw opts.decodeError ? opts.decodeError(e, g) : e;
    }
    opts.onRowGroup?.(g);
    try {
      yield* decodeRowGroupBatches(file, opts.columns, opts.memory, slice);
    } catch (e) {
      throw opts.decodeError ? opts.decodeError(e, g) : e;
    }
  }
}
