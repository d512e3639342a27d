/**
 * A writer's batch committed through the one commit loop: an APPEND through the process's shared
 * committer (its batches waiting at the same time land in one snapshot), or an OVERWRITE as an
 * `overwrite` action. Both run the table's commit hooks.
 */
import { randomUUID } from 'node:crypto';
import { SchemaChangedError, StaleBucketCountError } from '../errors.js';
import { requestAction, type CommitBatch } from '../snapshot/commit.js';
import { deleteBatchFiles } from './append-commit.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import { sharedCommitterOf } from './shared-committer.js';
import type { Table } from './table.js';
import { commitToTable } from './table-commit.js';

/** What an OVERWRITE replaces: the whole table, the partitions written to, or those matching a spec. */
export type OverwriteMode = 'all' | 'dynamic' | { match: Record<string, string> };

export interface CommitResult {
  /** The snapshot that holds the batch (also when an earlier attempt had committed it), if any. */
  snapshot?: Snapshot;
  /** True when the same commit identifier had already landed (any process, any commit user): nothing was written twice. */
  alreadyCommitted: boolean;
  /** With alreadyCommitted: the id of the snapshot it had landed in, when that snapshot has expired since (`snapshot` is then unset). */
  expiredSnapshotId?: number;
  /** Data files written by this commit. */
  files: number;
  /** Rows written, before merging. */
  rows: number;
  /** Set when the table's after-commit hook failed (inline compaction, the Iceberg export); the commit itself stands. */
  compactionError?: Error;
}

/** Who commits a writer's batch, under which identifier, and how many rows it was written from. */
export interface BatchCommit {
  commitUser: string;
  commitIdentifier?: string;
  rows: number;
}

/**
 * Commits a flushed batch as one APPEND snapshot. Writers of this process on this table share one
 * committer: their batches waiting at the same time land in one snapshot (one `append` action of
 * the commit loop, hooks included) instead of racing each other for snapshot ids.
 */
export async function commitAppendBatch(table: Table, batch: CommitBatch, c: BatchCommit): Promise<CommitResult> {
  const files = batch.newFiles.length;
  if (files === 0 && batch.changelogFiles.length === 0) return { alreadyCommitted: false, files: 0, rows: c.rows };
  const result = await sharedCommitterOf(table)
    .submit(table, {
      batch,
      // A given identifier deduplicates table-wide through its index, however old the commit.
      identifier: c.commitIdentifier,
      commitUser: c.commitUser,
      schemaId: table.schema.id,
    })
    .catch(async (e: unknown) => {
      // Refused before any snapshot was created (routed by a stale bucket count, written under
      // an older schema): its files are garbage now, deleted here rather than left to orphan
      // cleanup (a delete that fails is left to it). Table.write writes the rows again.
      if (e instanceof StaleBucketCountError || e instanceof SchemaChangedError)
        await deleteBatchFiles(table, [batch]).catch(() => undefined);
      throw e;
    });
  const expired = result.expiredSnapshotId !== undefined ? { expiredSnapshotId: result.expiredSnapshotId } : {};
  const hook = result.hookError !== undefined ? { compactionError: result.hookError } : {};
  return {
    snapshot: result.snapshot,
    alreadyCommitted: result.alreadyCommitted,
    files,
    rows: c.rows,
    ...expired,
    ...hook,
  };
}

/**
 * Commits a flushed batch as one OVERWRITE snapshot (an `overwrite` action of the commit loop,
 * hooks included) that replaces the whole table (`all`), the partitions the rows went to
 * (`dynamic`: `touched`), or the partitions matching a spec; with no rows written, `all` empties
 * the table (truncate).
 */
export async function commitOverwriteBatch(
  table: Table,
  batch: CommitBatch,
  c: BatchCommit & { mode: OverwriteMode; touched: Set<string> },
): Promise<CommitResult> {
  const { mode, touched, rows } = c;
  const overwrite = mode === 'all' ? {} : mode === 'dynamic' ? { partitions: [...touched] } : { match: mode.match };
  if (mode === 'dynamic' && touched.size === 0) return { alreadyCommitted: false, files: 0, rows };
  const action = requestAction(
    {
      commitUser: c.commitUser,
      commitIdentifier: c.commitIdentifier ?? randomUUID(),
      kind: 'OVERWRITE',
      schemaId: table.schema.id,
      batches: [batch],
      overwrite,
      allowEmpty: true,
    },
    'overwrite',
  );
  const result = await commitToTable(table, action, c.commitIdentifier === undefined ? { dedupLookback: 0 } : {});
  const files = batch.newFiles.length;
  const hook = result.hookError !== undefined ? { compactionError: result.hookError } : {};
  if (result.expiredSnapshotId !== undefined)
    return { alreadyCommitted: true, expiredSnapshotId: result.expiredSnapshotId, files, rows };
  return { snapshot: result.snapshot, alreadyCommitted: result.alreadyCommitted, files, rows, ...hook };
}
