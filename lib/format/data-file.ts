/**
 * Parquet data files. A data file holds every table column (schema order) then `_SEQUENCE_NUMBER`
 * and `_VALUE_KIND`, sorted by primary key; it is plain Parquet that any reader opens. Bulk writes
 * and reads go through parquet-wasm over Arrow IPC; footers are read with hyparquet over ranged GETs.
 */
import * as arrow from 'apache-arrow';
import { parquetMetadataAsync, parquetSchema, type AsyncBuffer } from 'hyparquet';
import {
  Compression,
  EnabledStatistics,
  Encoding,
  ParquetFile,
  readParquet,
  readSchema,
  Table as WasmTable,
  writeParquet,
  WriterPropertiesBuilder,
  WriterVersion,
  type WriterProperties,
} from 'parquet-wasm';
import {
  CorruptMetadataError,
  InvalidArgumentError,
  ObjectNotFoundError,
  SchemaMismatchError,
  VarveError,
} from '../errors.js';
import type { ParquetWriterOptions } from '../schema/options.js';
import { KIND_COLUMN, SEQUENCE_COLUMN } from '../schema/types.js';
import { openRanges, type ObjectStore } from '../store/object-store.js';
import { singleBatch } from './columns.js';
import { normalizeArrowTypes } from './normalize.js';
import { decodePool } from './decode-pool.js';
import { freshBatchMemory, ReusedBatchMemory, type BatchMemory } from './arrow-import.js';
import { withIcebergSchema } from './iceberg-footer.js';
import { CHUNK_CRC_KEY, sealDataFile, type DataFileCheck } from './data-file-checksum.js';
import {
  decodeRowGroupArrow,
  readParquetFooter,
  readRowGroupsRanged,
  rowGroupFile,
  rowGroupMay,
  rowGroupSpan,
  type ByteSource,
  type IntRange,
  type ParquetFooter,
  type RowSlice,
  type RowSpanFilter,
} from './row-group-reader.js';

/** Rows per row group unless the caller asks otherwise (~256k, per typescript-stack.md §7). */
export const DEFAULT_ROW_GROUP_SIZE = 262_144;
/** Rows per Arrow batch on read; parquet-rs's default of 1024 makes reads 2–4x slower. */
export const READ_BATCH_SIZE = 65_536;
/** Bytes fetched from the end of a file for its footer in one ranged GET (a larger footer costs a second GET). */
export const FOOTER_FETCH_BYTES = 64 * 1024;
/** The Parquet key-value metadata key where parquet-rs stores the Arrow schema; internal to the format. */
const ARROW_SCHEMA_KEY = 'ARROW:schema';

/** Codecs a data file may use. */
export type DataFileCompression = 'zstd' | 'lz4' | 'snappy' | 'uncompressed';

/** What `writeDataFile` needs besides the rows. */
export interface WriteDataFileOptions {
  compression: DataFileCompression;
  /** Parquet key-value metadata (e.g. the batch's sequence base); the reader returns it as is. */
  metadata?: Record<string, string>;
  /** Maximum rows per row group; DEFAULT_ROW_GROUP_SIZE when absent. */
  rowGroupSize?: number;
  /**
   * The column the file's rows ascend by (a primary-key table's first key column): stored
   * DELTA_BINARY_PACKED when it is an integer column, where sorted values pack into a few bits each.
   */
  sortedBy?: string;
  /** The table's `parquet.*` options (TableOptions.parquetWriter()); absent: parquet-rs's page sizes, dictionaries for Utf8 columns. */
  parquet?: ParquetWriterOptions;
  /**
   * Utf8 columns whose values are nearly all distinct (dictionary-choice.ts): written without the
   * dictionary they would get by default. A `parquet.enable.dictionary` option (the table's or the
   * column's) still decides over this.
   */
  uniqueColumns?: readonly string[];
}

/** What the footer of a data file says, read without downloading its data. */
export interface DataFileMetadata {
  numRows: number;
  keyValueMetadata: Record<string, string>;
  /** Top-level column names in file order. */
  columns: string[];
  /** Size of the file in bytes. */
  fileSize: number;
  numRowGroups: number;
}

