/**
 * Manifest lists: `manifest/manifest-list-<uuid>-<n>`, a JSON array of ManifestFileMeta written in
 * one piece (never rolled, as in Paimon). A snapshot names three of them: base, delta, changelog.
 */
import { CorruptMetadataError } from '../errors.js';
import type { ObjectStore } from '../store/object-store.js';
import type { MetadataFileNamer } from './file-names.js';
import { arrayField, checkVersion1, intField, metadataBytes, parseMetadataObject, stringField } from './metadata-json.js';
import { manifestKey } from './table-paths.js';
import type { ManifestFileMeta } from './types.js';

/** Writes a manifest list under a fresh unique name and returns that name. */
export async function writeManifestList(
  store: ObjectStore,
  tablePath: string,
  manifests: readonly ManifestFileMeta[],
  namer: MetadataFileNamer,
): Promise<string> {
  const name = namer.manifestList();
  await store.put(manifestKey(tablePath, name), metadataBytes({ version: 1, manifests }));
  return name;
}

function parseManifestFileMeta(v: unknown, what: string): ManifestFileMeta {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    throw new CorruptMetadataError(`${what}: a manifest row is not an object; the file is damaged`);
  }
  const o = v as Record<string, unknown>;
  return {
    fileName: stringField(o, 'fileName', what),
    fileSize: intField(o, 'fileSize', what),
    numAddedFiles: intField(o, 'numAddedFiles', what),
    numDeletedFiles: intField(o, 'numDeletedFiles', what),
    schemaId: intField(o, 'schemaId', what),
    minBucket: intField(o, 'minBucket', what),
    maxBucket: intField(o, 'maxBucket', what),
    minLevel: intField(o, 'minLevel', what),
    maxLevel: intField(o, 'maxLevel', what),
    minPartition: stringField(o, 'minPartition', what),
    maxPartition: stringField(o, 'maxPartition', what),
  };
}

/** Reads a manifest list; CorruptMetadataError when the content is not one. */
export async function readManifestList(store: ObjectStore, tablePath: string, name: string): Promise<ManifestFileMeta[]> {
  const key = manifestKey(tablePath, name);
  const { body } = await store.get(key);
  const what = `manifest list ${key}`;
  const o = parseMetadataObject(body, what);
  checkVersion1(o, what);
  return arrayField(o, 'manifests', what).map((m) => parseManifestFileMeta(m, what));
}
