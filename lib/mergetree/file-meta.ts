/** The manifest metadata of a data file the merge tree writes (level 0 by a writer, higher by compaction). */
import type * as arrow from 'apache-arrow';
import type { DataFileChecksums } from '../format/data-file-checksum.js';
import { fileStatsOf, type FileStats } from '../format/file-stats.js';
import { mergeValueStats, storedValueStats } from '../format/value-stats.js';
import type { DataFileMeta } from '../manifest/types.js';
import type { DataField, TableSchema } from '../schema/types.js';

/**
 * The columns whose value statistics a data file records: every column of an append table (its
 * reads never merge, so a file can be pruned by any column), none of a primary-key table.
 */
export function valueStatsFields(schema: TableSchema): DataField[] | undefined {
  return schema.primaryKeys.length === 0 ? schema.fields : undefined;
}

/** Metadata of a key-sorted data table about to be (or just) written as a file. */
export function fileMetaOf(
  keyFields: DataField[],
  data: arrow.Table,
  f: {
    fileName: string;
    fileSize: number;
    schemaId: number;
    level: number;
    source: 'APPEND' | 'COMPACT';
    sequenceBase?: number;
    valueFields?: DataField[];
    checksums?: DataFileChecksums;
  },
): DataFileMeta {
  return fileMetaOfStats(fileStatsOf(keyFields, data, f.valueFields), f);
}

/** The statistics of a file written piece by piece: `b`'s rows follow `a`'s in key order. */
export function addFileStats(a: FileStats | null, b: FileStats): FileStats {
  if (a === null) return b;
  return {
    rowCount: a.rowCount + b.rowCount,
    minKey: a.minKey,
    maxKey: b.maxKey,
    minStoredSequence: Math.min(a.minStoredSequence, b.minStoredSequence),
    maxStoredSequence: Math.max(a.maxStoredSequence, b.maxStoredSequence),
    deleteRowCount: a.deleteRowCount + b.deleteRowCount,
    ...(a.valueStats && b.valueStats ? { valueStats: mergeValueStats(a.valueStats, b.valueStats) } : {}),
  };
}

/** Metadata of a file from its statistics (see `fileMetaOf`). */
export function fileMetaOfStats(
  stats: FileStats,
  f: {
    fileName: string;
    fileSize: number;
    schemaId: number;
    level: number;
    source: 'APPEND' | 'COMPACT';
    sequenceBase?: number;
    checksums?: DataFileChecksums;
  },
): DataFileMeta {
  const base = f.sequenceBase ?? 0;
  return {
    fileName: f.fileName,
    fileSize: f.fileSize,
    rowCount: stats.rowCount,
    minKey: stats.minKey,
    maxKey: stats.maxKey,
    sequenceBase: base,
    minSequenceNumber: stats.minStoredSequence + base,
    maxSequenceNumber: stats.maxStoredSequence + base,
    schemaId: f.schemaId,
    level: f.level,
    creationTime: Date.now(),
    deleteRowCount: stats.deleteRowCount,
    fileSource: f.source,
    ...(stats.valueStats ? { valueStats: storedValueStats(stats.valueStats) } : {}),
    ...(f.checksums !== undefined ? { footerCrc32: f.checksums.footerCrc32, fileCrc32: f.checksums.fileCrc32 } : {}),
  };
}
