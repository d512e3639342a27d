/** Small factories for manifest and commit tests. */
import type { DataFileMeta, ManifestEntry } from '../../lib/manifest/types.js';
import type { JsonValue } from '../../lib/schema/value-codec.js';
import type { CommitOptions, CommitRequest, FileChange } from '../../lib/snapshot/commit.js';

/** Orders keys of JSON scalars (numbers numerically, strings by code unit), column by column. */
export function compareKeys(a: JsonValue[], b: JsonValue[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const x = a[i];
    const y = b[i];
    if (x === y) continue;
    if (x === null) return -1;
    if (y === null) return 1;
    return x < y ? -1 : 1;
  }
  return a.length - b.length;
}

/** A data file's metadata with plausible defaults. */
function dataFile(fileName: string, over: Partial<DataFileMeta> = {}): DataFileMeta {
  const rowCount = over.rowCount ?? 1;
  return {
    fileName,
    fileSize: 100,
    rowCount,
    minKey: [0],
    maxKey: [rowCount - 1],
    sequenceBase: 0,
    minSequenceNumber: 0,
    maxSequenceNumber: rowCount - 1,
    schemaId: 0,
    level: 0,
    creationTime: 1_700_000_000_000,
    deleteRowCount: 0,
    fileSource: 'APPEND',
    ...over,
  };
}

/** Where a file goes and the file. */
export function change(
  fileName: string,
  over: Partial<DataFileMeta> = {},
  at: { partition?: string; bucket?: number; totalBuckets?: number } = {},
): FileChange {
  return {
    partition: at.partition ?? '',
    bucket: at.bucket ?? 0,
    totalBuckets: at.totalBuckets ?? 1,
    file: dataFile(fileName, over),
  };
}

/** A manifest entry. */
export function entry(
  kind: 'ADD' | 'DELETE',
  fileName: string,
  over: Partial<DataFileMeta> = {},
  at: { partition?: string; bucket?: number } = {},
): ManifestEntry {
  return {
    kind,
    partition: at.partition ?? '',
    bucket: at.bucket ?? 0,
    totalBuckets: 1,
    file: dataFile(fileName, over),
  };
}

/** An APPEND of one batch holding the given files (relative sequence numbers within rowCount). */
export function appendRequest(user: string, identifier: string, files: FileChange[], rowCount?: number): CommitRequest {
  const rows = rowCount ?? files.reduce((s, f) => Math.max(s, f.file.maxSequenceNumber + 1), 0);
  return {
    commitUser: user,
    commitIdentifier: identifier,
    kind: 'APPEND',
    schemaId: 0,
    batches: [{ rowCount: rows, newFiles: files, changelogFiles: [] }],
  };
}

/** Commit options for tests: fast retries, test key order. */
export function testCommitOptions(over: Partial<CommitOptions> = {}): CommitOptions {
  return { compareKeys, minRetryWaitMs: 1, maxRetryWaitMs: 20, maxRetries: 50, ...over };
}
