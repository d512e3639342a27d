/**
 * Metadata of data files, manifest entries, manifest lists and snapshots, as stored (JSON).
 *
 * Keys in metadata (minKey/maxKey) are arrays with one JSON-safe value per primary-key column,
 * encoded with `toJsonValue` of lib/schema (BIGINT, TIMESTAMP and DECIMAL as decimal strings,
 * BYTES as base64), so that JSON round-trips them exactly.
 */

export type JsonValue = string | number | boolean | null;

/** Where a data file came from: a writer's flush or a compaction. */
export type FileSource = 'APPEND' | 'COMPACT';

export interface DataFileMeta {
  /** File name only; the folder is `[partition/]bucket-<n>/`. */
  fileName: string;
  fileSize: number;
  /** Rows, including retract rows. */
  rowCount: number;
  /** First and last primary key of the file (files are sorted by key). */
  minKey: JsonValue[];
  maxKey: JsonValue[];
  /**
   * Added to the `_SEQUENCE_NUMBER` stored in each row to give its absolute sequence number.
   * A writer numbers its batch 0,1,2,… and the commit assigns the base from the snapshot's
   * `nextSequenceNumber`; compaction output stores absolute numbers with base 0.
   */
  sequenceBase: number;
  /** Absolute (base included) smallest and largest sequence number in the file. */
  minSequenceNumber: number;
  maxSequenceNumber: number;
  schemaId: number;
  /** LSM level: 0 for flushes and changelog files. */
  level: number;
  /** Epoch milliseconds. */
  creationTime: number;
  /** Number of -U/-D rows. */
  deleteRowCount: number;
  fileSource: FileSource;
}

export type FileKind = 'ADD' | 'DELETE';

export interface ManifestEntry {
  kind: FileKind;
  /** Partition path, e.g. `dt=2024-01-01/region=eu`; '' for an unpartitioned table. */
  partition: string;
  bucket: number;
  totalBuckets: number;
  file: DataFileMeta;
}

/** One row of a manifest list: a manifest file and its summary, for pruning. */
export interface ManifestFileMeta {
  fileName: string;
  fileSize: number;
  numAddedFiles: number;
  numDeletedFiles: number;
  schemaId: number;
  minBucket: number;
  maxBucket: number;
  minLevel: number;
  maxLevel: number;
  /** Smallest and largest partition path in the manifest (string order), for pruning. */
  minPartition: string;
  maxPartition: string;
}

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
  properties?: Record<string, string>;
}
