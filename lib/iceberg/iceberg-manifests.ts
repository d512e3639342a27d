/**
 * Iceberg manifests and manifest lists of the export: one manifest per exported snapshot (its
 * files as ADDED, EXISTING or DELETED entries) named after its manifest list, and reading back
 * the data files an exported snapshot holds.
 */
import { IcebergExportError, ObjectNotFoundError } from '../errors.js';
import type { ObjectStore } from '../store/object-store.js';
import { decodeAvroFile } from './avro-file.js';
import { POSITION_DELETE_FILE_PATH_ID } from './position-deletes.js';
import { storeKeyOf, type IcebergSnapshot, type IcebergTableMetadata } from './iceberg-metadata.js';

/** Entry status (Iceberg spec): 0 EXISTING, 1 ADDED, 2 DELETED. */
export const EntryStatus = { EXISTING: 0, ADDED: 1, DELETED: 2 } as const;

/** Manifest entry content (Iceberg spec): 0 data, 1 position deletes. */
export const FileContent = { DATA: 0, POSITION_DELETES: 1 } as const;

/** A data or delete file entry of an exported manifest, as the export needs it back. */
export interface ExportedFile {
  status: number;
  /** FileContent: a data file or a position delete file. */
  content: number;
  path: string;
  snapshotId: bigint;
  sequenceNumber: bigint;
  fileSequenceNumber: bigint;
  recordCount: bigint;
  fileSize: bigint;
  /** The Avro partition tuple, as written. */
  partition: Record<string, unknown>;
  /** A position delete file or deletion vector: the data file it applies to (file_path bound or referenced_data_file). */
  deletesFrom?: string;
  /** The data_file's file_format as written (`PARQUET`, or `PUFFIN` for a deletion vector). */
  format: string;
  /** A deletion vector (v3): its blob's bytes in the Puffin file. */
  contentOffset?: bigint;
  contentSize?: bigint;
  /** A data file of a v3 manifest: its first row id, as written or inherited (spec "First Row ID Inheritance"). */
  firstRowId?: bigint;
}

/**
 * What identifies an entry across exports: its path, and for a deletion vector also its blob's
 * offset (one Puffin file holds the vectors of several data files).
 */
export function exportedFileId(path: string, contentOffset?: bigint | number): string {
  return contentOffset === undefined || contentOffset === null ? path : `${path}#${contentOffset}`;
}

/**
 * The manifest files of a manifest list named `snap-<id>-1-<uuid>.avro`, beside it: `<uuid>-m0.avro`
 * (data files) and `<uuid>-m1.avro` (position delete files, written only for a deletion-vector table).
 */
export function manifestKeysForList(listKey: string): { data: string; deletes: string } {
  const slash = listKey.lastIndexOf('/') + 1;
  const m = /^snap-\d+-1-(.+)\.avro$/.exec(listKey.slice(slash));
  if (!m)
    throw new IcebergExportError(`${listKey} is not a manifest list the export wrote (snap-<id>-1-<uuid>.avro)`, {
      retryable: false,
    });
  return { data: `${listKey.slice(0, slash)}${m[1]}-m0.avro`, deletes: `${listKey.slice(0, slash)}${m[1]}-m1.avro` };
}

async function getAvro(store: ObjectStore, uri: string, what: string): Promise<unknown[]> {
  const key = storeKeyOf(store, uri);
  if (key === undefined)
    throw new IcebergExportError(
      `${what} ${uri} is outside the warehouse ${store.uri}; the export only reads its own files`,
      { retryable: false },
    );
  let body: Uint8Array;
  try {
    body = (await store.get(key)).body;
  } catch (e) {
    if (e instanceof ObjectNotFoundError) {
      throw new IcebergExportError(
        `${what} ${key} of the current Iceberg metadata is missing; run \`varve export-iceberg\` to write the metadata again`,
        { cause: e },
      );
    }
    throw e;
  }
  return (await decodeAvroFile(body, key)).records;
}

