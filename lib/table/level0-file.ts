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
import { DataFileStreamWriter } from '../format/data-file-stream.js';
import type { DataFileEncoder, EncoderPool } from '../format/encoder-pool.js';
import { fileStatsOf, type FileStats } from '../format/file-stats.js';
import { addFileStats, fileMetaOfStats, valueStatsFields } from '../mergetree/file-meta.js';
import type { DataFileSink } from '../mergetree/rolling-writer.js';
import type { FileChange } from '../snapshot/commit.js';
import { dataFileKey } from './paths.js';
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
export async function openLevel0File(table: Table, target: Level0Target, prefix: 'data' | 'changelog', pool?: EncoderPool): Promise<DataFileSink<FileChange>> {
  const fileName = `${prefix}-${randomUUID()}.parquet`;
  const schema = physicalArrowSchema(table.schema);
  const opts = {
    compression: table.options.fileCompression,
    metadata: { 'varve.schema-id': String(table.schema.id), 'varve.table': table.name },
    rowGroupSize: LEVEL0_ROW_GROUP_ROWS,
  };
  const writer: DataFileEncoder = pool ? pool.open(schema, opts) : await DataFileStreamWriter.open(schema, opts);
  let stats: FileStats | null = null;
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
      held.push(rows);
      heldRows += rows.numRows;
      if (heldRows >= ENCODE_ROWS) await encodeHeld();
    },
    finish: async () => {
      await encodeHeld();
      const bytes = await writer.finish();
      await table.store.put(dataFileKey(table.path, target.partition, target.bucket, fileName), bytes);
      return {
        partition: target.partition,
        bucket: target.bucket,
        totalBuckets: target.totalBuckets,
        file: fileMetaOfStats(stats!, { fileName, fileSize: bytes.byteLength, schemaId: table.schema.id, level: 0, source: 'APPEND' }),
      };
    },
    discard: async () => {
      held = [];
      await writer.discard();
    },
  };
}
