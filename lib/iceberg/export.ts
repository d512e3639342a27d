/**
 * The Iceberg export (Paimon's Iceberg compatibility): writes Iceberg format-version 2 (default)
 * or 3 (`metadata.iceberg.format-version`) metadata that references the table's data files in place, so Iceberg readers see the table without
 * varve. A primary-key table exports only the files of each bucket's highest level — the merged
 * state as of the bucket's last full compaction, with no retract rows (Paimon's rule); a table
 * without a primary key exports every file. Each export writes, in order:
 *   1. one manifest `<uuid>-m0.avro` (the exported files: ADDED when new, EXISTING with their
 *      first snapshot and sequence number, DELETED when they left since the last export),
 *   2. its manifest list `snap-<id>-1-<uuid>.avro`,
 *   3. `v<N>.metadata.json`, N being the current version + 1, created with put-if-absent: that
 *      create is the commit; an exporter that loses it re-reads the current version and plans again,
 *   4. `version-hint.text`, moved forward with compare-and-swap (never back to an older version),
 * then trims the Iceberg history to the varve snapshots still on the chain (export-history.ts).
 * The Iceberg snapshot id is the varve snapshot id, and its summary holds the varve commit uuid:
 * after a rollback an id names another commit. A crash anywhere leaves the previous version
 * current; the next export writes the missing one.
 */