/** Every entry (all statuses) of the manifests of snapshot `s` of the metadata. */
async function snapshotEntries(store: ObjectStore, s: IcebergSnapshot): Promise<ExportedFile[]> {
  const manifests = (await getAvro(store, s['manifest-list'], 'manifest list')) as Array<{
    manifest_path: string;
    first_row_id?: bigint | null;
  }>;
  const out: ExportedFile[] = [];
  for (const m of manifests) {
    // A v3 data manifest assigns each data file without a first_row_id the next ids, in entry order.
    let nextRowId = m.first_row_id ?? undefined;
    const entries = (await getAvro(store, m.manifest_path, 'manifest')) as Array<{
      status: number;
      snapshot_id: bigint | null;
      sequence_number: bigint | null;
      file_sequence_number: bigint | null;
      data_file: {
        content: number;
        file_path: string;
        record_count: bigint;
        file_size_in_bytes: bigint;
        partition: Record<string, unknown>;
        lower_bounds: Array<{ key: number; value: Uint8Array }> | null;
        file_format: string;
        first_row_id?: bigint | null;
        referenced_data_file?: string | null;
        content_offset?: bigint | null;
        content_size_in_bytes?: bigint | null;
      };
    }>;
    for (const e of entries) {
      const f = e.data_file;
      let firstRowId = f.first_row_id ?? undefined;
      if (firstRowId === undefined && nextRowId !== undefined && f.content === FileContent.DATA) {
        firstRowId = nextRowId;
        nextRowId += f.record_count;
      }
      out.push({
        status: e.status,
        content: e.data_file.content,
        path: e.data_file.file_path,
        snapshotId: e.snapshot_id ?? BigInt(s['snapshot-id']),
        sequenceNumber: e.sequence_number ?? BigInt(s['sequence-number']),
        fileSequenceNumber: e.file_sequence_number ?? e.sequence_number ?? BigInt(s['sequence-number']),
        recordCount: e.data_file.record_count,
        fileSize: e.data_file.file_size_in_bytes,
        partition: e.data_file.partition,
        format: f.file_format,
        ...deletesFromOf(e.data_file),
        ...(f.content_offset != null ? { contentOffset: f.content_offset } : {}),
        ...(f.content_size_in_bytes != null ? { contentSize: f.content_size_in_bytes } : {}),
        ...(firstRowId !== undefined ? { firstRowId } : {}),
      });
    }
  }
  return out;
}

/** The data file a position delete entry applies to: its referenced_data_file, or its file_path lower bound. */
function deletesFromOf(f: {
  content: number;
  lower_bounds: Array<{ key: number; value: Uint8Array }> | null;
  referenced_data_file?: string | null;
}): {
  deletesFrom?: string;
} {
  if (f.content !== FileContent.POSITION_DELETES) return {};
  if (f.referenced_data_file != null) return { deletesFrom: f.referenced_data_file };
  const bound = f.lower_bounds?.find((b) => b.key === POSITION_DELETE_FILE_PATH_ID);
  return bound ? { deletesFrom: Buffer.from(bound.value).toString('utf8') } : {};
}

/** Every entry (all statuses) of the manifests of the current snapshot of `metadata`; [] without one. */
export async function readCurrentEntries(store: ObjectStore, metadata: IcebergTableMetadata): Promise<ExportedFile[]> {
  const current = metadata.snapshots.find((s) => s['snapshot-id'] === metadata['current-snapshot-id']);
  return current === undefined ? [] : snapshotEntries(store, current);
}

/** Store keys of the data files (not delete files) the current Iceberg snapshot of `metadata` reads (not DELETED entries). */
export async function currentDataFileKeys(store: ObjectStore, metadata: IcebergTableMetadata): Promise<string[]> {
  return liveKeys(
    store,
    (await readCurrentEntries(store, metadata)).filter((e) => e.content === FileContent.DATA),
  );
}

/** Store keys of the data and delete files any snapshot `metadata` lists reads (time travel reaches them all). */
export async function listedDataFileKeys(store: ObjectStore, metadata: IcebergTableMetadata): Promise<Set<string>> {
  const out = new Set<string>();
  for (const s of metadata.snapshots) for (const k of liveKeys(store, await snapshotEntries(store, s))) out.add(k);
  return out;
}

function liveKeys(store: ObjectStore, entries: readonly ExportedFile[]): string[] {
  const out: string[] = [];
  for (const e of entries) {
    if (e.status === EntryStatus.DELETED) continue;
    const key = storeKeyOf(store, e.path);
    if (key !== undefined) out.push(key);
  }
  return out;
}