const CODECS: Record<DataFileCompression, Compression> = {
  zstd: Compression.ZSTD,
  // LZ4_RAW: the Parquet LZ4 codec without the Hadoop framing (Parquet's deprecated LZ4).
  lz4: Compression.LZ4_RAW,
  snappy: Compression.SNAPPY,
  uncompressed: Compression.UNCOMPRESSED,
};

/**
 * Parquet bytes of a table in the data file layout (its last two columns must be the system
 * columns). Chunk statistics on, dictionary encoding only for Utf8 columns unless `opts.parquet`
 * says otherwise (with its page sizes and page format); sealed with its chunk
 * checksums (`footerChecksum(bytes)` is what its manifest entry records).
 */
export function writeDataFile(table: arrow.Table, opts: WriteDataFileOptions): Uint8Array {
  const props = dataFileWriterProperties(table.schema, opts);
  let wasmTable: WasmTable;
  try {
    wasmTable = WasmTable.fromIPCStream(arrow.tableToIPC(table, 'stream'));
  } catch (e) {
    props.free();
    throw e;
  }
  // writeParquet takes ownership of (and frees) both wasm handles, even when it throws.
  return sealDataFile(writeParquet(wasmTable, props)).bytes;
}

/**
 * Checks that `schema` is the data file layout (system columns last) and the options are valid,
 * and builds fresh writer properties for one file (writeDataFile, DataFileStreamWriter).
 */
export function dataFileWriterProperties(schema: arrow.Schema, opts: WriteDataFileOptions): WriterProperties {
  const fields = schema.fields;
  const seq = fields[fields.length - 2];
  const kind = fields[fields.length - 1];
  if (
    seq?.name !== SEQUENCE_COLUMN ||
    !arrow.DataType.isInt(seq.type) ||
    seq.type.bitWidth !== 64 ||
    kind?.name !== KIND_COLUMN ||
    !arrow.DataType.isInt(kind.type) ||
    kind.type.bitWidth !== 8
  ) {
    throw new SchemaMismatchError(
      `a data file must end with ${SEQUENCE_COLUMN} (Int64) and ${KIND_COLUMN} (Int8), but the table has (${schema.names.join(', ')}); build it with rowsToTable(fields, rows, system) or physicalArrowSchema`,
    );
  }
  const codec = CODECS[opts.compression];
  if (codec === undefined) {
    throw new InvalidArgumentError(
      `unknown compression ${String(opts.compression)}; use zstd, lz4, snappy or uncompressed`,
    );
  }
  if (opts.metadata !== undefined && ARROW_SCHEMA_KEY in opts.metadata) {
    throw new InvalidArgumentError(
      `metadata key ${ARROW_SCHEMA_KEY} is reserved for the Arrow schema; pick another key`,
    );
  }
  if (opts.metadata !== undefined && CHUNK_CRC_KEY in opts.metadata) {
    throw new InvalidArgumentError(
      `metadata key ${CHUNK_CRC_KEY} is reserved for the column chunk checksums; pick another key`,
    );
  }
  const rowGroupSize = opts.rowGroupSize ?? DEFAULT_ROW_GROUP_SIZE;
  if (!Number.isInteger(rowGroupSize) || rowGroupSize < 1) {
    throw new InvalidArgumentError(`rowGroupSize must be a positive integer, got ${rowGroupSize}`);
  }
  const sorted = opts.sortedBy === undefined ? undefined : fields.find((f) => f.name === opts.sortedBy);
  if (opts.sortedBy !== undefined && sorted === undefined) {
    throw new InvalidArgumentError(
      `sortedBy names ${opts.sortedBy}, which is not a column of the data file (${schema.names.join(', ')}); pass the first primary-key column`,
    );
  }
  return writerProperties(
    codec,
    rowGroupSize,
    withIcebergSchema(schema, opts.metadata ?? {}),
    fields,
    sorted !== undefined && arrow.DataType.isInt(sorted.type) ? sorted.name : undefined,
    opts.parquet,
    new Set(opts.uniqueColumns),
  );
}

/**
 * Fresh writer properties per file: writeParquet consumes the handle, and a consumed handle passed
 * again silently means parquet-rs defaults (uncompressed, no key-value metadata), so reuse is unsafe.
 */
