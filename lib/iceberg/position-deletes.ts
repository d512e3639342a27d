/**
 * Iceberg v2 position delete files of a deletion-vector table's export: for each live data file
 * with a deletion vector, one Parquet file of (file_path, pos) rows — the data file's location and
 * each deleted row position, sorted by position — with the spec's field ids (file_path 2147483546,
 * pos 2147483545), so Iceberg v2 readers (pyiceberg, Athena, Trino, Spark, icebird) drop exactly
 * the rows the vector marks. It is written beside the data file, in its bucket folder, named after
 * the vector's blob (`iceberg-pos-<dv file>-<offset>.parquet`): a vector that did not change since
 * the previous export keeps its file, and an export that is redone writes the same bytes to the
 * same key. Orphan cleanup removes one once no Iceberg snapshot lists it (it treats it like any
 * file of a bucket folder, and the current Iceberg metadata's files count as referenced).
 */
import * as arrow from 'apache-arrow';
import { Compression, Table as WasmTable, writeParquet, WriterPropertiesBuilder } from 'parquet-wasm';
import type { DeletionVectorRef } from '../manifest/deletion-index.js';
import { dataFileKey } from '../manifest/table-paths.js';

/** Iceberg's reserved field ids of a position delete file's columns. */
export const POSITION_DELETE_FILE_PATH_ID = 2147483546;
export const POSITION_DELETE_POS_ID = 2147483545;

/** The prefix of position delete files in a bucket folder. */
const POSITION_DELETE_FILE_PREFIX = 'iceberg-pos-';

/** The store key of the position delete file of a vector's blob. */
export function positionDeleteFileKey(tablePath: string, ref: DeletionVectorRef): string {
  const dv = ref.dvFile.slice(ref.dvFile.lastIndexOf('/') + 1).replace(/\.puffin$/, '');
  return dataFileKey(tablePath, ref.partition, ref.bucket, `${POSITION_DELETE_FILE_PREFIX}${dv}-${ref.offset}.parquet`);
}

function field(name: string, type: arrow.DataType, id: number): arrow.Field {
  return new arrow.Field(name, type, false, new Map([['PARQUET:field_id', String(id)]]));
}

/**
 * The Parquet bytes of a position delete file: `positions` (ascending) of the data file at
 * `dataFileUri` (the absolute location its manifest entry names), zstd, one row group.
 */
export function encodePositionDeleteFile(dataFileUri: string, positions: Uint32Array): Uint8Array {
  const n = positions.length;
  const pos = new BigInt64Array(n);
  for (let i = 0; i < n; i++) {
    if (i > 0 && positions[i] <= positions[i - 1])
      throw new RangeError(`deletion vector positions must ascend: ${positions[i - 1]} then ${positions[i]}`);
    pos[i] = BigInt(positions[i]);
  }
  const schema = new arrow.Schema([
    field('file_path', new arrow.Utf8(), POSITION_DELETE_FILE_PATH_ID),
    field('pos', new arrow.Int64(), POSITION_DELETE_POS_ID),
  ]);
  // The same path on every row, built as Utf8 buffers directly (parquet-rs dictionary-encodes it to a few bytes).
  const path = new TextEncoder().encode(dataFileUri);
  const offsets = new Int32Array(n + 1);
  const bytes = new Uint8Array(n * path.length);
  for (let i = 0; i < n; i++) {
    bytes.set(path, i * path.length);
    offsets[i + 1] = (i + 1) * path.length;
  }
  const paths = arrow.makeData({ type: new arrow.Utf8(), length: n, nullCount: 0, valueOffsets: offsets, data: bytes });
  const batch = new arrow.RecordBatch(
    schema,
    arrow.makeData({
      type: new arrow.Struct(schema.fields),
      length: n,
      nullCount: 0,
      children: [paths, arrow.makeData({ type: new arrow.Int64(), length: n, nullCount: 0, data: pos })],
    }),
  );
  const props = new WriterPropertiesBuilder()
    .setCompression(Compression.ZSTD)
    .setMaxRowGroupSize(Math.max(1, n))
    .setCreatedBy('varve')
    .build();
  let wasm: WasmTable;
  try {
    wasm = WasmTable.fromIPCStream(arrow.tableToIPC(new arrow.Table(schema, [batch]), 'stream'));
  } catch (e) {
    props.free();
    throw e;
  }
  // writeParquet takes ownership of (and frees) both handles.
  return writeParquet(wasm, props);
}
