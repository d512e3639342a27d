/**
 * The raw baselines: parquet-wasm with the same writer settings varve's data files use
 * (lib/format/data-file.ts: row groups of 262,144, chunk statistics, dictionary only on strings
 * that are not nearly all distinct), with no table format around it.
 */
import { open } from 'node:fs/promises';
import * as arrow from 'apache-arrow';
import {
  Compression,
  EnabledStatistics,
  readParquet,
  Table as WasmTable,
  writeParquet,
  WriterPropertiesBuilder,
} from 'parquet-wasm';
import { DEFAULT_ROW_GROUP_SIZE, READ_BATCH_SIZE } from '../../lib/format/data-file.js';
import { uniqueStringColumns } from '../../lib/format/dictionary-choice.js';

const CODECS = { zstd: Compression.ZSTD, snappy: Compression.SNAPPY, uncompressed: Compression.UNCOMPRESSED } as const;

/** Parquet bytes of an Arrow table, written the way varve writes data files. */
export function rawParquetBytes(table: arrow.Table, compression: keyof typeof CODECS = 'zstd'): Uint8Array {
  let b = new WriterPropertiesBuilder()
    .setCompression(CODECS[compression])
    .setMaxRowGroupSize(DEFAULT_ROW_GROUP_SIZE)
    .setStatisticsEnabled(EnabledStatistics.Chunk)
    .setDictionaryEnabled(false);
  // Dictionaries on strings but those nearly all distinct, judged from the first rows (as varve's
  // files choose theirs: lib/format/dictionary-choice.ts).
  const plain = new Set(uniqueStringColumns(table, 0));
  for (const f of table.schema.fields)
    if (arrow.DataType.isUtf8(f.type) && !plain.has(f.name)) b = b.setColumnDictionaryEnabled(f.name, true);
  return writeParquet(WasmTable.fromIPCStream(arrow.tableToIPC(table, 'stream')), b.build());
}

/** Writes bytes to a file and fsyncs it, as LocalStore does for every object. */
export async function writeFileSynced(path: string, bytes: Uint8Array): Promise<void> {
  const fh = await open(path, 'w');
  try {
    await fh.writeFile(bytes);
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** Encodes and writes a table as one Parquet file (fsynced); returns its size. */
export async function rawParquetWrite(
  path: string,
  table: arrow.Table,
  compression: keyof typeof CODECS = 'zstd',
): Promise<number> {
  const bytes = rawParquetBytes(table, compression);
  await writeFileSynced(path, bytes);
  return bytes.byteLength;
}

/** Decodes Parquet bytes into an Arrow table (the sync reader, batches of 65,536 rows, as varve reads). */
export function rawParquetDecode(bytes: Uint8Array): arrow.Table {
  return arrow.tableFromIPC(readParquet(bytes, { batchSize: READ_BATCH_SIZE }).intoIPCStream());
}
