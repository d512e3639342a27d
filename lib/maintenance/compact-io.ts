/**
 * The file side of compacting one bucket: reads input files once per job (a changelog producer
 * and the rewrite may both need a file), writes new data and changelog files under unique names in
 * the bucket folder, and remembers what it wrote so that a job that will not commit can delete it.
 */
import { randomUUID } from 'node:crypto';
import type * as arrow from 'apache-arrow';
import { writeDataFile } from '../format/data-file.js';
import type { DataFileMeta } from '../manifest/types.js';
import type { CompactFileIO } from '../mergetree/compact-task.js';
import { RollingFileWriter } from '../mergetree/rolling-writer.js';
import { dataFileKey } from '../table/paths.js';
import { readEntry } from '../table/read.js';
import type { Table } from '../table/table.js';
import { fileMetaOf } from '../mergetree/file-meta.js';

export class BucketFileIO implements CompactFileIO {
  /** Keys of every file this job wrote, data and changelog. */
  readonly written: string[] = [];
  private readonly cache = new Map<string, Promise<arrow.Table>>();

  constructor(
    private readonly table: Table,
    readonly partition: string,
    readonly bucket: number,
  ) {}

  /** The rows of a live file of the bucket; read once per job. */
  read(file: DataFileMeta): Promise<arrow.Table> {
    // Identity by level too: an upgrade leaves the name unchanged.
    const id = `${file.level}/${file.fileName}`;
    let t = this.cache.get(id);
    if (!t) {
      t = readEntry(this.table, { partition: this.partition, bucket: this.bucket, file });
      this.cache.set(id, t);
      // A failed read must not stay cached: a retry reads again.
      t.catch(() => this.cache.delete(id));
    }
    return t;
  }

  /** Writes a compaction output file (`data-<uuid>.parquet`, absolute sequence numbers). */
  write(data: arrow.Table, level: number): Promise<DataFileMeta> {
    return this.writeFile(data, level, 'data');
  }

  /** Writes a changelog table as level-0 `changelog-<uuid>.parquet` files of about `targetFileSize`. */
  async writeChangelog(data: arrow.Table, targetFileSize: number, bytesPerRow: number): Promise<DataFileMeta[]> {
    const out: DataFileMeta[] = [];
    const roller = new RollingFileWriter(targetFileSize, bytesPerRow, 1, async (rows) => {
      out.push(await this.writeFile(rows, 0, 'changelog'));
    });
    await roller.add(data);
    await roller.finish();
    return out;
  }

  /** Drops the read cache (the job is done with its inputs). */
  release(): void {
    this.cache.clear();
  }

  /** Deletes every file this job wrote; for a job that will certainly not commit them. */
  async deleteWritten(): Promise<void> {
    const keys = this.written.splice(0);
    for (const key of keys) {
      // Best effort: anything left is unreferenced and orphan cleanup removes it.
      await this.table.store.delete(key).catch(() => undefined);
    }
  }

  private async writeFile(data: arrow.Table, level: number, prefix: 'data' | 'changelog'): Promise<DataFileMeta> {
    const t = this.table;
    const fileName = `${prefix}-${randomUUID()}.parquet`;
    const bytes = writeDataFile(data, {
      compression: t.options.fileCompression,
      metadata: { 'varve.schema-id': String(t.schema.id), 'varve.table': t.name },
    });
    const key = dataFileKey(t.path, this.partition, this.bucket, fileName);
    // Recorded before the put: a put that fails ambiguously may still have created the object.
    this.written.push(key);
    await t.store.put(key, bytes);
    return fileMetaOf(t.keyFields, data, { fileName, fileSize: bytes.byteLength, schemaId: t.schema.id, level, source: 'COMPACT' });
  }
}
