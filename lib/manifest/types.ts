/**
 * Metadata of data files, manifest entries, manifest lists and snapshots, as stored (JSON).
 *
 * Keys in metadata (minKey/maxKey) are arrays with one JSON-safe value per primary-key column,
 * encoded with `toJsonValue` of lib/schema (BIGINT, TIMESTAMP and DECIMAL as decimal strings,
 * BYTES as base64), so that JSON round-trips them exactly.
 */

import type { ValueStats } from '../format/value-stats.js';
import type { JsonValue } from '../schema/value-codec.js';

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
  /** Per-column min / max / null count by field id (append tables; lib/format/value-stats.ts). */
  valueStats?: ValueStats;
  /**
   * CRC-32 of the file's footer (FileMetaData, its length, PAR1), which holds the CRC of every
   * column chunk (lib/format/data-file-checksum.ts); readers check both before decoding. Absent
   * for files written before checksums (read unchecked).
   */
  footerCrc32?: number;
  /** CRC-32 of the whole file (`varve verify` reads files whole and checks it); absent like footerCrc32. */
  fileCrc32?: number;
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
  /**
   * **beyond**: set when the row names only entries [from, to) of the file (the rest belongs to
   * another row). A commit that merges manifests writes its own new entries at the end of the
   * merged manifest instead of into a manifest of their own (one PUT less): the base row names
   * the merged part, the delta row the new part. The summary fields describe the slice only, and
   * `fileSize` is the slice's share of the file's bytes. Read entries through
   * readManifestEntries (manifest-file.ts), never the whole file, when this is set.
   */
  slice?: [from: number, to: number];
}

/** A manifest list's content: its manifests and, for a combined base + delta list, where the delta starts. */
export interface ManifestListContent {
  manifests: readonly ManifestFileMeta[];
  /** Set on a combined list: manifests[0, deltaFrom) are the base, the rest the snapshot's delta. */
  deltaFrom?: number;
}

/** The two manifest lists that hold a snapshot's data files: the merged state before it, then its own changes. */
export interface ManifestListPair {
  baseManifestList: string;
  deltaManifestList: string;
}