function writerProperties(
  codec: Compression,
  rowGroupSize: number,
  metadata: Record<string, string>,
  fields: arrow.Field[],
  deltaKey: string | undefined,
  parquet: ParquetWriterOptions | undefined,
  unique: ReadonlySet<string>,
): WriterProperties {
  let b = new WriterPropertiesBuilder()
    .setCompression(codec)
    .setMaxRowGroupSize(rowGroupSize)
    .setStatisticsEnabled(EnabledStatistics.Chunk)
    .setDictionaryEnabled(false)
    // The arrival sequence numbers: DELTA_BINARY_PACKED (bit-packed differences, then the codec)
    // instead of PLAIN. In key order they are a permutation of the write's arrival order, which
    // zstd compresses slowly and poorly as plain 8-byte words; packed they are smaller and the
    // encode costs a third less CPU (1M rows of the bench write: ≈ 1.5 → 1.0 s, 20.1 → 19.2 MB).
    // Every Parquet reader we meet reads it (parquet-rs, hyparquet, DuckDB, pyarrow, parquet-mr).
    .setColumnEncoding(SEQUENCE_COLUMN, Encoding.DELTA_BINARY_PACKED)
    .setCreatedBy('varve');
  // A sorted integer key: its differences are small and non-negative, a few bits each, where PLAIN
  // plus zstd spends 8 bytes of input per value (bench write, 1M BIGINT keys: encode ≈ 0.84 →
  // 0.71 s CPU, file 19.2 → 18.1 MB).
  if (deltaKey !== undefined) b = b.setColumnEncoding(deltaKey, Encoding.DELTA_BINARY_PACKED);
  // Dictionaries for the table's columns (never the system columns, the last two): by default for
  // strings only, not those whose values are nearly all distinct; `parquet.enable.dictionary` (and
  // its `#<col>` form) chooses otherwise.
  for (const f of fields.slice(0, -2)) {
    const on =
      parquet?.columnDictionary[f.name] ??
      parquet?.dictionary ??
      (arrow.DataType.isUtf8(f.type) && !unique.has(f.name));
    if (on) b = b.setColumnDictionaryEnabled(f.name, true);
  }
  if (parquet !== undefined) {
    b = b.setDictionaryPageSizeLimit(parquet.dictionaryPageSize).setDataPageSizeLimit(parquet.dataPageSize);
    if (parquet.writerVersion === 2) b = b.setWriterVersion(WriterVersion.V2);
  }
  const entries = Object.entries(metadata);
  if (entries.length > 0) b = b.setKeyValueMetadata(new Map(entries));
  return b.build();
}

/**
 * The Arrow table in a data file's bytes, every column in its declared type (see normalize.ts).
 * With `columns`, only those, in that order (read through the async ParquetFile, because the sync
 * reader ignores projections).
 */
export async function readDataFile(bytes: Uint8Array, opts: { columns?: string[] } = {}): Promise<arrow.Table> {
  try {
    if (opts.columns === undefined) {
      const table = arrow.tableFromIPC(readParquet(bytes, { batchSize: READ_BATCH_SIZE }).intoIPCStream());
      return normalizeArrowTypes(table);
    }
    const available = arrow.tableFromIPC(readSchema(bytes).intoIPCStream()).schema.names;
    for (const c of opts.columns) {
      if (!available.includes(c)) {
        throw new SchemaMismatchError(`the data file has no column ${c}; it has ${available.join(', ')}`, c);
      }
    }
    const file = await ParquetFile.fromFile(new Blob([bytes]));
    let table: arrow.Table;
    try {
      table = arrow.tableFromIPC(
        (await file.read({ columns: opts.columns, batchSize: READ_BATCH_SIZE })).intoIPCStream(),
      );
    } finally {
      file.free();
    }
    return normalizeArrowTypes(selectColumns(table, opts.columns));
  } catch (e) {
    throw asReadError(e);
  }
}

/**
 * A data file opened once for several decodes: a projection of some row groups at a time (the
 * merged read decodes keys first, then the value columns of the row groups that hold winners).
 * Holds a copy of the file's bytes and a wasm handle until `free()`.
 */
