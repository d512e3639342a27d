/**
 * A writer's level-0 file (data or changelog), encoded as its rows arrive: pieces of a flush go
 * into parquet-wasm's row-group writer and leave as compressed row groups, so a flush never hands
 * the encoder a whole buffer at once. The encoder's wasm memory only grows and never shrinks:
 * feeding it bounded pieces is what keeps a large write's memory at the buffer plus one row group.
 */
import { randomUUID } from 'node:crypto';
import * as arrow from 'apache-arrow';
import { physicalArrowSchema } from '../format/arrow-schema.js';
import { gatherColumn } from '../format/column-gather.js';
import { tableFromColumns } from '../format/column-layout.js';
import { DICTIONARY_SAMPLE_ROWS, uniqueStringColumns } from '../format/dictionary-choice.js';
import { concatTables, singleBatch } from '../format/columns.js';
import { dataFileChecksums } from '../format/data-file-checksum.js';
import type { WriteDataFileOptions } from '../format/data-file.js';
import { DataFileStreamWriter } from '../format/data-file-stream.js';
import type { DataFileEncoder, EncoderPool } from '../format/encoder-pool.js';
import { kindColumn, sequenceColumn } from '../mergetree/arrow-build.js';
import type { GatherPlan } from '../mergetree/write-buffer.js';
import { fileStatsOf, type FileStats } from '../format/file-stats.js';
import { addFileStats, fileMetaOfStats, valueStatsFields } from '../mergetree/file-meta.js';
import type { DataFileSink } from '../mergetree/rolling-writer.js';
import type { FileChange } from '../snapshot/commit.js';
import { level0Handover } from './deletion-lookup.js';
import { dataFileKey } from './paths.js';
import { dataFileOptions } from './data-file-options.js';
import type { Table } from './table.js';

/**
 * Rows handed to the encoder at a time: smaller pieces (a spilled merge yields a batch per run)
 * are joined up to it first, because the encoder's cost per call makes tiny batches slow.
 */
const ENCODE_ROWS = 65_536;

/**
 * Rows per row group of a level-0 file. The encoder holds a row group until it is complete, in
 * wasm memory that never shrinks; a level-0 file is one flush of a write buffer (tens of MB), so
 * row groups the size of one encode step keep that working set at a piece, not the file default
 * (DEFAULT_ROW_GROUP_SIZE, 262,144 rows, kept for compaction output). Measured on the 2M-row
 * JSONL write (bench:memory): wasm linear memory 32 → 22 MB, peak RSS about 13 MB lower.
 */
const LEVEL0_ROW_GROUP_ROWS = ENCODE_ROWS;

/** Where a level-0 file goes: its bucket, and the bucket count it was routed for. */
export interface Level0Target {
  partition: string;
  bucket: number;
  totalBuckets: number;
}

/**
 * Opens a level-0 file that key-sorted rows stream into; `finish` puts it and returns its manifest
 * entry. With `pool`, a worker thread encodes it (same bytes) while this thread prepares the next rows.
 */
export async function openLevel0File(
  table: Table,
  target: Level0Target,
  prefix: 'data' | 'changelog',
  pool?: EncoderPool,
): Promise<DataFileSink<FileChange>> {
  const fileName = `${prefix}-${randomUUID()}.parquet`;
  const schema = physicalArrowSchema(table.schema);
  const opts = level0Options(table);
  // Opened at the first rows it encodes: which string columns go without a dictionary is judged from them.
  let writer: DataFileEncoder | undefined;
  const open = async (first?: arrow.Table) => {
    const chosen = first === undefined ? opts : { ...opts, uniqueColumns: firstRowsUniqueColumns(opts, first) };
    return pool ? pool.open(schema, chosen) : await DataFileStreamWriter.open(schema, chosen);
  };
  let stats: FileStats | null = null;
  // A data file of a table with deletion vectors: its commit looks its keys up (handed over, not read back).
  const handover = prefix === 'data' ? level0Handover(table) : undefined;
  let held: arrow.Table[] = [];
  let heldRows = 0;
  const encodeHeld = async () => {
    if (heldRows === 0) return;
    const rows = held.length === 1 ? held[0] : singleBatch(concatTables(held, held[0].schema));
    held = [];
    heldRows = 0;
    writer ??= await open(rows);
    await writer.add(rows);
  };
  return {
    add: async (rows) => {
      if (rows.numRows === 0) return;
      stats = addFileStats(stats, fileStatsOf(table.keyFields, rows, valueStatsFields(table.schema)));
      handover?.add(rows);
      held.push(rows);
      heldRows += rows.numRows;
      if (heldRows >= ENCODE_ROWS) await encodeHeld();
    },
    finish: async () => {
      await encodeHeld();
      writer ??= await open();
      const bytes = await writer.finish();
      const key = dataFileKey(table.path, target.partition, target.bucket, fileName);
      await table.store.put(key, bytes);
      handover?.finish(key);
      return {
        partition: target.partition,
        bucket: target.bucket,
        totalBuckets: target.totalBuckets,
        file: fileMetaOfStats(stats!, {
          fileName,
          fileSize: bytes.byteLength,
          schemaId: table.schema.id,
          level: 0,
          source: 'APPEND',
          checksums: dataFileChecksums(bytes),
        }),
      };
    },
    discard: async () => {
      held = [];
      await writer?.discard();
    },
  };
}

