/**
 * The file side of compacting one bucket: reads input files a row group at a time (a changelog
 * producer and the rewrite each stream a file they both need rather than hold it), streams new
 * data files and changelog files under unique names in the bucket folder, and remembers what it
 * wrote so that a job that will not commit can delete it.
 */
import { randomUUID } from 'node:crypto';
import type * as arrow from 'apache-arrow';
import { physicalArrowSchema } from '../format/arrow-schema.js';
import { readDataFileRowGroups } from '../format/data-file.js';
import { DataFileStreamWriter } from '../format/data-file-stream.js';
import { uniqueStringColumns } from '../format/dictionary-choice.js';
import type { DataFileChecksums } from '../format/data-file-checksum.js';
import { fileStatsOf, type FileStats } from '../format/file-stats.js';
import type { DataFileMeta } from '../manifest/types.js';
import type { CompactFileIO } from '../mergetree/compact-task.js';
import { RollingFileSink, type DataFileSink } from '../mergetree/rolling-writer.js';
import { openUpload } from '../store/object-store.js';
import { dataFileKey } from '../table/paths.js';
import { dataFileCheck, evolveChunks } from '../table/read.js';
import { dataFileOptions } from '../table/data-file-options.js';
import type { Table } from '../table/table.js';
import { addFileStats, fileMetaOfStats, valueStatsFields } from '../mergetree/file-meta.js';

/** Changelog files being written: rows in key order, `finish` returns the files. */
export interface ChangelogFileSink {
  add(log: arrow.Table): Promise<void>;
  finish(): Promise<DataFileMeta[]>;
  /** Drops the file being written (the job failed; finished files are in `written`). */
  discard(): Promise<void>;
  /** Rows added so far. */
  readonly rows: number;
}

/**
 * Rows per row group of a compaction output file (level-0 files cut theirs at 65,536). A reader
 * decodes a file a row group at a time, and parquet-wasm's linear memory (which never shrinks)
 * grows to hold one row group's compressed chunks and its page decoders: on the 10,000,000-row
 * streamed read (bench:memory) 28 MB at 262,144 rows, 18 MB at 131,072, 12 MB at 65,536. Files
 * grow with smaller groups (a dictionary and statistics per group): +5.9 % at 131,072, +11.2 % at
 * 65,536 on the same rows; 131,072 is the class of DuckDB's default (122,880).
 */
export const COMPACT_ROW_GROUP_ROWS = 131_072;

export class BucketFileIO implements CompactFileIO {
  /** Keys of every file this job wrote, data and changelog. */
  readonly written: string[] = [];
  /** A sink's `add` takes the rows' statistics and copies them into the encoder before it returns. */
  readonly sinksCopyRows = true;

  constructor(
    private readonly table: Table,
    readonly partition: string,
    readonly bucket: number,
  ) {}

  /**
   * The rows of a live file of the bucket, a row group at a time, through the table's schema
   * (`reuseBuffers`: see CompactFileIO.chunks).
   */
  chunks(file: DataFileMeta, opts: { reuseBuffers?: boolean } = {}): AsyncIterable<arrow.Table> {
    const t = this.table;
    // Checked against its checksums before anything is decoded: a damaged input fails the job, never becomes output.
    return evolveChunks(
      t,
      file,
      readDataFileRowGroups(t.store, dataFileKey(t.path, this.partition, this.bucket, file.fileName), file.fileSize, {
        check: dataFileCheck(t, file),
        reuseBuffers: opts.reuseBuffers === true,
      }),
    );
  }

  /**
   * A compaction output file (`data-<uuid>.parquet`, absolute sequence numbers) that rows stream
   * into; its encoded row groups stream on to the store (a multipart upload on S3), so neither
   * its rows nor its bytes are ever held whole.
   */
  async create(level: number): Promise<DataFileSink<DataFileMeta>> {
    return this.createFile(level, 'data');
  }

  private async createFile(level: number, prefix: 'data' | 'changelog'): Promise<DataFileSink<DataFileMeta>> {
    const t = this.table;
    const fileName = `${prefix}-${randomUUID()}.parquet`;
    const key = dataFileKey(t.path, this.partition, this.bucket, fileName);
    const upload = openUpload(t.store, key);
    const opts = { ...dataFileOptions(t), rowGroupSize: COMPACT_ROW_GROUP_ROWS };
    // Opened at the first rows: which string columns go without a dictionary is judged from them.
    let writer: DataFileStreamWriter | undefined;
    const open = (first?: arrow.Table) =>
      DataFileStreamWriter.open(
        physicalArrowSchema(t.schema),
        first === undefined ? opts : { ...opts, uniqueColumns: uniqueStringColumns(first) },
        (bytes) => upload.write(bytes),
      );
    let stats: FileStats | null = null;
    return {
      add: async (rows) => {
        if (rows.numRows === 0) return;
        writer ??= await open(rows);
        stats = addFileStats(stats, fileStatsOf(t.keyFields, rows, valueStatsFields(t.schema)));
        await writer.add(rows);
      },
      finish: async () => {
        let fileSize: number;
        let checksums: DataFileChecksums | undefined;
        try {
          writer ??= await open();
          fileSize = await writer.end();
          checksums = writer.checksums;
        } catch (e) {
          await upload.abort().catch(() => undefined);
          throw e;
        }
        // Recorded before the upload completes: one that fails ambiguously may still have created the object.
        this.written.push(key);
        await upload.complete();
        return fileMetaOfStats(stats!, {
          fileName,
          fileSize,
          schemaId: t.schema.id,
          level,
          source: 'COMPACT',
          checksums,
        });
      },
      discard: async () => {
        await writer?.discard();
        await upload.abort().catch(() => undefined);
      },
    };
  }

  /**
   * Level-0 `changelog-<uuid>.parquet` files of about `targetFileSize` that key-sorted changelog
   * rows stream into as a producer finds them (never held until the end).
   */
  changelogFiles(targetFileSize: number, bytesPerRow: number): ChangelogFileSink {
    const files: DataFileMeta[] = [];
    const roller = new RollingFileSink<DataFileMeta>(
      targetFileSize,
      bytesPerRow,
      1,
      () => this.createFile(0, 'changelog'),
      (meta) => files.push(meta),
    );
    let rows = 0;
    return {
      add: async (log) => {
        rows += log.numRows;
        await roller.add(log);
      },
      finish: async () => {
        await roller.finish();
        return files;
      },
      discard: () => roller.discard(),
      get rows() {
        return rows;
      },
    };
  }

  /** Deletes every file this job wrote; for a job that will certainly not commit them. */
  async deleteWritten(): Promise<void> {
    const keys = this.written.splice(0);
    for (const key of keys) {
      // Best effort: anything left is unreferenced and orphan cleanup removes it.
      await this.table.store.delete(key).catch(() => undefined);
    }
  }
}
