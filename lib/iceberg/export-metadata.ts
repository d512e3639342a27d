/**
 * The table metadata JSON of one export: the new Iceberg snapshot (its summary says what changed
 * and which varve commit it is) appended to the kept history, with the schemas, the partition
 * spec and the name mapping.
 */
import { createHash } from 'node:crypto';
import type { TableSchema } from '../schema/types.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import type { Table } from '../table/table.js';
import type { IcebergFormatVersion } from './avro-schemas.js';
import { usesDeletionVectors, type EntryStats } from './export-entries.js';
import { COMMIT_UUID_SUMMARY, commitUuidOf, keptMetadataLog, METADATA_VERSION_SUMMARY } from './export-history.js';
import { storeUri, type IcebergLocation, type IcebergSnapshot, type IcebergTableMetadata } from './iceberg-metadata.js';
import {
  FIRST_PARTITION_FIELD_ID,
  nameMappingOf,
  type IcebergPartitionSpec,
  type IcebergSchema,
} from './iceberg-schema.js';

/** What the metadata of one export is built from. */
export interface ExportedVersion {
  table: Table;
  loc: IcebergLocation;
  snapshot: Snapshot;
  schema: TableSchema;
  icebergSchema: IcebergSchema;
  spec: IcebergPartitionSpec;
  /** The version this one replaces (undefined for the first export), and its URI. */
  prev?: IcebergTableMetadata;
  prevUri?: string;
  /** The metadata version being written (`v<version>.metadata.json`). */
  version: number;
  /** The Iceberg format version (`metadata.iceberg.format-version`). */
  formatVersion: IcebergFormatVersion;
  /** v3: the snapshot's first-row-id and the row ids its data manifest assigns (`added-rows`). */
  rowLineage?: { firstRowId: bigint; addedRows: bigint };
  seq: number;
  manifestListUri: string;
  stats: EntryStats;
  files: number;
  records: number;
  /** A deletion-vector table's position delete files: their manifest's counts, how many files and deleted positions. */
  deletes?: { stats: EntryStats; files: number; records: number };
  /** Snapshots of `prev` that stay in the history. */
  kept: IcebergSnapshot[];
  now: number;
  /** A uuid for a table exported for the first time. */
  tableUuid: string;
}

/**
 * Iceberg's operation for the change: a compaction of a table without a primary key, or with
 * deletion vectors, rewrites files without changing rows (`replace`); otherwise by what the
 * manifests add and delete: only new data files is an `append`, only removed data files or new
 * position deletes a `delete`, both an `overwrite`. (A primary-key table's compaction does change
 * what Iceberg readers see of it without deletion vectors: new rows reach the top level.)
 */
function icebergOperation(
  table: Table,
  snapshot: Snapshot,
  stats: EntryStats,
  deletes: EntryStats | undefined,
): string {
  const rowsKept = table.schema.primaryKeys.length === 0 || usesDeletionVectors(table);
  const changed =
    stats.added > 0 || stats.deleted > 0 || (deletes !== undefined && (deletes.added > 0 || deletes.deleted > 0));
  if (rowsKept && snapshot.commitKind === 'COMPACT' && changed) return 'replace';
  const removes = stats.deleted > 0 || (deletes?.added ?? 0) > 0;
  return !removes ? 'append' : stats.added === 0 ? 'delete' : 'overwrite';
}

/**
 * The summary's delete-file counts (spec "Snapshot Summary"; zeros for a table without deletion
 * vectors), as Iceberg's own writers count them: every delete file in `added-delete-files` /
 * `removed-delete-files`, and by kind: position delete files (v2, and those a v3 upgrade removes)
 * in `added-position-delete-files` / `removed-position-delete-files`, deletion vectors (v3) in
 * `added-dvs` / `removed-dvs`; their positions in the `*-position-deletes` counts either way.
 */
function deleteSummary(d: ExportedVersion['deletes']): Record<string, string> {
  if (d === undefined)
    return { 'total-delete-files': '0', 'total-position-deletes': '0', 'total-equality-deletes': '0' };
  const s = d.stats;
  return {
    'added-delete-files': String(s.added),
    'added-position-delete-files': String(s.added - s.addedVectors),
    'added-dvs': String(s.addedVectors),
    'removed-delete-files': String(s.deleted),
    'removed-position-delete-files': String(s.deleted - s.deletedVectors),
    'removed-dvs': String(s.deletedVectors),
    'added-position-deletes': String(s.addedRows),
    'removed-position-deletes': String(s.deletedRows),
    'total-delete-files': String(d.files),
    'total-position-deletes': String(d.records),
    'total-equality-deletes': '0',
  };
}

