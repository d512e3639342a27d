/**
 * When the export runs: after a commit, never inside it. An APPEND of level-0 files leaves the
 * highest level — what Iceberg readers see of a primary-key table — unchanged, so only commits
 * that touch the highest level (a full or top-level compaction, an overwrite) start an export;
 * for a table without a primary key, or with deletion vectors, every commit does. The check looks at the snapshots since
 * the last export, so an export that failed or never ran is redone by the next commit.
 */
import { IcebergExportError } from '../errors.js';
import { readDeltaEntries } from '../manifest/scan.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import type { CommitHooks, CommitInfo } from '../table/commit-hooks.js';
import type { Table } from '../table/table.js';
import { exportIceberg, type ExportIcebergResult } from './export.js';
import { usesDeletionVectors } from './export-entries.js';
import { COMMIT_UUID_SUMMARY, commitUuidOf, currentIcebergSnapshot, onVarveChain } from './export-history.js';
import { icebergLocation, readCurrentIcebergMetadata } from './iceberg-metadata.js';

/**
 * Per table object: snapshots (exported, upTo] are known to leave the exported view unchanged;
 * each end named by commit uuid, since a rollback may have committed its id again since.
 */
const checked = new WeakMap<Table, { exported: string; upTo: number; upToUuid: string | undefined }>();

/**
 * True when a snapshot may change what Iceberg readers see: every commit of a table without a
 * primary key or with deletion vectors (its live files and vectors are the view), otherwise one
 * whose delta touches the highest level.
 */
async function changesExportedView(table: Table, s: Snapshot): Promise<boolean> {
  if (table.schema.primaryKeys.length === 0 || usesDeletionVectors(table)) return true;
  if (s.commitKind === 'APPEND') return false;
  const top = table.options.numLevels - 1;
  const delta = await readDeltaEntries(table.store, table.path, s, {}, table.manifestCache);
  return delta.some((e) => e.file.level >= top);
}

/** The first snapshot id after `exported` not yet known to leave the view unchanged. */
async function firstUnchecked(table: Table, exportedKey: string, exported: number): Promise<number> {
  const known = checked.get(table);
  if (known === undefined || known.exported !== exportedKey || known.upTo <= exported) return exported + 1;
  const upTo = await table.snapshots.tryReadFresh(known.upTo);
  return upTo !== undefined && commitUuidOf(upTo) === known.upToUuid ? known.upTo + 1 : exported + 1;
}

/**
 * The snapshot to export now, or undefined when the export is current: the latest snapshot when
 * any snapshot after the exported one changed the highest level, when the history in between is
 * gone, or when the exported snapshot is no longer varve's (a rollback removed it).
 */
export async function icebergExportDue(table: Table, latest?: Snapshot): Promise<Snapshot | undefined> {
  const loc = icebergLocation(table);
  if (loc === undefined) return undefined;
  latest ??= await table.snapshots.latest();
  if (latest === undefined) return undefined;
  const current = await readCurrentIcebergMetadata(table.store, loc);
  const exportedSnapshot = current && currentIcebergSnapshot(current.metadata);
  if (exportedSnapshot === undefined || !(await onVarveChain(table, exportedSnapshot))) return latest;
  const exported = exportedSnapshot['snapshot-id'];
  if (exported >= latest.id) return undefined;
  const exportedKey = `${exported}@${exportedSnapshot.summary[COMMIT_UUID_SUMMARY] ?? ''}`;
  for (let id = await firstUnchecked(table, exportedKey, exported); id <= latest.id; id++) {
    const s = id === latest.id ? latest : await table.snapshots.tryRead(id);
    if (s === undefined || (await changesExportedView(table, s))) return latest;
    checked.set(table, { exported: exportedKey, upTo: id, upToUuid: commitUuidOf(s) });
  }
  return undefined;
}

/** Most snapshots a deletion-vector table's export writes in one go to fill its history (then the latest only). */
const CATCH_UP_SNAPSHOTS = 16;

/**
 * Exports the latest snapshot when due (see icebergExportDue); the result, or undefined when
 * nothing was due. A deletion-vector table's export first writes the commits since the exported
 * one that have none (a failed export, or a concurrent commit's export that came first), up to
 * CATCH_UP_SNAPSHOTS of them, so that Iceberg time travel finds every commit.
 */
export async function exportIcebergIfDue(table: Table): Promise<ExportIcebergResult | undefined> {
  const due = await icebergExportDue(table);
  if (due === undefined) return undefined;
  if (usesDeletionVectors(table)) {
    const current = await readCurrentIcebergMetadata(table.store, icebergLocation(table)!);
    const exported = current && currentIcebergSnapshot(current.metadata);
    if (
      exported !== undefined &&
      due.id - exported['snapshot-id'] - 1 <= CATCH_UP_SNAPSHOTS &&
      (await onVarveChain(table, exported))
    ) {
      for (let id = exported['snapshot-id'] + 1; id < due.id; id++) {
        const s = await table.snapshots.tryRead(id);
        if (s !== undefined) await exportIceberg(table, { snapshot: s });
      }
    }
  }
  return exportIceberg(table, { snapshot: due });
}

/**
 * The export after a commit made outside the write path (a compaction run): the error, instead of
 * a throw, since the commit has landed and the next commit redoes the export.
 */
export async function exportIcebergAfterCommit(table: Table): Promise<IcebergExportError | undefined> {
  if (icebergLocation(table) === undefined) return undefined;
  try {
    await exportIcebergIfDue(table);
    return undefined;
  } catch (e) {
    return new IcebergExportError(
      `${table.name}: the Iceberg export failed (${(e as Error).message}); the commit has landed, and the next commit or \`varve export-iceberg ${table.name}\` writes the export`,
      { cause: e },
    );
  }
}

/**
 * `hooks` with the export after every commit, whatever the action (and after `hooks` ran: an
 * inline compaction first). The export never fails the commit: its error is reported like a
 * failed inline compaction (the writer's `compactionError`, CommitResult.hookError), and the next
 * commit or `varve export-iceberg` redoes it.
 */
export function withIcebergExport(hooks: CommitHooks): CommitHooks {
  return {
    beforeCommit: (table, commit) => hooks.beforeCommit(table, commit),
    afterCommit: async (table: Table, snapshot: Snapshot, commit: CommitInfo) => {
      let first: unknown;
      try {
        await hooks.afterCommit(table, snapshot, commit);
      } catch (e) {
        first = e;
      }
      first ??= await exportIcebergAfterCommit(table);
      if (first !== undefined) throw first;
    },
  };
}
