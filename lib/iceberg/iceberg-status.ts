/**
 * `varve sys <table> iceberg`: what Iceberg readers see of the table, and what they do not see yet.
 * The view is compared with varve's latest snapshot file by file: files varve holds that the
 * current Iceberg snapshot does not read (a primary-key table's files below the highest level,
 * and everything committed since the last export), and files Iceberg still reads that varve no
 * longer holds (rows deleted or rewritten since). `up_to_date` is true only when both are none.
 */
import { readLiveFiles } from '../manifest/scan.js';
import { dataFileKey } from '../manifest/table-paths.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import type { DisplayValue } from '../table/system-tables.js';
import type { Table } from '../table/table.js';
import { usesDeletionVectors } from './export-entries.js';
import { currentIcebergSnapshot, onVarveChain } from './export-history.js';
import { icebergExportDue } from './export-trigger.js';
import { currentDataFileKeys } from './iceberg-manifests.js';
import { icebergLocation, icebergStorageOf, readCurrentIcebergMetadata, storeUri } from './iceberg-metadata.js';

/** The export's state as one system-table record. */
export interface IcebergStatus {
  storage: string;
  /** The Iceberg format version of the current metadata (2, or 3 with `metadata.iceberg.format-version=3`; docs/ICEBERG.md says which readers read 3). */
  format_version: number | null;
  metadata_location: string | null;
  exported_snapshot: number | null;
  exported_at: string | null;
  latest_snapshot: number | null;
  /** Snapshots committed after the exported one (null when a rollback removed the exported one). */
  snapshots_behind: number | null;
  /** Commit time of the latest snapshot minus that of the exported one. */
  seconds_behind: number | null;
  /** Data files and rows the current Iceberg snapshot reads. */
  data_files: number | null;
  records: number | null;
  /** True only when Iceberg readers see exactly varve's latest snapshot (no file hidden, none stale). */
  up_to_date: boolean | null;
  /** Live files of the latest snapshot that Iceberg readers do not read, and their rows (unmerged, retractions included). */
  files_not_visible: number | null;
  rows_not_visible: number | null;
  /** Files Iceberg readers still read that varve's latest snapshot no longer holds (their rows were deleted or rewritten). */
  files_no_longer_live: number | null;
  /** Seconds since the oldest change Iceberg readers do not see was written (at most); 0 when up to date. */
  view_age_seconds: number | null;
  /** True when an export now would change what Iceberg readers see (the next commit or `varve export-iceberg` writes it). */
  export_due: boolean | null;
}

/** How the Iceberg view differs from varve's latest snapshot. */
interface ViewGap {
  notVisible: number;
  rowsNotVisible: number;
  noLongerLive: number;
  /** Epoch ms of the oldest change not visible, or undefined when there is none. */
  oldestMissed: number | undefined;
}

/** Compares the files the current Iceberg snapshot reads with the live files of `latest`. */
async function viewGap(
  table: Table,
  latest: Snapshot | undefined,
  icebergKeys: readonly string[],
  exportedAt: number | undefined,
): Promise<ViewGap> {
  const visible = new Set(icebergKeys);
  const live =
    latest === undefined ? [] : await readLiveFiles(table.store, table.path, latest, {}, table.manifestCache);
  const liveKeys = new Set<string>();
  const gap: ViewGap = { notVisible: 0, rowsNotVisible: 0, noLongerLive: 0, oldestMissed: undefined };
  for (const e of live) {
    const key = dataFileKey(table.path, e.partition, e.bucket, e.file.fileName);
    liveKeys.add(key);
    if (visible.has(key)) continue;
    gap.notVisible++;
    gap.rowsNotVisible += e.file.rowCount;
    gap.oldestMissed = Math.min(gap.oldestMissed ?? Infinity, e.file.creationTime);
  }
  for (const k of visible) if (!liveKeys.has(k)) gap.noLongerLive++;
  // A file left after the exported snapshot; Iceberg still shows its rows since then at most.
  if (gap.noLongerLive > 0 && exportedAt !== undefined)
    gap.oldestMissed = Math.min(gap.oldestMissed ?? Infinity, exportedAt);
  return gap;
}