import { randomUUID } from 'node:crypto';
import { IcebergExportError, RetriesExhaustedError } from '../errors.js';
import { readPuffinFooter, type PuffinBlobMeta } from '../format/deletion-vector.js';
import { dvFileIdentity, loadDeletionVector, readDeletionIndex, refIdentity } from '../manifest/deletion-index.js';
import { readLiveFiles } from '../manifest/scan.js';
import { dataFileKey, tableKey } from '../manifest/table-paths.js';
import type { DeletionVectorRef } from '../manifest/deletion-index.js';
import type { ManifestEntry } from '../manifest/types.js';
import { RetryBudget } from '../retry-budget.js';
import { readSchema } from '../schema/schema-manager.js';
import type { TableSchema } from '../schema/types.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import { utf8, type ObjectStore } from '../store/object-store.js';
import type { Table } from '../table/table.js';
import { encodeAvroFile } from './avro-file.js';
import { manifestEntrySchema, manifestListSchema, type IcebergFormatVersion } from './avro-schemas.js';
import {
  exportedFiles,
  planEntries,
  plannedDataFiles,
  usesDeletionVectors,
  type DataEntries,
  type EntryStats,
  type PlannedFile,
} from './export-entries.js';
import {
  currentIcebergSnapshot,
  keptHistory,
  onVarveChain,
  commitUuidOf,
  trimHistory,
  COMMIT_UUID_SUMMARY,
} from './export-history.js';
import { exportedMetadata, tableUuidOf } from './export-metadata.js';
import {
  EntryStatus,
  exportedFileId,
  FileContent,
  manifestKeysForList,
  readCurrentEntries,
  type ExportedFile,
} from './iceberg-manifests.js';
import { encodePositionDeleteFile, positionDeleteFileKey } from './position-deletes.js';
import {
  icebergLocation,
  metadataFileKey,
  readCurrentIcebergMetadata,
  readVersionHint,
  storeUri,
  versionHintKey,
  type IcebergLocation,
  type IcebergTableMetadata,
} from './iceberg-metadata.js';
import {
  icebergPartitionSpecOf,
  icebergSchemaOf,
  type IcebergPartitionSpec,
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

/** Writes counted for the result. */
interface WriteCounter {
  writes: number;
  bytesWritten: number;
}

/** Exporters racing for one metadata version: each loss means another export committed meanwhile. */
const MAX_VERSION_RETRIES = 7;

type CurrentMetadata = Awaited<ReturnType<typeof readCurrentIcebergMetadata>>;

/**
 * Writes the Iceberg metadata of a snapshot (the latest by default) unless it is already current;
 * never moves the export back to an older snapshot of varve's chain. See the file comment for the
 * order of writes.
 */
export async function exportIceberg(table: Table, opts: ExportIcebergOptions = {}): Promise<ExportIcebergResult> {
  const counter: WriteCounter = { writes: 0, bytesWritten: 0 };
  const loc = icebergLocation(table);
  if (loc === undefined) return { status: 'disabled', ...counter, trimmed: 0 };
  const snapshot = opts.snapshot ?? (await table.snapshots.latest());
  if (snapshot === undefined) return { status: 'empty', ...counter, trimmed: 0 };
  const budget = new RetryBudget({
    what: `the Iceberg export of ${table.name} (snapshot ${snapshot.id})`,
    maxRetries: MAX_VERSION_RETRIES,
    advice: `other exports kept committing Iceberg metadata versions; run \`varve export-iceberg ${table.name}\` again`,
  });
  for (;;) {
    const current = await readCurrentIcebergMetadata(table.store, loc);
    const standing = await exportStanding(table, current, snapshot);
    if (standing !== undefined) return { ...standing, ...counter, trimmed: 0 };
    const done = await exportVersion(table, loc, snapshot, current, opts, counter);
    if (done !== undefined) return done;
    await budget.retry(`metadata version ${(current?.version ?? 0) + 1} was created by another export`);
  }
}

/**
 * The result when `snapshot` needs no export: the current Iceberg snapshot is the same commit, or
 * a newer one of varve's chain. A current Iceberg snapshot that a rollback removed never counts.
 */
async function exportStanding(
  table: Table,
  current: CurrentMetadata,
  snapshot: Snapshot,
): Promise<Pick<ExportIcebergResult, 'status' | 'snapshotId' | 'metadataKey' | 'metadataLocation'> | undefined> {
  if (current === undefined) return undefined;
  const exported = currentIcebergSnapshot(current.metadata);
  if (exported === undefined || exported['snapshot-id'] < snapshot.id) return undefined;
  const same = exported['snapshot-id'] === snapshot.id;
  const uuid = exported.summary[COMMIT_UUID_SUMMARY];
  const onChain = same ? uuid === undefined || uuid === commitUuidOf(snapshot) : await onVarveChain(table, exported);
  if (!onChain) return undefined;
  return {
    status: same ? 'up-to-date' : 'newer-exported',
    snapshotId: exported['snapshot-id'],
    metadataKey: current.key,
    metadataLocation: storeUri(table.store, current.key),
  };
}

/** One export's plan: its data manifest, and its delete manifest for a deletion-vector table. */
interface ExportPlan {
  data: DataEntries;
  deletes?: DataEntries;
  icebergSchema: IcebergSchema;
  spec: IcebergPartitionSpec;
  seq: number;
  parent?: number;
  version: IcebergFormatVersion;
  /** v3: the snapshot's first-row-id (the table's next-row-id before it), given to the data manifest. */
  firstRowId: bigint;
}

/** The manifest list row of a manifest written at `key`. */
function manifestListRow(
  store: ObjectStore,
  key: string,
  bytes: number,
  content: number,
  plan: ExportPlan,
  snapshot: Snapshot,
  s: EntryStats,
): unknown {
  return {
    manifest_path: storeUri(store, key),
    manifest_length: BigInt(bytes),
    partition_spec_id: plan.spec['spec-id'],
    content,
    sequence_number: BigInt(plan.seq),
    min_sequence_number: s.minSeq,
    added_snapshot_id: BigInt(snapshot.id),
    added_files_count: s.added,
    existing_files_count: s.existing,
    deleted_files_count: s.deleted,
    added_rows_count: s.addedRows,
    existing_rows_count: s.existingRows,
    deleted_rows_count: s.deletedRows,
    partitions: null,
    key_metadata: null,
    // v3 (spec "First Row ID Assignment"): the one data manifest starts at the snapshot's
    // first-row-id; a delete manifest has none.
    ...(plan.version === 3 ? { first_row_id: content === FileContent.DATA ? plan.firstRowId : null } : {}),
  };
}

/** The manifests and manifest list of one export, written; the keys, for removal when the version is lost. */
async function writeManifests(
  store: ObjectStore,
  loc: IcebergLocation,
  snapshot: Snapshot,
  plan: ExportPlan,
  newId: () => string,
  counter: WriteCounter,
): Promise<{ listKey: string; manifestKeys: string[] }> {
  const { icebergSchema, spec, seq } = plan;
  const listKey = `${loc.metadataDir}snap-${snapshot.id}-1-${newId()}.avro`;
  const keys = manifestKeysForList(listKey);
  const manifests: unknown[] = [];
  const manifestKeys: string[] = [];
  const parts = [
    { key: keys.data, entries: plan.data, content: FileContent.DATA, name: 'data' },
    { key: keys.deletes, entries: plan.deletes, content: FileContent.POSITION_DELETES, name: 'deletes' },
  ];
  for (const part of parts) {
    if (part.entries === undefined || part.entries.entries.length === 0) continue;
    const schema = manifestEntrySchema(part.entries.avroFields, plan.version);
    const manifest = await encodeAvroFile(schema, part.entries.entries, {
      schema: JSON.stringify(icebergSchema),
      'schema-id': String(icebergSchema['schema-id']),
      'partition-spec': JSON.stringify(spec.fields),
      'partition-spec-id': String(spec['spec-id']),
      'format-version': String(plan.version),
      content: part.name,
    });
    await put(store, part.key, manifest, counter);
    manifestKeys.push(part.key);
    manifests.push(
      manifestListRow(store, part.key, manifest.byteLength, part.content, plan, snapshot, part.entries.stats),
    );
  }
  const list = await encodeAvroFile(manifestListSchema(plan.version), manifests, {
    'snapshot-id': String(snapshot.id),
    ...(plan.parent !== undefined ? { 'parent-snapshot-id': String(plan.parent) } : {}),
    'sequence-number': String(seq),
    'format-version': String(plan.version),
    ...(plan.version === 3 ? { 'first-row-id': String(plan.firstRowId) } : {}),
  });
  await put(store, listKey, list, counter);
  return { listKey, manifestKeys };
}

/**
 * One attempt: plans the export of `snapshot` on `current`, writes it and creates the next
 * metadata version. Undefined when another exporter created that version first (this attempt's
 * manifest and list are removed: nothing references them).
 */
async function exportVersion(
  table: Table,
  loc: IcebergLocation,
  snapshot: Snapshot,
  current: CurrentMetadata,
  opts: ExportIcebergOptions,
  counter: WriteCounter,
): Promise<ExportIcebergResult | undefined> {
  const store = table.store;
  const prev = current?.metadata;
  const version = formatVersionOf(table, prev);
  const schema = await schemaOf(table, snapshot.schemaId);
  const icebergSchema = icebergSchemaOf(schema);
  const spec = icebergPartitionSpecOf(schema);
  const files = exportedFiles(table, await readLiveFiles(store, table.path, snapshot, {}, table.manifestCache));
  const seq = (prev?.['last-sequence-number'] ?? 0) + 1;
  const at = { id: BigInt(snapshot.id), seq: BigInt(seq), version };
  const before = await previousFiles(store, prev);
  const data = planEntries(table, schema, spec, plannedDataFiles(table, files), before.data, at);
  const deleted = usesDeletionVectors(table)
    ? await deleteFiles(table, snapshot, files, before.deletes, version, counter)
    : undefined;
  const deletes = deleted && planEntries(table, schema, spec, deleted, before.deletes, at);
  const { kept, dropped } = await keptHistory(table, prev, snapshot);
  const parent = kept.at(-1)?.['snapshot-id'];
  // v3 row lineage (spec "Row Lineage"): an upgraded table starts at next-row-id 0.
  const firstRowId = BigInt(prev?.['next-row-id'] ?? 0);
  const plan: ExportPlan = { data, deletes, icebergSchema, spec, seq, parent, version, firstRowId };
  const { listKey, manifestKeys } = await writeManifests(store, loc, snapshot, plan, opts.newId ?? randomUUID, counter);
  const metadataVersion = (current?.version ?? 0) + 1;
  const metadata = exportedMetadata({
    table,
    loc,
    snapshot,
    schema,
    icebergSchema,
    spec,
    prev,
    prevUri: current && storeUri(store, current.key),
    version: metadataVersion,
    formatVersion: version,
    rowLineage: version === 3 ? { firstRowId, addedRows: data.assignedRowIds } : undefined,
    seq,
    manifestListUri: storeUri(store, listKey),
    stats: data.stats,
    deletes: deletes && { stats: deletes.stats, files: deletes.files, records: deletes.records },
    files: data.files,
    records: data.records,
    kept,
    now: opts.now ?? Date.now(),
    tableUuid: tableUuidOf(table, await schemaOf(table, 0).catch(() => schema)),
  });
  const metadataKey = metadataFileKey(loc, metadataVersion);
  const body = utf8(JSON.stringify(metadata, null, 2));
  // Creating v<N> is the commit. Orphan cleanup never looks into the metadata folder, so the
  // loser of a race removes its own manifest and list.
  if (!(await store.putIfAbsent(metadataKey, body))) {
    for (const k of [listKey, ...manifestKeys]) await store.delete(k);
    return undefined;
  }
  counter.writes++;
  counter.bytesWritten += body.byteLength;
  await advanceVersionHint(store, loc, metadataVersion, counter);
  const trimmed = await trimHistory(store, loc, dropped);
  return {
    status: 'exported',
    snapshotId: snapshot.id,
    metadataKey,
    metadataLocation: storeUri(store, metadataKey),
    files: { exported: data.files, added: data.stats.added, deleted: data.stats.deleted },
    records: data.records,
    ...counter,
    trimmed,
  };
}

/** The data and delete files the current Iceberg snapshot of `prev` reads, by exportedFileId (absolute path, and a vector's offset). */
async function previousFiles(
  store: ObjectStore,
  prev: IcebergTableMetadata | undefined,
): Promise<{ data: Map<string, ExportedFile>; deletes: Map<string, ExportedFile> }> {
  const data = new Map<string, ExportedFile>();
  const deletes = new Map<string, ExportedFile>();
  if (prev === undefined) return { data, deletes };
  for (const e of await readCurrentEntries(store, prev)) {
    if (e.status !== EntryStatus.DELETED)
      (e.content === FileContent.DATA ? data : deletes).set(exportedFileId(e.path, e.contentOffset), e);
  }
  return { data, deletes };
}

/**
 * The Iceberg format version of this export: the table's `metadata.iceberg.format-version`. Going
 * from 2 to 3 upgrades the metadata in place (old snapshots keep their v2 manifests, and their
 * position delete files stay valid until the first v3 export replaces them with vectors); never back.
 */
function formatVersionOf(table: Table, prev: IcebergTableMetadata | undefined): IcebergFormatVersion {
  const version = table.options.metadataIcebergFormatVersion === 3 ? 3 : 2;
  if (prev !== undefined && prev['format-version'] > version) {
    throw new IcebergExportError(
      `${table.name}: the Iceberg metadata is format version ${prev['format-version']} and metadata.iceberg.format-version is ${version}; Iceberg format versions only go up: set it to ${prev['format-version']} (varve alter ${table.name} --set metadata.iceberg.format-version=${prev['format-version']}) and export again`,
      { retryable: false },
    );
  }
  return version;
}

/** A deletion-vector table's delete files: v2 position delete files, or v3 deletion vectors. */
function deleteFiles(
  table: Table,
  snapshot: Snapshot,
  files: readonly ManifestEntry[],
  before: ReadonlyMap<string, ExportedFile>,
  version: IcebergFormatVersion,
  counter: WriteCounter,
): Promise<PlannedFile[]> {
  return version === 3
    ? deletionVectorFiles(table, snapshot, files, before)
    : positionDeleteFiles(table, snapshot, files, before, counter);
}

/** The refs of `snapshot`'s deletion index whose data file the export lists. */
async function exportedRefs(
  table: Table,
  snapshot: Snapshot,
  files: readonly ManifestEntry[],
): Promise<DeletionVectorRef[]> {
  const exported = new Set(files.map((e) => dvFileIdentity(e.partition, e.bucket, e.file.fileName)));
  return (await readDeletionIndex(table.store, table.path, snapshot)).filter((r) => exported.has(refIdentity(r)));
}

/**
 * The v3 deletion vectors of `snapshot` (spec "Deletion Vectors"): each manifest entry points INTO
 * the table's own Puffin file — file_path the Puffin file, content_offset / content_size_in_bytes
 * its blob, referenced_data_file the data file — so no vector is copied or re-encoded. A vector the
 * previous export listed keeps its entry; a new one is checked against its Puffin footer first
 * (the blob is there, of that length, and names the data file's location as the Puffin spec requires).
 */
async function deletionVectorFiles(
  table: Table,
  snapshot: Snapshot,
  files: readonly ManifestEntry[],
  before: ReadonlyMap<string, ExportedFile>,
): Promise<PlannedFile[]> {
  const footers = new Map<string, Promise<{ size: number; blobs: PuffinBlobMeta[] }>>();
  const footerOf = (key: string) => {
    let f = footers.get(key);
    if (f === undefined) {
      f = table.store.get(key).then((o) => ({ size: o.body.byteLength, blobs: readPuffinFooter(o.body, key) }));
      footers.set(key, f);
    }
    return f;
  };
  const out: PlannedFile[] = [];
  for (const ref of await exportedRefs(table, snapshot, files)) {
    const key = tableKey(table.path, ref.dvFile);
    const path = storeUri(table.store, key);
    const deletesFrom = storeUri(table.store, dataFileKey(table.path, ref.partition, ref.bucket, ref.fileName));
    let size = Number(before.get(exportedFileId(path, ref.offset))?.fileSize ?? -1);
    if (size < 0) {
      const footer = await footerOf(key);
      checkVectorBlob(table, key, ref, deletesFrom, footer.blobs);
      size = footer.size;
    }
    const blob = { offset: ref.offset, length: ref.length };
    out.push({ path, partition: ref.partition, records: ref.cardinality, size, deletesFrom, blob });
  }
  return out;
}

/**
 * Throws unless the Puffin footer lists `ref`'s blob as the Puffin spec's deletion-vector-v1 of
 * the data file at `dataFileUri`: a v3 reader finds the blob by content_offset and length (Java)
 * or by the footer's `referenced-data-file` (pyiceberg), so both must name it.
 */
function checkVectorBlob(
  table: Table,
  key: string,
  ref: DeletionVectorRef,
  dataFileUri: string,
  blobs: readonly PuffinBlobMeta[],
): void {
  const blob = blobs.find((b) => b.offset === ref.offset);
  let problem: string | undefined;
  if (blob === undefined || blob.length !== ref.length || blob.type !== 'deletion-vector-v1')
    problem = `its footer lists no deletion-vector-v1 blob of ${ref.length} bytes at ${ref.offset}, as the deletion index says; run \`varve verify ${table.name}\``;
  else if (blob.properties['referenced-data-file'] !== dataFileUri)
    problem = `its blob at ${ref.offset} names referenced-data-file ${blob.properties['referenced-data-file']}, not ${dataFileUri} (written before varve recorded locations, or the warehouse moved), so Iceberg v3 readers would not apply it; run \`varve compact ${table.name} --full\` to rewrite the files it covers (no vector is left on a fully compacted file), then export again`;
  if (problem !== undefined)
    throw new IcebergExportError(`${table.name}: deletion vector file ${key}: ${problem}`, { retryable: false });
}

/**
 * The position delete file of every exported data file with a deletion vector in `snapshot`: one
 * the previous export listed is kept as it is (same vector blob, same key); the others are written
 * now, from the vector.
 */
async function positionDeleteFiles(
  table: Table,
  snapshot: Snapshot,
  files: readonly ManifestEntry[],
  before: ReadonlyMap<string, ExportedFile>,
  counter: WriteCounter,
): Promise<PlannedFile[]> {
  const out: PlannedFile[] = [];
  for (const ref of await exportedRefs(table, snapshot, files)) {
    const key = positionDeleteFileKey(table.path, ref);
    const path = storeUri(table.store, key);
    const deletesFrom = storeUri(table.store, dataFileKey(table.path, ref.partition, ref.bucket, ref.fileName));
    const old = before.get(path);
    let size = Number(old?.fileSize ?? 0);
    if (old === undefined) {
      const bytes = encodePositionDeleteFile(deletesFrom, await loadDeletionVector(table.store, table.path, ref));
      await put(table.store, key, bytes, counter);
      size = bytes.byteLength;
    }
    out.push({ path, partition: ref.partition, records: ref.cardinality, size, deletesFrom });
  }
  return out;
}

async function schemaOf(table: Table, id: number): Promise<TableSchema> {
  return id === table.schema.id ? table.schema : readSchema(table.store, table.path, id);
}

async function put(store: ObjectStore, key: string, body: Uint8Array, counter: WriteCounter): Promise<void> {
  await store.put(key, body);
  counter.writes++;
  counter.bytesWritten += body.byteLength;
}

/** Moves `version-hint.text` to `version` unless it already names a newer one (compare-and-swap). */
async function advanceVersionHint(
  store: ObjectStore,
  loc: IcebergLocation,
  version: number,
  counter: WriteCounter,
): Promise<void> {
  const body = utf8(String(version));
  const budget = new RetryBudget({
    what: `moving ${versionHintKey(loc)} to ${version}`,
    maxRetries: 4,
    maxWaitMs: 200,
  });
  for (;;) {
    const hint = await readVersionHint(store, loc);
    if (hint !== undefined && hint.version >= version) return;
    const done =
      hint === undefined
        ? await store.putIfAbsent(versionHintKey(loc), body)
        : await store.putIfMatch(versionHintKey(loc), body, hint.etag);
    if (done) {
      counter.writes++;
      counter.bytesWritten += body.byteLength;
      return;
    }
    try {
      await budget.retry('another export moved the hint');
    } catch (e) {
      // Only a hint: readers (and the next export) follow the versions past it.
      if (e instanceof RetriesExhaustedError) return;
      throw e;
    }
  }
}
