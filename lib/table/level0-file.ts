/**
 * A writer's level-0 file (data or changelog), encoded as its rows arrive: pieces of a flush go
 * into parquet-wasm's row-group writer and leave as compressed row groups, so a flush never hands
 * the encoder a whole buffer at once. The encoder's wasm memory only grows and never shrinks:
 * feeding it bounded pieces is what keeps a large write's memory at the buffer plus one row group.
 */
import { randomUUID } from 'node:crypto';
import type * as arrow from 'apache-arrow';
import { physicalArrowSchema } from '../format/arrow-schema.js';
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
  const writer: DataFileEncoder = pool ? pool.open(schema, opts) : await DataFileStreamWriter.open(schema, opts);
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
      await writer.discard();
    },
  };
}

/** How level-0 files are encoded (the inline encoder and the pool's workers alike). */
function level0Options(table: Table): WriteDataFileOptions {
  return { ...dataFileOptions(table), rowGroupSize: LEVEL0_ROW_GROUP_ROWS };
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
  const file = pool.openGathered(
    physicalArrowSchema(table.schema),
    level0Options(table),
    plan.sources,
    table.keyFields,
  );
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
