/**
 * The Iceberg export (Paimon's Iceberg compatibility): writes Iceberg format-version 2 metadata
 * that references the table's data files in place, so Iceberg readers see the table without
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
import { RetriesExhaustedError } from '../errors.js';
import { dvFileIdentity, loadDeletionVector, readDeletionIndex, refIdentity } from '../manifest/deletion-index.js';
import { readLiveFiles } from '../manifest/scan.js';
import { dataFileKey } from '../manifest/table-paths.js';
import type { ManifestEntry } from '../manifest/types.js';
import { RetryBudget } from '../retry-budget.js';
import { readSchema } from '../schema/schema-manager.js';
import type { TableSchema } from '../schema/types.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import { utf8, type ObjectStore } from '../store/object-store.js';
import type { Table } from '../table/table.js';
import { encodeAvroFile } from './avro-file.js';
import { manifestEntrySchema, manifestListSchema } from './avro-schemas.js';
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
    const manifest = await encodeAvroFile(manifestEntrySchema(part.entries.avroFields), part.entries.entries, {
      schema: JSON.stringify(icebergSchema),
      'schema-id': String(icebergSchema['schema-id']),
      'partition-spec': JSON.stringify(spec.fields),
      'partition-spec-id': String(spec['spec-id']),
      'format-version': '2',
      content: part.name,
    });
    await put(store, part.key, manifest, counter);
    manifestKeys.push(part.key);
    manifests.push(
      manifestListRow(store, part.key, manifest.byteLength, part.content, plan, snapshot, part.entries.stats),
    );
  }
  const list = await encodeAvroFile(manifestListSchema(), manifests, {
    'snapshot-id': String(snapshot.id),
    ...(plan.parent !== undefined ? { 'parent-snapshot-id': String(plan.parent) } : {}),
    'sequence-number': String(seq),
    'format-version': '2',
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
  const schema = await schemaOf(table, snapshot.schemaId);
  const icebergSchema = icebergSchemaOf(schema);
  const spec = icebergPartitionSpecOf(schema);
  const files = exportedFiles(table, await readLiveFiles(store, table.path, snapshot, {}, table.manifestCache));
  const seq = (prev?.['last-sequence-number'] ?? 0) + 1;
  const at = { id: BigInt(snapshot.id), seq: BigInt(seq) };
  const before = await previousFiles(store, prev);
  const data = planEntries(table, schema, spec, plannedDataFiles(table, files), before.data, at);
  const deletes = usesDeletionVectors(table)
    ? planEntries(
        table,
        schema,
        spec,
        await positionDeleteFiles(table, snapshot, files, before.deletes, counter),
        before.deletes,
        at,
      )
    : undefined;
  const { kept, dropped } = await keptHistory(table, prev, snapshot);
  const parent = kept.at(-1)?.['snapshot-id'];
  const plan: ExportPlan = { data, deletes, icebergSchema, spec, seq, parent };
  const { listKey, manifestKeys } = await writeManifests(store, loc, snapshot, plan, opts.newId ?? randomUUID, counter);
  const version = (current?.version ?? 0) + 1;
  const metadata = exportedMetadata({
    table,
    loc,
    snapshot,
    schema,
    icebergSchema,
    spec,
    prev,
    prevUri: current && storeUri(store, current.key),
    version,
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
  const metadataKey = metadataFileKey(loc, version);
  const body = utf8(JSON.stringify(metadata, null, 2));
  // Creating v<N> is the commit. Orphan cleanup never looks into the metadata folder, so the
  // loser of a race removes its own manifest and list.
  if (!(await store.putIfAbsent(metadataKey, body))) {
    for (const k of [listKey, ...manifestKeys]) await store.delete(k);
    return undefined;
  }
  counter.writes++;
  counter.bytesWritten += body.byteLength;
  await advanceVersionHint(store, loc, version, counter);
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

/** The data and delete files the current Iceberg snapshot of `prev` reads, by absolute path. */
async function previousFiles(
  store: ObjectStore,
  prev: IcebergTableMetadata | undefined,
): Promise<{ data: Map<string, ExportedFile>; deletes: Map<string, ExportedFile> }> {
  const data = new Map<string, ExportedFile>();
  const deletes = new Map<string, ExportedFile>();
  if (prev === undefined) return { data, deletes };
  for (const e of await readCurrentEntries(store, prev)) {
    if (e.status !== EntryStatus.DELETED) (e.content === FileContent.DATA ? data : deletes).set(e.path, e);
  }
  return { data, deletes };
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
  const exported = new Set(files.map((e) => dvFileIdentity(e.partition, e.bucket, e.file.fileName)));
  const out: PlannedFile[] = [];
  for (const ref of await readDeletionIndex(table.store, table.path, snapshot)) {
    if (!exported.has(refIdentity(ref))) continue;
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
