/**
 * The data files the snapshots of the current Iceberg metadata read (the current one and every
 * one time travel reaches). Snapshot expiry, rollback and orphan cleanup keep them, so neither a
 * lagging export (its next run failed, or has not happened yet) nor an Iceberg history that still
 * lists snapshots varve expired or rolled back points Iceberg readers at deleted files; once the
 * export moves on and trims its history, orphan cleanup removes them.
 */
import type { Table } from '../table/table.js';
import { listedDataFileKeys } from './iceberg-manifests.js';
import { icebergLocation, readCurrentIcebergMetadata } from './iceberg-metadata.js';

/** Store keys of the data files of every snapshot the current Iceberg metadata lists; empty when the export is disabled or never ran. */
export async function icebergReferencedKeys(table: Table): Promise<Set<string>> {
  const loc = icebergLocation(table);
  if (loc === undefined) return new Set();
  const current = await readCurrentIcebergMetadata(table.store, loc);
  if (current === undefined) return new Set();
  return listedDataFileKeys(table.store, current.metadata);
}
