/** The files of a table at one snapshot: the convenience most readers start from. */
import type { ManifestCache } from '../manifest/manifest-file';
import { readLiveFiles, type ScanFilter } from '../manifest/scan';
import type { ManifestEntry, Snapshot } from '../manifest/types';
import type { ObjectStore } from '../store/object-store';
import { SnapshotManager } from './snapshot-manager';

/** A snapshot and its live data files. */
export interface TableState {
  snapshot: Snapshot;
  files: ManifestEntry[];
}

/**
 * The live files of snapshot `snapshotId` (default: the latest), or undefined for a table with no
 * snapshot; SnapshotNotFoundError (naming the available range) for an id that does not exist.
 */
export async function readTableState(
  store: ObjectStore,
  tablePath: string,
  snapshotId?: number,
  filter?: ScanFilter,
  cache?: ManifestCache,
): Promise<TableState | undefined> {
  const sm = new SnapshotManager(store, tablePath);
  const snapshot = snapshotId === undefined ? await sm.latest() : await sm.read(snapshotId);
  if (snapshot === undefined) return undefined;
  return { snapshot, files: await readLiveFiles(store, tablePath, snapshot, filter, cache) };
}
