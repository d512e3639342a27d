/**
 * A rewrite of live files committed as one OVERWRITE snapshot that names exactly the files it
 * removes and adds (copy-on-write delete of an append table, bucket rescale). Rows keep their
 * absolute sequence numbers (files written with base 0), so the order of versions and of appended
 * rows is unchanged. The commit fails with CommitConflictError when a removed file is no longer
 * live (a compaction or another rewrite took it first), or when a concurrent write left the
 * partition with files of two bucket counts; the `rewrite` action (commitRewrite) then deletes
 * what it wrote and plans again on the latest snapshot, under the commit loop's one retry budget.
 */
import { randomUUID } from 'node:crypto';
import type * as arrow from 'apache-arrow';
import { dataFileChecksums } from '../format/data-file-checksum.js';
import { writeDataFile } from '../format/data-file.js';
import type { ManifestEntry } from '../manifest/types.js';
import { fileMetaOf, valueStatsFields } from '../mergetree/file-meta.js';
import { RollingFileWriter } from '../mergetree/rolling-writer.js';
import type { ActionPlan, CommitAction, CommitRequest, FileChange } from '../snapshot/commit.js';
import { CommitConflictError } from '../errors.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import { commitToTable } from './table-commit.js';
import { dataFileKey } from './paths.js';
import { dataFileOptions } from './data-file-options.js';
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
  async add(
    at: { partition: string; bucket: number; totalBuckets: number; level: number },
    data: arrow.Table,
    bytesPerRow: number,
  ): Promise<void> {
    if (data.numRows === 0) return;
    const t = this.table;
    const roller = new RollingFileWriter(t.options.targetFileSize, bytesPerRow, 1, async (rows) => {
      const fileName = `data-${randomUUID()}.parquet`;
      const bytes = writeDataFile(rows, dataFileOptions(t));
      const key = dataFileKey(t.path, at.partition, at.bucket, fileName);
      // Recorded before the put: a put that fails ambiguously may still have created the object.
      this.written.push(key);
      await t.store.put(key, bytes);
      const file = fileMetaOf(t.keyFields, rows, {
        fileName,
        fileSize: bytes.byteLength,
        schemaId: t.schema.id,
        level: at.level,
        source: 'APPEND',
        valueFields: valueStatsFields(t.schema),
        checksums: dataFileChecksums(bytes),
      });
      this.after.push({ partition: at.partition, bucket: at.bucket, totalBuckets: at.totalBuckets, file });
    });
    await roller.add(data);
    await roller.finish();
  }

  /** The files removed and added, as a commit's compactBefore / compactAfter. */
  get changes(): { before: FileChange[]; after: FileChange[] } {
    return { before: this.before, after: this.after };
  }

  /** Deletes every file written (the rewrite will certainly not be committed). */
  async abandon(): Promise<void> {
    for (const key of this.written.splice(0)) await this.table.store.delete(key).catch(() => undefined);
  }
}

/** Who commits a rewrite, and how a retried call recognises itself. */
export interface RewriteIdentity {
  commitUser: string;
  /** Given: indexed, the rewrite lands once table-wide. Undefined: a fresh identifier. */
  commitIdentifier?: string;
  properties?: Record<string, string>;
}

/**
 * Reads what it rewrites on `base` and writes the new files: the rewrite, or undefined when there
 * is nothing to rewrite. Called again (on the latest snapshot, the table at its latest schema)
 * after a conflict or an alter; the previous rewrite's files are deleted first.
 */
export type RewritePlanner = (base: Snapshot | undefined) => Promise<FileRewrite | undefined>;

/** The `rewrite` action: see the file comment; re-planned from the latest snapshot after a conflict. */
class RewriteAction implements CommitAction {
  readonly name = 'rewrite';
  current?: FileRewrite;
  private readonly identifier: string;

  constructor(
    private readonly table: Table,
    private readonly identity: RewriteIdentity,
    private readonly planner: RewritePlanner,
  ) {
    this.identifier = identity.commitIdentifier ?? randomUUID();
  }

  async plan(base: Snapshot | undefined): Promise<ActionPlan> {
    // Planned again (a conflict, an alter) before any put of the last plan: its files are unreferenced.
    await this.current?.abandon();
    this.current = await this.planner(base);
    const schemaId = (this.current?.table ?? this.table).schema.id;
    const { before, after } = this.current?.changes ?? { before: [], after: [] };
    const changes: CommitRequest = {
      commitUser: this.identity.commitUser,
      commitIdentifier: this.identifier,
      identifierIndex: this.identity.commitIdentifier !== undefined,
      kind: 'OVERWRITE',
      schemaId,
      compactBefore: before,
      compactAfter: after,
      properties: this.identity.properties,
    };
    return { changes, requirements: { schemaId } };
  }

  /** A removed file is no longer live (a compaction, another rewrite): plan again on the latest snapshot. */
  async onConflict(): Promise<boolean> {
    return true;
  }

  async settle(outcome: { alreadyCommitted: boolean }): Promise<void> {
    if (outcome.alreadyCommitted) await this.current?.abandon();
  }
}

/**
 * Plans and commits a rewrite of `table` as one OVERWRITE snapshot through the one commit loop
 * (hooks included); the rewrite that landed, or undefined when there was nothing to rewrite.
 * Throws what the loop throws; a conflict that outlasts the retry budget deletes what was written.
 */
export async function commitRewrite(
  table: Table,
  identity: RewriteIdentity,
  planner: RewritePlanner,
): Promise<{ rewrite?: FileRewrite; snapshot?: Snapshot; alreadyCommitted: boolean }> {
  // An empty table has nothing to rewrite (and the loop commits nothing on no snapshot).
  if ((await table.snapshots.latest()) === undefined) return { alreadyCommitted: false };
  const action = new RewriteAction(table, identity, planner);
  try {
    const result = await commitToTable(
      table,
      action,
      identity.commitIdentifier === undefined ? { dedupLookback: 0 } : {},
    );
    if (action.current === undefined) return { alreadyCommitted: false };
    return { rewrite: action.current, snapshot: result.snapshot, alreadyCommitted: result.alreadyCommitted };
  } catch (e) {
    // Before the commit point, or on a conflict, nothing references what was written. Any other
    // commit failure is ambiguous: the files are left to orphan cleanup.
    if (e instanceof CommitConflictError) await action.current?.abandon();
    throw e;
  }
}
