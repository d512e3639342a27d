/**
 * The entries of one export's manifests: which varve files an Iceberg reader sees (exportedFiles)
 * and, against the files the previous export listed, each one as ADDED (new), EXISTING (kept
 * with its first snapshot and sequence number) or DELETED (left since the previous export). Data
 * files go in a data manifest (content 0); a deletion-vector table's position delete files
 * (position-deletes.ts) in a delete manifest of their own (content 1), planned the same way.
 */
import { IcebergExportError } from '../errors.js';
import type { ManifestEntry } from '../manifest/types.js';
import { dataFileKey } from '../manifest/table-paths.js';
import type { TableSchema } from '../schema/types.js';
import type { Table } from '../table/table.js';
import type { IcebergFormatVersion, PartitionAvroField } from './avro-schemas.js';
import { EntryStatus, exportedFileId, FileContent, type ExportedFile } from './iceberg-manifests.js';
import { POSITION_DELETE_FILE_PATH_ID } from './position-deletes.js';
import { storeUri } from './iceberg-metadata.js';
import {
  partitionAvroFields,
  partitionAvroValue,
  partitionValuesOf,
  type IcebergPartitionSpec,
} from './iceberg-schema.js';

/** Counts of one manifest's entries, as its manifest list row and the snapshot summary report them. */
export interface EntryStats {
  added: number;
  existing: number;
  deleted: number;
  addedRows: bigint;
  existingRows: bigint;
  deletedRows: bigint;
  /** Deletion vectors (v3) among the added and the deleted entries (the others of a delete manifest are position delete files). */
  addedVectors: number;
  deletedVectors: number;
  /** Smallest data sequence number of the manifest's live entries. */
  minSeq: bigint;
}

/** One export's planned data manifest. */
export interface DataEntries {
  /** Manifest entries in the Avro shape of manifestEntrySchema(avroFields). */
  entries: unknown[];
  stats: EntryStats;
  /** The partition tuple's Avro fields (Avro-compatible names). */
  avroFields: PartitionAvroField[];
  /** Files an Iceberg reader of this snapshot reads. */
  files: number;
  records: number;
  /**
   * v3 data manifest: the row ids it assigns by inheritance (spec "First Row ID Inheritance"): the
   * records of its data files written without a first_row_id, which come first in entry order
   * except DELETED ones, written last so they never shift a live file's ids. 0 otherwise.
   */
  assignedRowIds: bigint;
}

/** True for a table with deletion vectors: every live file minus its vector is exactly the table. */
export function usesDeletionVectors(table: Table): boolean {
  return table.schema.primaryKeys.length > 0 && table.options.get('deletion-vectors.enabled') === true;
}

/**
 * The files of `live` an Iceberg reader must see: each bucket's highest level for a primary-key
 * table, all files otherwise (a table without a primary key, or with deletion vectors, whose
 * position deletes then drop the superseded and retract rows).
 */
export function exportedFiles(table: Table, live: readonly ManifestEntry[]): ManifestEntry[] {
  if (table.schema.primaryKeys.length === 0 || usesDeletionVectors(table)) return [...live];
  const top = table.options.numLevels - 1;
  // A bucket's highest level is num-levels - 1, or higher when num-levels was lowered since.
  const maxLevel = new Map<string, number>();
  for (const e of live) {
    const id = `${e.partition}\u0000${e.bucket}`;
    maxLevel.set(id, Math.max(maxLevel.get(id) ?? top, e.file.level));
  }
  const out = live.filter((e) => e.file.level === maxLevel.get(`${e.partition}\u0000${e.bucket}`));
  for (const e of out) {
    if (e.file.deleteRowCount > 0) {
      // Compaction drops retractions on its way to the highest level; a file there with some
      // would make Iceberg readers return deleted rows.
      throw new IcebergExportError(
        `${table.name}: ${e.partition}/bucket-${e.bucket}/${e.file.fileName} sits on the highest level (${e.file.level}) but holds ${e.file.deleteRowCount} retract rows; run \`varve verify ${table.name}\` and a full compaction, then export again`,
        { retryable: false },
      );
    }
  }
  return out;
}

