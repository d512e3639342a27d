/**
 * The data files the current Iceberg snapshot of a table reads. Snapshot expiry and orphan
 * cleanup keep them, so a lagging export (its next run failed, or has not happened yet) never
 * points Iceberg readers at deleted files; once the export moves on, orphan cleanup removes them.
 */
import type { Table } from '../table/table.js';
import { currentDataFileKeys } from './iceberg-manifests.js';
import { icebergLocation, readCurrentIcebergMetadata } from './iceberg-metadata.js';

/** Store keys of the data files of the current Iceberg snapshot; empty when the export is disabled or never ran. */
export async function icebergReferencedKeys(table: Table): Promise<Set<string>> {
  const loc = icebergLocation(table);
  if (loc === undefined) return new Set();
  const current = await readCurrentIcebergMetadata(table.store, loc);
  if (current === undefined) return new Set();
  return new Set(await currentDataFileKeys(table.store, current.metadata));
}