export interface DataFileDecoder {
  /** Top-level column names in file order. */
  readonly columns: string[];
  /** Rows of each row group, in file order (row group g holds the rows after those of groups < g). */
  readonly rowGroupRows: number[];
  /** Min and max of each row group's integer columns from its chunk statistics (ranged decoders only). */
  readonly rowGroupStats?: ReadonlyArray<ReadonlyMap<string, IntRange>>;
  /**
   * The named columns (in that order, every one must exist) of the given row groups (default:
   * all), as one single-batch table per row group, each in the declared varve types.
   */
  readRowGroups(columns: string[], rowGroups?: number[]): Promise<arrow.Table[]>;
  /** Releases the wasm handle or the file's RangeReader; reads after this fail. Safe more than once. */
  free(): Promise<void>;
}

/** The checks of a DataFileDecoder.readRowGroups call: the decoder is open and has every asked column. */
function checkReadable(freed: boolean, columns: readonly string[], names: readonly string[], what: string): void {
  if (freed) throw new InvalidArgumentError('the data file decoder was freed; open the file again');
  for (const c of names) {
    if (!columns.includes(c))
      throw new SchemaMismatchError(`${what} has no column ${c}; it has ${columns.join(', ')}`, c);
  }
}

/** Opens a data file's bytes for projected, row-group-wise decoding (see DataFileDecoder). */
export async function openDataFile(bytes: Uint8Array): Promise<DataFileDecoder> {
  let file: ParquetFile;
  try {
    file = await ParquetFile.fromFile(new Blob([bytes]));
  } catch (e) {
    throw asReadError(e);
  }
  try {
    const md = file.metadata();
    const rowGroupRows = md.rowGroups().map((g) => g.numRows());
    const columns = arrow.tableFromIPC(readSchema(bytes).intoIPCStream()).schema.fields.map((f) => f.name);
    let freed = false;
    return {
      columns,
      rowGroupRows,
      async readRowGroups(names, rowGroups) {
        checkReadable(freed, columns, names, 'the data file');
        const groups = rowGroups ?? rowGroupRows.map((_, g) => g);
        const out: arrow.Table[] = [];
        try {
          // One read per row group, with a batch as large as the group: one batch each, no concat.
          for (const g of groups) {
            const rows = rowGroupRows[g];
            if (rows === undefined)
              throw new InvalidArgumentError(`row group ${g} does not exist; the file has ${rowGroupRows.length}`);
            const t = arrow.tableFromIPC(
              (await file.read({ columns: names, rowGroups: [g], batchSize: Math.max(1, rows) })).intoIPCStream(),
            );
            out.push(normalizeArrowTypes(singleBatch(selectColumns(t, names))));
          }
        } catch (e) {
          throw asReadError(e);
        }
        return out;
      },
      async free() {
        if (!freed) file.free();
        freed = true;
      },
    };
  } catch (e) {
    file.free();
    throw asReadError(e);
  }
}

/**
 * A data file in a store opened for projected, row-group-wise decoding by range (the
 * DataFileDecoder of `openDataFile` without the file's bytes): the footer is fetched from the end
 * of the file, then each `readRowGroups` fetches only the asked columns' chunks of the asked row
 * groups and decodes them from a standalone one-row-group buffer (row-group-reader.ts). Memory
 * holds the footer and the row groups being decoded, never the file. `size` (from the manifest) is
 * the object's size when known (else one head). Store errors stay the store's. Row groups decoded
 * inline put their buffers into `memory` when given (see PooledBatchMemory), else fresh ones.
 */
export async function openDataFileRanged(
  store: ObjectStore,
  key: string,
  size?: number,
  check: DataFileCheck = {},
  span?: RowSpanFilter,
  memory?: BatchMemory,
): Promise<DataFileDecoder> {
  const src = await storeSource(store, key, size, check);
  let footer: ParquetFooter;
  let slices: { group: number; slice: RowSlice | undefined; rows: number }[];
  try {
    footer = await readParquetFooter(src);
    // With a span, the decoder's row groups are the slices of the file's that hold wanted rows.
    slices =
      span === undefined
        ? footer.rowGroups.map((g, i) => ({ group: i, slice: undefined as RowSlice | undefined, rows: g.numRows }))
        : await spanSlices(src, footer, span);
  } catch (e) {
    await src.close();
    throw e;
  }
  const rowGroupRows = slices.map((s) => s.rows);
  const columns = footer.columns;
  let freed = false;
  return {
    columns,
    rowGroupRows,
    rowGroupStats: slices.map((s) => footer.rowGroups[s.group].intStats),
    async readRowGroups(names, rowGroups) {
      checkReadable(freed, columns, names, `data file ${key}`);
      const wanted = new Set(names);
      const out: arrow.Table[] = [];
      for (const g of rowGroups ?? rowGroupRows.map((_, i) => i)) {
        const s = slices[g];
        if (s === undefined)
          throw new InvalidArgumentError(
            `row group ${g} does not exist in ${key}; the file has ${rowGroupRows.length}`,
          );
        out.push(await decodeRowGroup(src, footer, s.group, names, wanted, s.slice, memory));
      }
      return out;
    },
    free() {
      freed = true;
      return src.close();
    },
  };
}

