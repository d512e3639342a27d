/**
 * The Iceberg export (Paimon's Iceberg compatibility): writes Iceberg format-version 2 metadata
 * that references the table's data files in place, so Iceberg readers see the table without
 * varve. A primary-key table exports only the files of each bucket's highest level — the merged
 * state as of the bucket's last full compaction, with no retract rows (Paimon's rule); a table
 * without a primary key exports every file. Each export writes, in order:
 *   1. one manifest `<uuid>-m0.avro` (the exported files: ADDED when new, EXISTING with their
 *      first snapshot and sequence number, DELETED when they left since the last export),
 *   2. its manifest list `snap-<id>-1-<uuid>.avro`,
 *   3. `v<id>.metadata.json`, created with put-if-absent: the Iceberg snapshot id, and the
 *      metadata version, is the varve snapshot id, so two exporters of one snapshot agree,
 *   4. `version-hint.text`, moved forward with compare-and-swap (never back to an older version),
 * then trims the Iceberg history to the varve snapshots that still exist. A crash anywhere
 * leaves the previous version current; the next export writes the missing one.
 */
import { createHash, randomUUID } from 'node:crypto';
import { IcebergExportError } from '../errors.js';
import { readLiveFiles } from '../manifest/scan.js';
import type { ManifestEntry } from '../manifest/types.js';
import { dataFileKey } from '../manifest/table-paths.js';
import { readSchema } from '../schema/schema-manager.js';
import type { TableSchema } from '../schema/types.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import { utf8, type ObjectStore } from '../store/object-store.js';
import type { Table } from '../table/table.js';
import { encodeAvroFile } from './avro-file.js';
import { manifestEntrySchema, manifestListSchema } from './avro-schemas.js';
import { EntryStatus, manifestKeyForList, readCurrentEntries, type ExportedFile } from './iceberg-manifests.js';
import {
  icebergLocation,
  metadataFileKey,
  readCurrentIcebergMetadata,
  readVersionHint,
  storeKeyOf,
  storeUri,
  versionHintKey,
  type IcebergLocation,
  type IcebergSnapshot,
  type IcebergTableMetadata,
} from './iceberg-metadata.js';
import {
  FIRST_PARTITION_FIELD_ID,
  icebergPartitionSpecOf,
  icebergSchemaOf,
  nameMappingOf,
  partitionAvroFields,
  partitionAvroValue,
  partitionValuesOf,
  type IcebergSchema,
} from './iceberg-schema.js';

/** Options of one export. */
export interface ExportIcebergOptions {
  /** The snapshot to export. @default the latest */
  snapshot?: Snapshot;
  /** Epoch ms written as the metadata's last-updated-ms. @default Date.now() */
  now?: number;
  /** Unique names of new manifest files. @default randomUUID */
  newId?: () => string;
}

/** What one export did. */
export interface ExportIcebergResult {
  status: 'disabled' | 'empty' | 'exported' | 'up-to-date' | 'newer-exported';
  /** The varve (and Iceberg) snapshot id now current in the Iceberg metadata. */
  snapshotId?: number;
  /** Store key of the metadata file written or found current. */
  metadataKey?: string;
  /** Absolute URI of that metadata file (what a catalog registers). */
  metadataLocation?: string;
  files?: { exported: number; added: number; deleted: number };
  records?: number;
  /** Objects written, and their bytes (manifest, manifest list, metadata, hint). */
  writes: number;
  bytesWritten: number;
  /** Old Iceberg metadata objects deleted by the history trim. */
  trimmed: number;
}