/** How level-0 files are encoded (the inline encoder and the pool's workers alike). */
function level0Options(table: Table): WriteDataFileOptions {
  return { ...dataFileOptions(table), rowGroupSize: LEVEL0_ROW_GROUP_ROWS };
}

/**
 * The string columns whose dictionary the options leave to the data (no `parquet.enable.dictionary`
 * for them): those the dictionary choice may write plain.
 */
function undecidedStringColumns(opts: WriteDataFileOptions, schema: arrow.Schema): number[] {
  const parquet = opts.parquet;
  const out: number[] = [];
  if (parquet?.dictionary !== undefined) return out;
  const fields = schema.fields;
  for (let c = 0; c < fields.length - 2; c++)
    if (arrow.DataType.isUtf8(fields[c].type) && parquet?.columnDictionary[fields[c].name] === undefined) out.push(c);
  return out;
}

/**
 * The string columns a level-0 file writes without a dictionary, judged as compaction output is
 * (dictionary-choice.ts): from the file's first DICTIONARY_SAMPLE_ROWS rows, here the first rows
 * the file encodes. Nearly unique strings (ids, names per key) otherwise cost a hash of every value
 * into a dictionary of them all, and every read of the fresh file decodes through it.
 */
function firstRowsUniqueColumns(opts: WriteDataFileOptions, first: arrow.Table): string[] {
  if (undecidedStringColumns(opts, first.schema).length === 0) return [];
  const sample =
    first.batches.length > 0 && first.batches[0].numRows >= Math.min(first.numRows, DICTIONARY_SAMPLE_ROWS)
      ? first
      : singleBatch(first.slice(0, DICTIONARY_SAMPLE_ROWS));
  return uniqueStringColumns(sample);
}

/**
 * firstRowsUniqueColumns for a file the pool's workers gather: the undecided string columns of
 * its first DICTIONARY_SAMPLE_ROWS rows are gathered here from the plan (the same rows, so the
 * same choice as the inline encoder's and the same bytes).
 */
function gatheredUniqueColumns(opts: WriteDataFileOptions, schema: arrow.Schema, plan: GatherPlan): string[] {
  const columns = undecidedStringColumns(opts, schema);
  if (columns.length === 0) return [];
  const n = Math.min(plan.count, DICTIONARY_SAMPLE_ROWS);
  const source = plan.source?.subarray(0, n) ?? null;
  const row = plan.row.subarray(0, n);
  const fields = columns.map((c) => schema.fields[c]);
  const children = columns.map((c, k) =>
    gatherColumn(
      fields[k].type,
      fields[k].name,
      plan.sources.map((t) => t.batches[0].data.children[c]),
      source,
      row,
    ),
  );
  return uniqueStringColumns(tableFromColumns(new arrow.Schema(fields), children, n), 0);
}

/**
 * Writes a flush's merged output, given as a gather plan (WriteBuffer.takeGatherPlan), as one
 * level-0 data file whose row groups the pool's workers gather and encode: this thread only cuts
 * the plan into row groups and posts their row numbers, so it sorts and merges the next bucket
 * meanwhile. The file and its entry are those `openLevel0File` makes of the same rows (the same
 * pieces: one row group each); null when the plan has no rows. `posted` is called once every row
 * group is posted, before the workers are done with them.
 */
export async function writeLevel0Gathered(
  table: Table,
  target: Level0Target,
  plan: GatherPlan,
  pool: EncoderPool,
  posted?: () => void,
): Promise<FileChange | null> {
  if (plan.count === 0) return null;
  const fileName = `data-${randomUUID()}.parquet`;
  const schema = physicalArrowSchema(table.schema);
  const opts = level0Options(table);
  const uniqueColumns = gatheredUniqueColumns(opts, schema, plan);
  const file = pool.openGathered(schema, { ...opts, uniqueColumns }, plan.sources, table.keyFields);
  // A table with deletion vectors: its commit looks the file's keys up (handed over, not read back),
  // gathered here once every row group is posted (the workers encode meanwhile).
  const handover = level0Handover(table);
  const handed = handover && { ...plan };
  // The workers read the shared copy from here on: the buffered tables may go.
  plan.sources = [];
  let encoded: { bytes: Uint8Array; stats: FileStats[] };
  try {
    for (let from = 0; from < plan.count; from += LEVEL0_ROW_GROUP_ROWS) {
      const to = Math.min(plan.count, from + LEVEL0_ROW_GROUP_ROWS);
      await file.add({
        source: plan.source?.slice(from, to) ?? null,
        row: plan.row.slice(from, to),
        sequence: sequenceColumn(plan.sequence.subarray(from, to), to - from).values as BigInt64Array,
        kind: kindColumn(plan.kind.subarray(from, to), to - from).values as Int8Array,
      });
    }
    posted?.();
    if (handed) handover?.addGathered(handed);
    encoded = await file.finish();
  } catch (e) {
    await file.discard();
    throw e;
  }
  const stats = encoded.stats.reduce<FileStats | null>((acc, s) => addFileStats(acc, s), null)!;
  const key = dataFileKey(table.path, target.partition, target.bucket, fileName);
  await table.store.put(key, encoded.bytes);
  handover?.finish(key);
  return {
    partition: target.partition,
    bucket: target.bucket,
    totalBuckets: target.totalBuckets,
    file: fileMetaOfStats(stats, {
      fileName,
      fileSize: encoded.bytes.byteLength,
      schemaId: table.schema.id,
      level: 0,
      source: 'APPEND',
      checksums: dataFileChecksums(encoded.bytes),
    }),
  };
}