/** The row groups of a file (each its rows in the span) that hold rows `span` wants. */
async function spanSlices(
  src: ByteSource,
  footer: ParquetFooter,
  span: RowSpanFilter,
): Promise<{ group: number; slice: RowSlice | undefined; rows: number }[]> {
  const out: { group: number; slice: RowSlice | undefined; rows: number }[] = [];
  for (let g = 0; g < footer.rowGroups.length; g++) {
    if (!rowGroupMay(footer, g, span)) continue;
    const { file } = await rowGroupFile(footer, g, new Set(span.columns), (s, e) => src.read(s, e));
    let slice: RowSlice | undefined;
    try {
      slice = await rowGroupSpan(file, footer, g, span);
    } catch (e) {
      throw rowGroupReadError(e, src.name);
    }
    if (slice !== undefined)
      out.push({
        group: g,
        slice: slice.offset === 0 && slice.limit === footer.rowGroups[g].numRows ? undefined : slice,
        rows: slice.limit,
      });
  }
  return out;
}

/**
 * The rows of a data file in a store as one Arrow table (one batch per row group), every column in
 * its declared type; with `columns`, only those, in that order. Read by range (see
 * openDataFileRanged): the file's bytes are never held whole.
 */
export async function readDataFileRanged(
  store: ObjectStore,
  key: string,
  size?: number,
  opts: { columns?: readonly string[]; check?: DataFileCheck; span?: RowSpanFilter } = {},
): Promise<arrow.Table> {
  const decoder = await openDataFileRanged(store, key, size, opts.check, opts.span);
  const names = opts.columns === undefined ? decoder.columns : [...opts.columns];
  let parts: arrow.Table[];
  try {
    parts = await decoder.readRowGroups(names);
  } finally {
    await decoder.free();
  }
  if (parts.length === 0 && opts.span !== undefined) {
    // No wanted row: the schema from zero rows of the first row group, not from the whole file.
    const empty = await emptyOf(store, key, size, opts.check, names);
    if (empty !== undefined) return empty;
  }
  if (parts.length === 0) {
    // A file without row groups: its schema from the footer's Arrow schema, read as an empty file.
    const bytes = await withStoreSource(store, key, size, undefined, (src) => src.read(0, src.size));
    return readDataFile(bytes, opts.columns === undefined ? {} : { columns: [...opts.columns] });
  }
  const schema = parts[0].schema;
  return new arrow.Table(
    schema,
    parts.flatMap((t) => t.batches),
  );
}

/** Zero rows of the columns `names` of a file in varve's types (the schema of an empty span); undefined when it has no row group. */
async function emptyOf(
  store: ObjectStore,
  key: string,
  size: number | undefined,
  check: DataFileCheck | undefined,
  names: string[],
): Promise<arrow.Table | undefined> {
  return withStoreSource(store, key, size, check, async (src) => {
    const footer = await readParquetFooter(src);
    if (footer.rowGroups.length === 0) return undefined;
    return decodeRowGroup(src, footer, 0, names, new Set(names), { offset: 0, limit: 0 });
  });
}

/**
 * Row group `g` of the file, the columns `names` (in that order) as one single-batch table in
 * varve's types (with `slice`, only those rows); decoded on the decode pool's workers when it has
 * them and the row group is large enough (decode-pool.ts), else inline (into `memory` when given).
 */