/** The table's Iceberg export state; `now` (epoch ms) for the view's age. */
export async function icebergStatus(table: Table, now = Date.now()): Promise<IcebergStatus> {
  const storage = icebergStorageOf(table);
  const latest = await table.snapshots.latest();
  const none: IcebergStatus = {
    storage,
    format_version: null,
    metadata_location: null,
    exported_snapshot: null,
    exported_at: null,
    latest_snapshot: latest?.id ?? null,
    snapshots_behind: null,
    seconds_behind: null,
    data_files: null,
    records: null,
    up_to_date: null,
    files_not_visible: null,
    rows_not_visible: null,
    files_no_longer_live: null,
    view_age_seconds: null,
    export_due: null,
  };
  const loc = icebergLocation(table);
  if (loc === undefined) return none;
  const current = await readCurrentIcebergMetadata(table.store, loc);
  if (current === undefined) return { ...none, up_to_date: latest === undefined, export_due: latest !== undefined };
  const m = current.metadata;
  const snap = currentIcebergSnapshot(m);
  const exportedAt = snap?.['timestamp-ms'];
  const onChain = snap !== undefined && (await onVarveChain(table, snap));
  const gap = await viewGap(table, latest, await currentDataFileKeys(table.store, m), exportedAt);
  // With deletion vectors the same files can hold other deletes: the exported commit must be the latest.
  const sameCommit = onChain && latest !== undefined && snap?.['snapshot-id'] === latest.id;
  const upToDate = gap.notVisible === 0 && gap.noLongerLive === 0 && (sameCommit || !usesDeletionVectors(table));
  return {
    storage,
    format_version: m['format-version'],
    metadata_location: storeUri(table.store, current.key),
    exported_snapshot: m['current-snapshot-id'],
    exported_at: exportedAt === undefined ? null : new Date(exportedAt).toISOString(),
    latest_snapshot: latest?.id ?? null,
    snapshots_behind: !onChain ? null : latest ? Math.max(0, latest.id - m['current-snapshot-id']) : 0,
    seconds_behind: latest && exportedAt !== undefined ? Math.max(0, (latest.timeMillis - exportedAt) / 1000) : 0,
    data_files: snap ? Number(snap.summary['total-data-files']) : null,
    records: snap ? Number(snap.summary['total-records']) : null,
    up_to_date: upToDate,
    files_not_visible: gap.notVisible,
    rows_not_visible: gap.rowsNotVisible,
    files_no_longer_live: gap.noLongerLive,
    view_age_seconds: upToDate || gap.oldestMissed === undefined ? 0 : Math.max(0, (now - gap.oldestMissed) / 1000),
    export_due: (await icebergExportDue(table, latest)) !== undefined,
  };
}

/**
 * One sentence on what Iceberg readers miss, for `varve export-iceberg`; undefined when they see
 * exactly the latest snapshot.
 */
export function icebergViewGapText(table: Table, s: IcebergStatus): string | undefined {
  if (s.up_to_date !== false) return undefined;
  const parts: string[] = [];
  if (s.files_not_visible) {
    const why =
      table.schema.primaryKeys.length > 0 && !usesDeletionVectors(table)
        ? `until a full compaction of their buckets (\`varve compact ${table.name} --full\`, or full-compaction.delta-commits)`
        : 'until the next export';
    parts.push(`do not see ${s.rows_not_visible} rows in ${s.files_not_visible} files written since, ${why}`);
  }
  if (s.files_no_longer_live)
    parts.push(`still read ${s.files_no_longer_live} files whose rows varve has since deleted or rewritten`);
  if (parts.length === 0)
    parts.push(`do not see the deletes committed after snapshot ${s.exported_snapshot} yet (until the next export)`);
  return `the Iceberg view is stale: Iceberg readers ${parts.join(', and ')} (the oldest change they miss is ${Math.round(s.view_age_seconds ?? 0)} s old; \`varve sys ${table.name} iceberg\` shows the gap)`;
}

/** `icebergStatus` as a system table of one record. */
export async function icebergSystemTable(
  table: Table,
): Promise<{ columns: string[]; records: Array<Record<string, DisplayValue>> }> {
  const status = await icebergStatus(table);
  return { columns: Object.keys(status), records: [status as unknown as Record<string, DisplayValue>] };
}