/** The files of `live` an Iceberg reader must see: each bucket's highest level for a primary-key table, all files otherwise. */
function exportedFiles(table: Table, live: readonly ManifestEntry[]): ManifestEntry[] {
  if (table.schema.primaryKeys.length === 0) return [...live];
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

/** A UUID derived from `text` (name-based, SHA-1, like RFC 4122 version 5), so a table keeps its Iceberg uuid. */
function nameUuid(text: string): string {
  const h = createHash('sha1').update(text).digest();
  h[6] = (h[6] & 0x0f) | 0x50;
  h[8] = (h[8] & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

async function schemaOf(table: Table, id: number): Promise<TableSchema> {
  return id === table.schema.id ? table.schema : readSchema(table.store, table.path, id);
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

async function put(store: ObjectStore, key: string, body: Uint8Array, counter: { writes: number; bytesWritten: number }): Promise<void> {
  await store.put(key, body);
  counter.writes++;
  counter.bytesWritten += body.byteLength;
}

/**
 * Writes the Iceberg metadata of a snapshot (the latest by default) unless it is already current;
 * never moves the export back to an older snapshot. See the file comment for the order of writes.
 */
export async function exportIceberg(table: Table, opts: ExportIcebergOptions = {}): Promise<ExportIcebergResult> {
  const counter = { writes: 0, bytesWritten: 0 };
  const loc = icebergLocation(table);
  if (loc === undefined) return { status: 'disabled', ...counter, trimmed: 0 };
  const store = table.store;
  const snapshot = opts.snapshot ?? (await table.snapshots.latest());
  if (snapshot === undefined) return { status: 'empty', ...counter, trimmed: 0 };
  const current = await readCurrentIcebergMetadata(store, loc);
  const prev = current?.metadata;
  if (prev !== undefined && prev['current-snapshot-id'] >= snapshot.id) {
    return {
      status: prev['current-snapshot-id'] === snapshot.id ? 'up-to-date' : 'newer-exported',
      snapshotId: prev['current-snapshot-id'],
      metadataKey: current!.key,
      metadataLocation: storeUri(store, current!.key),
      ...counter,
      trimmed: 0,
    };
  }
  const now = opts.now ?? Date.now();
  const newId = opts.newId ?? randomUUID;
  const schema = await schemaOf(table, snapshot.schemaId);
  const icebergSchema = icebergSchemaOf(schema);
  const spec = icebergPartitionSpecOf(schema);
  const live = await readLiveFiles(store, table.path, snapshot, {}, table.manifestCache);
  const files = exportedFiles(table, live);

  // Entries: files the previous export already had keep their snapshot and sequence numbers.
  const seq = (prev?.['last-sequence-number'] ?? 0) + 1;
  const id = BigInt(snapshot.id);
  const before = new Map<string, ExportedFile>();
  if (prev !== undefined) for (const e of await readCurrentEntries(store, prev)) if (e.status !== EntryStatus.DELETED) before.set(e.path, e);
  const avroFields = partitionAvroFields(schema, spec).map((f) => ({ ...f, name: avroCompatibleName(f.name) }));
  const partitionTypes = schema.partitionKeys.map((k) => schema.fields.find((f) => f.name === k)!.type);
  const defaultName = table.options.partitionDefaultName;
  const tuples = new Map<string, Record<string, unknown>>();
  const tupleOf = (partition: string): Record<string, unknown> => {
    let t = tuples.get(partition);
    if (!t) {
      const values = partitionValuesOf(schema, partition, defaultName);
      t = Object.fromEntries(avroFields.map((f, i) => [f.name, partitionAvroValue(partitionTypes[i], values[i])]));
      tuples.set(partition, t);
    }
    return t;
  };
  const dataFile = (path: string, partition: Record<string, unknown>, records: bigint, size: bigint) => ({
    content: 0, file_path: path, file_format: 'PARQUET', partition, record_count: records, file_size_in_bytes: size,
    column_sizes: null, value_counts: null, null_value_counts: null, nan_value_counts: null, lower_bounds: null,
    upper_bounds: null, key_metadata: null, split_offsets: null, equality_ids: null, sort_order_id: null,
  });
  const entries: unknown[] = [];
  const kept = new Set<string>();
  const stats = { added: 0, existing: 0, deleted: 0, addedRows: 0n, existingRows: 0n, deletedRows: 0n, minSeq: BigInt(seq) };
  for (const e of files) {
    const path = storeUri(store, dataFileKey(table.path, e.partition, e.bucket, e.file.fileName));
    const old = before.get(path);
    const rows = BigInt(e.file.rowCount);
    kept.add(path);
    if (old) {
      stats.existing++;
      stats.existingRows += rows;
      if (old.sequenceNumber < stats.minSeq) stats.minSeq = old.sequenceNumber;
    } else {
      stats.added++;
      stats.addedRows += rows;
    }
    entries.push({
      status: old ? EntryStatus.EXISTING : EntryStatus.ADDED,
      snapshot_id: old ? old.snapshotId : id,
      sequence_number: old ? old.sequenceNumber : BigInt(seq),
      file_sequence_number: old ? old.fileSequenceNumber : BigInt(seq),
      data_file: dataFile(path, tupleOf(e.partition), rows, BigInt(e.file.fileSize)),
    });
  }
  for (const [path, old] of before) {
    if (kept.has(path)) continue;
    stats.deleted++;
    stats.deletedRows += old.recordCount;
    entries.push({
      status: EntryStatus.DELETED,
      snapshot_id: id,
      sequence_number: old.sequenceNumber,
      file_sequence_number: old.fileSequenceNumber,
      data_file: dataFile(path, old.partition, old.recordCount, old.fileSize),
    });
  }

  const uuid = newId();
  const listKey = `${loc.metadataDir}snap-${snapshot.id}-1-${uuid}.avro`;
  const manifestKey = manifestKeyForList(listKey);
  const schemaJson = JSON.stringify(icebergSchema);
  const specFieldsJson = JSON.stringify(spec.fields);
  const manifests: unknown[] = [];
  if (entries.length > 0) {
    const manifest = await encodeAvroFile(manifestEntrySchema(avroFields), entries, {
      schema: schemaJson,
      'schema-id': String(icebergSchema['schema-id']),
      'partition-spec': specFieldsJson,
      'partition-spec-id': String(spec['spec-id']),
      'format-version': '2',
      content: 'data',
    });
    await put(store, manifestKey, manifest, counter);
    manifests.push({
      manifest_path: storeUri(store, manifestKey),
      manifest_length: BigInt(manifest.byteLength),
      partition_spec_id: spec['spec-id'],
      content: 0,
      sequence_number: BigInt(seq),
      min_sequence_number: stats.minSeq,
      added_snapshot_id: id,
      added_files_count: stats.added,
      existing_files_count: stats.existing,
      deleted_files_count: stats.deleted,
      added_rows_count: stats.addedRows,
      existing_rows_count: stats.existingRows,
      deleted_rows_count: stats.deletedRows,
      partitions: null,
      key_metadata: null,
    });
  }
  const parent = prev?.['current-snapshot-id'];
  const list = await encodeAvroFile(manifestListSchema(), manifests, {
    'snapshot-id': String(snapshot.id),
    ...(parent !== undefined ? { 'parent-snapshot-id': String(parent) } : {}),
    'sequence-number': String(seq),
    'format-version': '2',
  });
  await put(store, listKey, list, counter);

  // History: Iceberg snapshots whose varve snapshot still exists (varve's expiry trims both).
  const earliest = (await table.snapshots.earliestId()) ?? snapshot.id;
  const keptSnapshots = (prev?.snapshots ?? []).filter((s) => s['snapshot-id'] >= earliest);
  const dropped = (prev?.snapshots ?? []).filter((s) => s['snapshot-id'] < earliest && s['snapshot-id'] !== parent);
  const totalRecords = files.reduce((n, e) => n + e.file.rowCount, 0);
  const icebergSnapshot: IcebergSnapshot = {
    'snapshot-id': snapshot.id,
    ...(parent !== undefined ? { 'parent-snapshot-id': parent } : {}),
    'sequence-number': seq,
    'timestamp-ms': snapshot.timeMillis,
    'manifest-list': storeUri(store, listKey),
    summary: {
      operation: stats.deleted === 0 ? 'append' : stats.added === 0 ? 'delete' : 'overwrite',
      'added-data-files': String(stats.added),
      'deleted-data-files': String(stats.deleted),
      'added-records': String(stats.addedRows),
      'deleted-records': String(stats.deletedRows),
      'total-data-files': String(files.length),
      'total-records': String(totalRecords),
      'total-delete-files': '0',
      'total-position-deletes': '0',
      'total-equality-deletes': '0',
      'varve.commit-kind': snapshot.commitKind,
    },
    'schema-id': icebergSchema['schema-id'],
  };
  const schemas: IcebergSchema[] = [...(prev?.schemas ?? []).filter((s) => s['schema-id'] !== icebergSchema['schema-id']), icebergSchema]
    .sort((a, b) => a['schema-id'] - b['schema-id']);
  const snapshots = [...keptSnapshots, icebergSnapshot];
  const keptIds = new Set(snapshots.map((s) => s['snapshot-id']));
  const metadata: IcebergTableMetadata = {
    'format-version': 2,
    'table-uuid': prev?.['table-uuid'] ?? nameUuid(`${storeUri(store, table.path)}#${(await schemaOf(table, 0).catch(() => schema)).timeMillis}`),
    location: loc.tableUri,
    'last-sequence-number': seq,
    'last-updated-ms': Math.max(now, prev?.['last-updated-ms'] ?? 0),
    'last-column-id': Math.max(schema.highestFieldId, prev?.['last-column-id'] ?? 0),
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
    'snapshot-log': [...(prev?.['snapshot-log'] ?? []).filter((l) => keptIds.has(l['snapshot-id'])), { 'timestamp-ms': snapshot.timeMillis, 'snapshot-id': snapshot.id }],
    'metadata-log': [
      ...(prev?.['metadata-log'] ?? []).filter((l) => keptIds.has(versionOfUri(l['metadata-file']) ?? -1)),
      ...(current && prev ? [{ 'timestamp-ms': prev['last-updated-ms'], 'metadata-file': storeUri(store, current.key) }] : []),
    ],
    statistics: [],
  };
  const metadataKey = metadataFileKey(loc, snapshot.id);
  const body = utf8(JSON.stringify(metadata, null, 2));
  // Created once: a second exporter of the same snapshot finds it, and removes its own manifest
  // and list, which nothing references (orphan cleanup never looks into the metadata folder).
  if (await store.putIfAbsent(metadataKey, body)) {
    counter.writes++;
    counter.bytesWritten += body.byteLength;
  } else {
    await store.delete(listKey);
    if (entries.length > 0) await store.delete(manifestKey);
  }
  await advanceVersionHint(store, loc, snapshot.id, counter);
  const trimmed = await trimHistory(store, loc, dropped);
  return {
    status: 'exported',
    snapshotId: snapshot.id,
    metadataKey,
    metadataLocation: storeUri(store, metadataKey),
    files: { exported: files.length, added: stats.added, deleted: stats.deleted },
    records: totalRecords,
    ...counter,
    trimmed,
  };
}

/** The version of a `.../v<N>.metadata.json` URI. */
function versionOfUri(uri: string): number | undefined {
  const m = /\/v(\d+)\.metadata\.json$/.exec(uri);
  return m ? Number(m[1]) : undefined;
}

/** Moves `version-hint.text` to `version` unless it already names a newer one (compare-and-swap). */
async function advanceVersionHint(store: ObjectStore, loc: IcebergLocation, version: number, counter: { writes: number; bytesWritten: number }): Promise<void> {
  const body = utf8(String(version));
  for (let attempt = 0; attempt < 5; attempt++) {
    const hint = await readVersionHint(store, loc);
    if (hint !== undefined && hint.version >= version) return;
    const done = hint === undefined ? await store.putIfAbsent(versionHintKey(loc), body) : await store.putIfMatch(versionHintKey(loc), body, hint.etag);
    if (done) {
      counter.writes++;
      counter.bytesWritten += body.byteLength;
      return;
    }
  }
  // Only a hint: readers (and the next export) fall back to listing the folder.
}

/** Deletes the metadata file, manifest list and manifest of Iceberg snapshots dropped from the history. */
async function trimHistory(store: ObjectStore, loc: IcebergLocation, dropped: readonly IcebergSnapshot[]): Promise<number> {
  let n = 0;
  for (const s of dropped) {
    const listKey = storeKeyOf(store, s['manifest-list']);
    const keys = [metadataFileKey(loc, s['snapshot-id'])];
    if (listKey?.startsWith(loc.metadataDir)) keys.push(listKey, manifestKeyForList(listKey));
    for (const k of keys) {
      await store.delete(k);
      n++;
    }
  }
  return n;
}
