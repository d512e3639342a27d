/** The files of a table at one snapshot: the convenience most readers start from. */
import type { ManifestCache } from '../manifest/manifest-file.js';
import { readLiveFiles, type ScanFilter } from '../manifest/scan.js';
import type { ManifestEntry } from '../manifest/types.js';
import type { Snapshot } from './snapshot.js';
import type { ObjectStore } from '../store/object-store.js';
import { SnapshotManager } from './snapshot-manager.js';

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
