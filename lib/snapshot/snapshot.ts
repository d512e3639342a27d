/**
 * The snapshot file: `snapshot/snapshot-<id>`, created once with put-if-absent (the commit point).
 * Its manifest lists belong to the manifest layer; the file itself to the snapshot layer.
 */
export type CommitKind = 'APPEND' | 'COMPACT' | 'OVERWRITE';

/** The JSON content of `snapshot/snapshot-<id>`; created once, with put-if-absent. */
export interface Snapshot {
  version: 1;
  id: number;
  schemaId: number;
  /** Manifest list holding the merged state of the previous snapshot. */
  baseManifestList: string;
  /** Manifest list of this commit's own file changes. */
  deltaManifestList: string;
  /** Manifest list of changelog files this commit produced, if any. */
  changelogManifestList?: string;
  commitUser: string;
  /** Derived from the commit's input so that a retried commit can recognise itself. */
  commitIdentifier: string;
  commitKind: CommitKind;
  timeMillis: number;
  /** Rows of all live data files (unmerged). */
  totalRecordCount: number;
  /** Rows added minus rows removed by this commit. */
  deltaRecordCount: number;
  changelogRecordCount?: number;
  /** Next sequence number to assign; every row committed so far has a smaller one. */
  nextSequenceNumber: number;
  watermark?: number;
  /**
   * Deletion-vector tables: the name (in the manifest folder) of the snapshot's deletion-vector
   * index, the complete list of its live data files' vectors (lib/manifest/deletion-index.ts).
   * Absent: no live file has one.
   */
  deletionVectors?: string;
  properties?: Record<string, string>;
}

/**
 * Snapshot property of a rollback's snapshot (lib/maintenance/rollback.ts): the id of the snapshot
 * whose live files it holds again. The snapshots between that one and the rollback's are undone.
 */
export const ROLLBACK_TARGET_PROPERTY = 'varve.rollback-to';

/** The snapshot a rollback snapshot went back to; undefined for every other snapshot. */
export function rollbackTargetOf(s: Pick<Snapshot, 'properties'>): number | undefined {
  const raw = s.properties?.[ROLLBACK_TARGET_PROPERTY];
  return raw === undefined ? undefined : Number(raw);
}