/** Iceberg's rule for field names Avro cannot hold: invalid characters become `_x<HEX>`. */
function avroCompatibleName(name: string): string {
  let out = '';
  for (let i = 0; i < name.length; i++) {
    const c = name[i];
    const ok = /[A-Za-z_]/.test(c) || (i > 0 && /[0-9]/.test(c));
    out += ok ? c : /[0-9]/.test(c) ? `_${c}` : `_x${c.codePointAt(0)!.toString(16).toUpperCase()}`;
  }
  return out;
}

/** A file one export lists: a data file or a position delete file. */
export interface PlannedFile {
  /** Absolute location. */
  path: string;
  /** The varve partition path of the file. */
  partition: string;
  records: number;
  size: number;
  /** Set for a position delete file or deletion vector: the location of the one data file it applies to. */
  deletesFrom?: string;
  /** Set for a deletion vector (v3): its blob's bytes in the Puffin file at `path`. */
  blob?: { offset: number; length: number };
}

/** The file_format of a planned or exported file: a deletion vector lies in a Puffin file, everything else is Parquet. */
function formatOf(isVector: boolean): string {
  return isVector ? 'PUFFIN' : 'PARQUET';
}

/** What a data_file record says about one file (a data file, a position delete file, a deletion vector). */
interface FileRecord {
  path: string;
  partition: Record<string, unknown>;
  records: bigint;
  size: bigint;
  format: string;
  deletesFrom?: string;
  contentOffset?: bigint;
  contentSize?: bigint;
  firstRowId?: bigint;
}

/**
 * The Avro `data_file` record of a data file or (with `deletesFrom`) of a position delete file or
 * deletion vector, whose file_path bounds name the one data file it applies to, as Iceberg's
 * writers record them (readers then match it to that file only). No column statistics otherwise:
 * see docs/ICEBERG.md. Format 3 adds (spec "Data File Fields") first_row_id (a data file's, null
 * when inherited), referenced_data_file, and a deletion vector's content_offset and
 * content_size_in_bytes, which must equal its blob's offset and length in the Puffin footer.
 */
function dataFileRecord(f: FileRecord, version: IcebergFormatVersion): Record<string, unknown> {
  const { deletesFrom } = f;
  const bound =
    deletesFrom === undefined ? null : [{ key: POSITION_DELETE_FILE_PATH_ID, value: Buffer.from(deletesFrom, 'utf8') }];
  const v3 =
    version === 3
      ? {
          first_row_id: f.firstRowId ?? null,
          referenced_data_file: deletesFrom ?? null,
          content_offset: f.contentOffset ?? null,
          content_size_in_bytes: f.contentSize ?? null,
        }
      : {};
  return {
    content: deletesFrom === undefined ? FileContent.DATA : FileContent.POSITION_DELETES,
    file_path: f.path,
    file_format: f.format,
    partition: f.partition,
    record_count: f.records,
    file_size_in_bytes: f.size,
    column_sizes: null,
    value_counts: null,
    null_value_counts: null,
    nan_value_counts: null,
    lower_bounds: bound,
    upper_bounds: bound,
    key_metadata: null,
    split_offsets: null,
    equality_ids: null,
    sort_order_id: null,
    ...v3,
  };
}

/** Builds each partition path's Avro tuple once. */
function partitionTuples(
  table: Table,
  schema: TableSchema,
  avroFields: readonly PartitionAvroField[],
): (partition: string) => Record<string, unknown> {
  const types = schema.partitionKeys.map((k) => schema.fields.find((f) => f.name === k)!.type);
  const tuples = new Map<string, Record<string, unknown>>();
  return (partition) => {
    let t = tuples.get(partition);
    if (!t) {
      const values = partitionValuesOf(schema, partition, table.options.partitionDefaultName);
      t = Object.fromEntries(avroFields.map((f, i) => [f.name, partitionAvroValue(types[i], values[i])]));
      tuples.set(partition, t);
    }
    return t;
  };
}

