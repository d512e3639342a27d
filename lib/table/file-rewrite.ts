/**
 * A rewrite of live files committed as one OVERWRITE snapshot that names exactly the files it
 * removes and adds (copy-on-write delete of an append table, bucket rescale). Rows keep their
 * absolute sequence numbers (files written with base 0), so the order of versions and of appended
 * rows is unchanged. The commit fails with CommitConflictError when a removed file is no longer
 * live (a compaction or another rewrite took it first), or when a concurrent write left the
 * partition with files of two bucket counts; the caller then deletes what it wrote and plans again.
 */
import { randomUUID } from 'node:crypto';
import type * as arrow from 'apache-arrow';
import { writeDataFile } from '../format/data-file.js';
import type { ManifestEntry } from '../manifest/types.js';
import { fileMetaOf, valueStatsFields } from '../mergetree/file-meta.js';
import { RollingFileWriter } from '../mergetree/rolling-writer.js';
import { commit, type FileChange } from '../snapshot/commit.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import { publishCommit } from './commit-events.js';
import { commitOptionsFor } from './commit-options.js';
import { dataFileKey } from './paths.js';
import type { Table } from './table.js';

export class FileRewrite {
  private readonly before: FileChange[] = [];
  private readonly after: FileChange[] = [];
  /** Keys of the files written, so an abandoned rewrite removes them. */
  private readonly written: string[] = [];

  constructor(readonly table: Table) {}

  /** Files removed and added so far. */
  get counts(): { removed: number; added: number } {
    return { removed: this.before.length, added: this.after.length };
  }

  /** Removes a live file. */
  remove(e: ManifestEntry): void {
    this.before.push({ partition: e.partition, bucket: e.bucket, totalBuckets: e.totalBuckets, file: e.file });
  }

  /**
   * Adds rows (the table's physical layout, absolute sequence numbers, in the bucket's order: key
   * order for a keyed table, sequence order for an append table) as files of about
   * `target-file-size` at `level`.
   */
  async add(at: { partition: string; bucket: number; totalBuckets: number; level: number }, data: arrow.Table, bytesPerRow: number): Promise<void> {
    if (data.numRows === 0) return;
    const t = this.table;
    const roller = new RollingFileWriter(t.options.targetFileSize, bytesPerRow, 1, async (rows) => {
      const fileName = `data-${randomUUID()}.parquet`;
      const bytes = writeDataFile(rows, { compression: t.options.fileCompression, metadata: { 'varve.schema-id': String(t.schema.id), 'varve.table': t.name } });
      const key = dataFileKey(t.path, at.partition, at.bucket, fileName);
      // Recorded before the put: a put that fails ambiguously may still have created the object.
      this.written.push(key);
      await t.store.put(key, bytes);
      const file = fileMetaOf(t.keyFields, rows, { fileName, fileSize: bytes.byteLength, schemaId: t.schema.id, level: at.level, source: 'APPEND', valueFields: valueStatsFields(t.schema) });
      this.after.push({ partition: at.partition, bucket: at.bucket, totalBuckets: at.totalBuckets, file });
    });
    await roller.add(data);
    await roller.finish();
  }

  /** Commits the rewrite as one OVERWRITE snapshot (nothing when it removes and adds nothing). */
  async commit(opts: { commitUser: string; commitIdentifier?: string; properties?: Record<string, string> }): Promise<{ snapshot?: Snapshot; alreadyCommitted: boolean }> {
    if (this.before.length === 0 && this.after.length === 0) return { alreadyCommitted: false };
    const t = this.table;
    const fresh = opts.commitIdentifier === undefined;
    const result = await commit(
      t.store,
      t.path,
      {
        commitUser: opts.commitUser,
        commitIdentifier: opts.commitIdentifier ?? randomUUID(),
        identifierIndex: !fresh,
        kind: 'OVERWRITE',
        schemaId: t.schema.id,
        compactBefore: this.before,
        compactAfter: this.after,
        properties: opts.properties,
      },
      commitOptionsFor(t, fresh ? { dedupLookback: 0 } : {}),
    );
    if (result.alreadyCommitted) await this.abandon();
    else publishCommit({ warehouse: t.store.uri, table: t.name, snapshot: result.snapshot });
    return result;
  }

  /** Deletes every file written (the rewrite will certainly not be committed). */
  async abandon(): Promise<void> {
    for (const key of this.written.splice(0)) await this.table.store.delete(key).catch(() => undefined);
  }
}