async function decodeRowGroup(
  src: ByteSource,
  footer: ParquetFooter,
  g: number,
  names: string[],
  wanted: ReadonlySet<string>,
  slice?: RowSlice,
  memory?: BatchMemory,
): Promise<arrow.Table> {
  const { file: bytes } = await rowGroupFile(footer, g, wanted, (s, e) => src.read(s, e));
  // A batch as large as the group: one batch, no concat.
  const rows = footer.rowGroups[g].numRows;
  try {
    const pool = decodePool();
    // A worker gets a Blob (posted without a copy) and hands back IPC bytes; inline, parquet-wasm
    // reads the fetched parts themselves and the batch leaves wasm through the C Data Interface
    // (the same Arrow bytes, one copy fewer). A slice (a few rows of a key range) decodes inline:
    // the post would cost more than the decode.
    const decoded =
      slice === undefined && pool.takes(bytes.size)
        ? arrow.tableFromIPC(await pool.decode(bytes.blob(), names, rows))
        : await decodeRowGroupArrow(bytes, names, rows, slice, memory);
    return normalizeArrowTypes(singleBatch(selectColumns(decoded, names)));
  } catch (e) {
    throw rowGroupReadError(e, src.name);
  }
}

/** A ByteSource over a store object, open until `close` (see storeSource). */
type StoreSource = ByteSource & { close(): Promise<void> };

/**
 * A ByteSource over a store object (`size` when known, else the store's), read through one
 * RangeReader (a local file is opened once, not once per range) that `close` releases. The read
 * that reaches the end of the object (the footer read, at most FOOTER_READ_BYTES) is kept, and
 * later reads inside it are answered from it: a small file costs one ranged GET, not one per row
 * group and projection.
 */
async function storeSource(
  store: ObjectStore,
  key: string,
  size?: number,
  check: DataFileCheck = {},
): Promise<StoreSource> {
  const reader = await openRanges(store, key, size);
  const total = size ?? reader.size;
  let tail: { start: number; bytes: Uint8Array } | undefined;
  return {
    size: total,
    name: key,
    ...check,
    read: async (start, end) => {
      if (tail !== undefined && start >= tail.start && end <= tail.start + tail.bytes.length)
        return tail.bytes.subarray(start - tail.start, end - tail.start);
      const bytes = await reader.read(start, end);
      if (end === total && tail === undefined && bytes.length === end - start) tail = { start, bytes };
      return bytes;
    },
    close: () => reader.close(),
  };
}

/** `fn` of a store source of `key`, closed after it (also when it throws). */
async function withStoreSource<T>(
  store: ObjectStore,
  key: string,
  size: number | undefined,
  check: DataFileCheck | undefined,
  fn: (src: ByteSource) => Promise<T>,
): Promise<T> {
  const src = await storeSource(store, key, size, check);
  try {
    return await fn(src);
  } finally {
    await src.close();
  }
}

/** The table's columns in the order of `names` (the projection returns them in file order), without copying. */
function selectColumns(table: arrow.Table, names: string[]): arrow.Table {
  const current = table.schema.names;
  if (names.length === current.length && names.every((n, i) => n === current[i])) return table;
  const idx = names.map((n) => current.indexOf(n));
  const schema = new arrow.Schema(
    idx.map((i) => table.schema.fields[i]),
    table.schema.metadata,
  );
  const struct = new arrow.Struct(schema.fields);
  const batches = table.batches.map(
    (b) =>
      new arrow.RecordBatch(
        schema,
        arrow.makeData({ type: struct, length: b.numRows, nullCount: 0, children: idx.map((i) => b.data.children[i]) }),
      ),
  );
  return new arrow.Table(schema, batches);
}

// The WebAssembly global is missing from the project's type libs (ES2023 + node), not from Node.
const WasmRuntimeError = (globalThis as unknown as { WebAssembly: { RuntimeError: ErrorConstructor } }).WebAssembly
  .RuntimeError;

/** varve errors pass through, a wasm trap (out of memory) stays fatal; anything else is a corrupt file. */
function asReadError(e: unknown): unknown {
  if (e instanceof SchemaMismatchError || e instanceof InvalidArgumentError || e instanceof WasmRuntimeError) return e;
  return new CorruptMetadataError(`data file cannot be read as Parquet: ${(e as Error)?.message ?? String(e)}`, {
    cause: e,
  });
}

/**
 * Row count, key-value metadata and column names from a data file's footer, fetched with a ranged
 * GET of its last bytes (a head, then one getRange; a second only for a footer over 64 KiB).
 */
