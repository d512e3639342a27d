/**
 * The deletion-vector index of a snapshot (DV-CONTRACT.md): `manifest/deletion-index-<uuid>`, JSON
 * `{ "version": 1, "vectors": DeletionVectorRef[] }`, the COMPLETE list of the snapshot's live data
 * files that have a non-empty deletion vector and where its blob lies: in a Puffin file
 * `[partition/]bucket-<n>/dv-<uuid>.puffin` (one per bucket per commit that changed the bucket's
 * vectors), at `offset`, `length` bytes (a `deletion-vector-v1` blob, lib/format/deletion-vector.ts).
 * A commit that changes no vector keeps its parent's index name.
 */
import { randomUUID } from 'node:crypto';
import * as v from 'valibot';
import { CorruptMetadataError } from '../errors.js';
import {
  decodeDeletionVectorBlob,
  encodeDeletionVectorBlob,
  writeDeletionVectorPuffin,
} from '../format/deletion-vector.js';
import { jsonInt, parseJsonFile } from '../json.js';
import { objectUri, type ObjectStore } from '../store/object-store.js';
import { dataFileKey, manifestKey, tableKey } from './table-paths.js';

/** Where the deletion vector of one data file lies. */
export interface DeletionVectorRef {
  /** The data file: its partition path ('' unpartitioned), bucket and file name. */
  partition: string;
  bucket: number;
  fileName: string;
  /** The Puffin file holding the blob, relative to the table root. */
  dvFile: string;
  /** The blob's bytes in `dvFile`. */
  offset: number;
  length: number;
  /** Deleted positions. */
  cardinality: number;
}

/** The prefix of deletion-index file names in the manifest folder. */
export const DELETION_INDEX_PREFIX = 'deletion-index-';
/** The prefix of deletion-vector (Puffin) file names in a bucket folder. */
const DELETION_VECTOR_FILE_PREFIX = 'dv-';

const refSchema = v.object({
  partition: v.string(),
  bucket: jsonInt,
  fileName: v.string(),
  dvFile: v.string(),
  offset: jsonInt,
  length: jsonInt,
  cardinality: jsonInt,
});
const indexSchema = v.object({ version: v.literal(1), vectors: v.array(refSchema) });

/** The identity of a data file in a table: `partition/bucket/fileName`. */
export function dvFileIdentity(partition: string, bucket: number, fileName: string): string {
  return `${partition}\u0000${bucket}\u0000${fileName}`;
}

/** The identity of the data file a ref is about. */
export function refIdentity(r: DeletionVectorRef): string {
  return dvFileIdentity(r.partition, r.bucket, r.fileName);
}

/** The vectors of the index file `name` (a snapshot's `deletionVectors`). */
async function readDeletionIndexFile(
  store: ObjectStore,
  tablePath: string,
  name: string,
): Promise<DeletionVectorRef[]> {
  const key = manifestKey(tablePath, name);
  const { body } = await store.get(key);
  return parseJsonFile(body, indexSchema, key, { what: 'deletion-vector index' }).vectors;
}

/** The vectors of a snapshot (none when it has no index). */
export async function readDeletionIndex(
  store: ObjectStore,
  tablePath: string,
  snapshot: { deletionVectors?: string } | undefined,
): Promise<DeletionVectorRef[]> {
  if (snapshot?.deletionVectors === undefined) return [];
  return readDeletionIndexFile(store, tablePath, snapshot.deletionVectors);
}

/** Writes an index holding `vectors` under a new name and returns the name. */
export async function writeDeletionIndex(
  store: ObjectStore,
  tablePath: string,
  vectors: readonly DeletionVectorRef[],
): Promise<string> {
  const name = `${DELETION_INDEX_PREFIX}${randomUUID()}`;
  const sorted = [...vectors].sort((a, b) =>
    refIdentity(a) < refIdentity(b) ? -1 : refIdentity(a) > refIdentity(b) ? 1 : 0,
  );
  await store.put(
    manifestKey(tablePath, name),
    new TextEncoder().encode(JSON.stringify({ version: 1, vectors: sorted })),
  );
  return name;
}

/** The deleted positions (sorted ascending) of the data file `ref` is about; CorruptMetadataError when the blob is damaged. */
export async function loadDeletionVector(
  store: ObjectStore,
  tablePath: string,
  ref: DeletionVectorRef,
): Promise<Uint32Array> {
  const key = tableKey(tablePath, ref.dvFile);
  const bytes = await store.getRange(key, ref.offset, ref.offset + ref.length);
  const positions = decodeDeletionVectorBlob(bytes, `${key} (blob at ${ref.offset} for ${ref.fileName})`);
  if (positions.length !== ref.cardinality) {
    decodeFail(
      key,
      `the blob for ${ref.fileName} holds ${positions.length} positions, the index says ${ref.cardinality}`,
    );
  }
  return positions;
}

function decodeFail(key: string, problem: string): never {
  throw new CorruptMetadataError(`deletion vector file ${key} is damaged: ${problem}; restore it from a backup`, {
    file: key,
  });
}

/** The vectors of one bucket's data files to store in one new Puffin file. */
export interface BucketVectors {
  partition: string;
  bucket: number;
  /** Data file name → deleted positions (sorted ascending, non-empty). */
  vectors: Map<string, Uint32Array>;
}

/** Writes one Puffin file for the bucket's vectors and returns their refs. */
export async function writeBucketVectors(
  store: ObjectStore,
  tablePath: string,
  b: BucketVectors,
): Promise<DeletionVectorRef[]> {
  const names = [...b.vectors.keys()].sort();
  if (names.length === 0) return [];
  const relative = (k: string) => k.slice(tableKey(tablePath, '').length);
  const fileName = `${DELETION_VECTOR_FILE_PREFIX}${randomUUID()}.puffin`;
  const key = dataFileKey(tablePath, b.partition, b.bucket, fileName);
  const dvFile = relative(key);
  const blobs = names.map((n) => ({
    bytes: encodeDeletionVectorBlob(b.vectors.get(n)!),
    properties: {
      // The Puffin spec: "must be equal to the data file's location in table metadata" — the
      // absolute URI the Iceberg export lists, so a v3 export can point at this blob as it is.
      'referenced-data-file': objectUri(store, dataFileKey(tablePath, b.partition, b.bucket, n)),
      cardinality: String(b.vectors.get(n)!.length),
    },
  }));
  const puffin = writeDeletionVectorPuffin(blobs);
  await store.put(key, puffin.bytes);
  return names.map((n, i) => ({
    partition: b.partition,
    bucket: b.bucket,
    fileName: n,
    dvFile,
    offset: puffin.blobs[i].offset,
    length: puffin.blobs[i].length,
    cardinality: b.vectors.get(n)!.length,
  }));
}