/** The data files of `files` (varve manifest entries) as planned files. */
export function plannedDataFiles(table: Table, files: readonly ManifestEntry[]): PlannedFile[] {
  return files.map((e) => ({
    path: storeUri(table.store, dataFileKey(table.path, e.partition, e.bucket, e.file.fileName)),
    partition: e.partition,
    records: e.file.rowCount,
    size: e.file.fileSize,
  }));
}

/** The data_file record of a planned file, its first row id left to the caller. */
function plannedRecord(f: PlannedFile, partition: Record<string, unknown>): FileRecord {
  return {
    path: f.path,
    partition,
    records: BigInt(f.records),
    size: BigInt(f.size),
    format: formatOf(f.blob !== undefined),
    deletesFrom: f.deletesFrom,
    contentOffset: f.blob && BigInt(f.blob.offset),
    contentSize: f.blob && BigInt(f.blob.length),
  };
}

/**
 * The manifest (data or deletes) of Iceberg snapshot `id` (sequence number `seq`, format
 * `version`) holding `files`: a file the previous export listed (`before`, by exportedFileId, of
 * the same content) keeps its snapshot and sequence numbers (and in v3 its first row id); one it
 * listed that `files` lacks is a DELETED entry, written after every live one.
 */
export function planEntries(
  table: Table,
  schema: TableSchema,
  spec: IcebergPartitionSpec,
  files: readonly PlannedFile[],
  before: ReadonlyMap<string, ExportedFile>,
  at: { id: bigint; seq: bigint; version: IcebergFormatVersion },
): DataEntries {
  const avroFields = partitionAvroFields(schema, spec).map((f) => ({ ...f, name: avroCompatibleName(f.name) }));
  const tupleOf = partitionTuples(table, schema, avroFields);
  const entries: unknown[] = [];
  const kept = new Set<string>();
  const stats: EntryStats = {
    added: 0,
    existing: 0,
    deleted: 0,
    addedRows: 0n,
    existingRows: 0n,
    deletedRows: 0n,
    addedVectors: 0,
    deletedVectors: 0,
    minSeq: at.seq,
  };
  let records = 0;
  let assignedRowIds = 0n;
  // A v3 data file without a first row id gets the manifest's next ones on read (spec "First Row ID Inheritance").
  const assigns = (isData: boolean, firstRowId: bigint | undefined, rows: bigint) => {
    if (at.version === 3 && isData && firstRowId === undefined) assignedRowIds += rows;
    return at.version === 3 && isData ? firstRowId : undefined;
  };
  for (const f of files) {
    const id = exportedFileId(f.path, f.blob?.offset);
    const old = before.get(id);
    const rows = BigInt(f.records);
    records += f.records;
    kept.add(id);
    if (old) {
      stats.existing++;
      stats.existingRows += rows;
      if (old.sequenceNumber < stats.minSeq) stats.minSeq = old.sequenceNumber;
    } else {
      stats.added++;
      stats.addedRows += rows;
      if (f.blob !== undefined) stats.addedVectors++;
    }
    const record: FileRecord = {
      ...plannedRecord(f, tupleOf(f.partition)),
      firstRowId: assigns(f.deletesFrom === undefined, old?.firstRowId, rows),
    };
    entries.push({
      status: old ? EntryStatus.EXISTING : EntryStatus.ADDED,
      snapshot_id: old ? old.snapshotId : at.id,
      sequence_number: old ? old.sequenceNumber : at.seq,
      file_sequence_number: old ? old.fileSequenceNumber : at.seq,
      data_file: dataFileRecord(record, at.version),
    });
  }
  for (const [id, old] of before) {
    if (kept.has(id)) continue;
    stats.deleted++;
    stats.deletedRows += old.recordCount;
    if (old.format === formatOf(true)) stats.deletedVectors++;
    const record: FileRecord = {
      ...old,
      records: old.recordCount,
      size: old.fileSize,
      firstRowId: assigns(old.content === FileContent.DATA, old.firstRowId, old.recordCount),
    };
    entries.push({
      status: EntryStatus.DELETED,
      snapshot_id: at.id,
      sequence_number: old.sequenceNumber,
      file_sequence_number: old.fileSequenceNumber,
      data_file: dataFileRecord(record, at.version),
    });
  }
  return { entries, stats, avroFields, files: files.length, records, assignedRowIds };
}