export async function readDataFileMetadata(store: ObjectStore, key: string): Promise<DataFileMetadata> {
  const head = await store.head(key);
  if (head === undefined) throw new ObjectNotFoundError(key);
  const file: AsyncBuffer = {
    byteLength: head.size,
    slice: async (start, end = head.size) => {
      const b = await store.getRange(key, start, end);
      // hyparquet wants an ArrayBuffer of exactly the range.
      return b.byteOffset === 0 && b.byteLength === b.buffer.byteLength
        ? (b.buffer as ArrayBuffer)
        : (b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer);
    },
  };
  let md;
  try {
    md = await parquetMetadataAsync(file, { initialFetchSize: FOOTER_FETCH_BYTES });
  } catch (e) {
    // Store failures (not found, throttled, injected) keep their own kind and retryability.
    if (e instanceof VarveError) throw e;
    throw new CorruptMetadataError(`data file ${key} has no valid Parquet footer: ${(e as Error).message}`, {
      cause: e,
    });
  }
  const keyValueMetadata: Record<string, string> = {};
  for (const kv of md.key_value_metadata ?? []) {
    if (kv.key !== ARROW_SCHEMA_KEY && kv.key !== CHUNK_CRC_KEY) keyValueMetadata[kv.key] = kv.value ?? '';
  }
  return {
    numRows: Number(md.num_rows),
    keyValueMetadata,
    columns: parquetSchema(md).children.map((c) => c.element.name),
    fileSize: head.size,
    numRowGroups: md.row_groups.length,
  };
}

/**
 * The rows of a data file one row group at a time (one Arrow table per batch of at most
 * DECODE_BATCH_ROWS rows of a row group), fetched by range: the footer from the end of the file,
 * then each row group's column chunks (with `columns`, only theirs, in that order). Memory holds
 * the footer, one compressed row group and one decoded batch, never the file. `size` (from the
 * manifest) is the object's size when known (else one head). Every byte is fetched in JS (see
 * row-group-reader.ts), so a store error (missing file, throttling) stays the store's error.
 */
export async function* readDataFileRowGroups(
  store: ObjectStore,
  key: string,
  size?: number,
  opts: {
    columns?: readonly string[];
    /**
     * Decode into two slabs reused in turn (no allocation per batch): a yielded table is valid
     * only until the generator has yielded two more; a caller that keeps one must copy it.
     */
    reuseBuffers?: boolean;
    /** What the manifest entry says to check the file against (its footer CRC). */
    check?: DataFileCheck;
    /** Only the rows of a key range of the sorted file (row groups skipped, rows outside not decoded). */
    span?: RowSpanFilter;
    /** False skips row group `group` (the file's rows [firstRow, firstRow + rows)) unfetched. */
    rowGroupWanted?: (group: number, firstRow: number, rows: number) => boolean;
  } = {},
): AsyncGenerator<arrow.Table> {
  // Opened on the first next(): a generator never started holds nothing; one stopped early
  // (return or throw, as for-await does on break) closes the file in the finally.
  const src = await storeSource(store, key, size, opts.check);
  try {
    const footer = await readParquetFooter(src);
    const columns = opts.columns === undefined ? undefined : [...opts.columns];
    if (columns !== undefined) {
      for (const c of columns) {
        if (!footer.columns.includes(c))
          throw new SchemaMismatchError(`data file ${key} has no column ${c}; it has ${footer.columns.join(', ')}`, c);
      }
    }
    const memory = opts.reuseBuffers ? new ReusedBatchMemory() : freshBatchMemory;
    for await (const table of readRowGroupsRanged(src, {
      footer,
      columns,
      memory,
      span: opts.span,
      rowGroupWanted: opts.rowGroupWanted,
      decodeError: (e) => rowGroupReadError(e, key),
    })) {
      yield normalizeArrowTypes(columns === undefined ? table : selectColumns(table, columns));
    }
  } finally {
    await src.close();
  }
}

/** Store failures keep their kind (not found, throttled); the rest is what asReadError says. */
function rowGroupReadError(e: unknown, key: string): unknown {
  if (e instanceof VarveError && !(e instanceof SchemaMismatchError || e instanceof InvalidArgumentError)) return e;
  const err = asReadError(e);
  if (err instanceof CorruptMetadataError) return new CorruptMetadataError(`${key}: ${err.message}`, { cause: e });
  return err;
}