/** The Iceberg snapshot of one export. */
function exportedSnapshot(v: ExportedVersion): IcebergSnapshot {
  const { snapshot, stats } = v;
  const parent = v.kept.at(-1)?.['snapshot-id'];
  const uuid = commitUuidOf(snapshot);
  return {
    'snapshot-id': snapshot.id,
    ...(parent !== undefined ? { 'parent-snapshot-id': parent } : {}),
    'sequence-number': v.seq,
    'timestamp-ms': snapshot.timeMillis,
    'manifest-list': v.manifestListUri,
    summary: {
      operation: icebergOperation(v.table, snapshot, stats, v.deletes?.stats),
      'added-data-files': String(stats.added),
      'deleted-data-files': String(stats.deleted),
      'added-records': String(stats.addedRows),
      'deleted-records': String(stats.deletedRows),
      'total-data-files': String(v.files),
      'total-records': String(v.records),
      ...deleteSummary(v.deletes),
      'varve.commit-kind': snapshot.commitKind,
      ...(uuid !== undefined ? { [COMMIT_UUID_SUMMARY]: uuid } : {}),
      [METADATA_VERSION_SUMMARY]: String(v.version),
    },
    'schema-id': v.icebergSchema['schema-id'],
    // v3 (spec "Snapshots", "Snapshot Row IDs"): required on every snapshot a v3 writer adds.
    ...(v.rowLineage !== undefined
      ? { 'first-row-id': Number(v.rowLineage.firstRowId), 'added-rows': Number(v.rowLineage.addedRows) }
      : {}),
  };
}

/** The table metadata JSON of one export. */
export function exportedMetadata(v: ExportedVersion): IcebergTableMetadata {
  const { prev, snapshot, icebergSchema, spec, table } = v;
  const schemas: IcebergSchema[] = [
    ...(prev?.schemas ?? []).filter((s) => s['schema-id'] !== icebergSchema['schema-id']),
    icebergSchema,
  ].sort((a, b) => a['schema-id'] - b['schema-id']);
  const snapshots = [...v.kept, exportedSnapshot(v)];
  const keptIds = new Set(snapshots.map((s) => s['snapshot-id']));
  return {
    'format-version': v.formatVersion,
    'table-uuid': prev?.['table-uuid'] ?? v.tableUuid,
    location: v.loc.tableUri,
    'last-sequence-number': v.seq,
    'last-updated-ms': Math.max(v.now, prev?.['last-updated-ms'] ?? 0),
    'last-column-id': Math.max(v.schema.highestFieldId, prev?.['last-column-id'] ?? 0),
    'current-schema-id': icebergSchema['schema-id'],
    schemas,
    'default-spec-id': spec['spec-id'],
    'partition-specs': [spec],
    'last-partition-id': FIRST_PARTITION_FIELD_ID + spec.fields.length - 1,
    'default-sort-order-id': 0,
    'sort-orders': [{ 'order-id': 0, fields: [] }],
    properties: {
      'schema.name-mapping.default': nameMappingOf(schemas),
      'write.parquet.compression-codec': table.options.fileCompression,
      'varve.table': table.name,
    },
    'current-snapshot-id': snapshot.id,
    refs: { main: { 'snapshot-id': snapshot.id, type: 'branch' } },
    snapshots,
    'snapshot-log': [
      ...(prev?.['snapshot-log'] ?? []).filter(
        (l) => keptIds.has(l['snapshot-id']) && l['snapshot-id'] !== snapshot.id,
      ),
      { 'timestamp-ms': snapshot.timeMillis, 'snapshot-id': snapshot.id },
    ],
    'metadata-log': keptMetadataLog(prev, v.prevUri, snapshots),
    statistics: [],
    // v3: higher than every assigned row id (spec "Table Metadata Fields"); the next snapshot's first-row-id.
    ...(v.rowLineage !== undefined ? { 'next-row-id': Number(v.rowLineage.firstRowId + v.rowLineage.addedRows) } : {}),
  };
}

/** A UUID derived from `text` (name-based, SHA-1, like RFC 4122 version 5), so a table keeps its Iceberg uuid. */
function nameUuid(text: string): string {
  const h = createHash('sha1').update(text).digest();
  h[6] = (h[6] & 0x0f) | 0x50;
  h[8] = (h[8] & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

/** Iceberg's table uuid of a varve table: derived from its location and creation time. */
export function tableUuidOf(table: Table, firstSchema: TableSchema): string {
  return nameUuid(`${storeUri(table.store, table.path)}#${firstSchema.timeMillis}`);
}
