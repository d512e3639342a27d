/**
 * `varve sys <table> iceberg`: what Iceberg readers see of the table and how far it lags behind.
 */
import type { DisplayValue } from '../table/system-tables.js';
import type { Table } from '../table/table.js';
import { icebergExportDue } from './export-trigger.js';
import { icebergLocation, icebergStorageOf, readCurrentIcebergMetadata, storeUri } from './iceberg-metadata.js';

/** The export's state as one system-table record. */
export interface IcebergStatus {
  storage: string;
  metadata_location: string | null;
  exported_snapshot: number | null;
  exported_at: string | null;
  latest_snapshot: number | null;
  /** Snapshots committed after the exported one. */
  snapshots_behind: number | null;
  /** Commit time of the latest snapshot minus that of the exported one. */
  seconds_behind: number | null;
  data_files: number | null;
  records: number | null;
  /** False when a snapshot after the exported one changed the highest level: the next commit or `varve export-iceberg` exports it. */
  up_to_date: boolean | null;
}

/** The table's Iceberg export state. */
async function icebergStatus(table: Table): Promise<IcebergStatus> {
  const storage = icebergStorageOf(table);
  const latest = await table.snapshots.latest();
  const none: IcebergStatus = {
    storage, metadata_location: null, exported_snapshot: null, exported_at: null, latest_snapshot: latest?.id ?? null,
    snapshots_behind: null, seconds_behind: null, data_files: null, records: null, up_to_date: null,
  };
  const loc = icebergLocation(table);
  if (loc === undefined) return none;
  const current = await readCurrentIcebergMetadata(table.store, loc);
  if (current === undefined) return { ...none, up_to_date: latest === undefined };
  const m = current.metadata;
  const snap = m.snapshots.find((s) => s['snapshot-id'] === m['current-snapshot-id']);
  const exportedAt = snap?.['timestamp-ms'];
  return {
    storage,
    metadata_location: storeUri(table.store, current.key),
    exported_snapshot: m['current-snapshot-id'],
    exported_at: exportedAt === undefined ? null : new Date(exportedAt).toISOString(),
    latest_snapshot: latest?.id ?? null,
    snapshots_behind: latest ? Math.max(0, latest.id - m['current-snapshot-id']) : 0,
    seconds_behind: latest && exportedAt !== undefined ? Math.max(0, (latest.timeMillis - exportedAt) / 1000) : 0,
    data_files: snap ? Number(snap.summary['total-data-files']) : null,
    records: snap ? Number(snap.summary['total-records']) : null,
    up_to_date: (await icebergExportDue(table, latest)) === undefined,
  };
}

/** `icebergStatus` as a system table of one record. */
export async function icebergSystemTable(table: Table): Promise<{ columns: string[]; records: Array<Record<string, DisplayValue>> }> {
  const status = await icebergStatus(table);
  return { columns: Object.keys(status), records: [status as unknown as Record<string, DisplayValue>] };
}
