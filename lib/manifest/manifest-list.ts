/**
 * Manifest lists: `manifest/manifest-list-<uuid>-<n>`, a JSON array of ManifestFileMeta written in
 * one piece (never rolled, as in Paimon). A snapshot names a base, a delta and a changelog list.
 * **beyond**: a commit writes base and delta as ONE list (`deltaFrom` marks where the delta
 * starts) and names it as both, saving a PUT per commit; read such a pair through
 * readSnapshotLists (scan.ts), never by concatenating the two names' contents.
 */
import { CorruptMetadataError } from '../errors.js';
import { objectLocation } from '../store/json-file.js';
import type { ObjectStore } from '../store/object-store.js';
import type { MetadataFileNamer } from './file-names.js';
import type { ManifestCache } from './manifest-file.js';
import {
  arrayField,
  intField,
  metadataBytes,
  optionalIntField,
  parseMetadataObject,
  stringField,
} from './metadata-json.js';
import { manifestKey } from './table-paths.js';
import type { ManifestFileMeta, ManifestListContent } from './types.js';

/**
 * Writes one list holding a snapshot's base manifests then its delta manifests, under a fresh
 * unique name, and returns that name (the snapshot names it as both its base and its delta list).
 */
export async function writeCombinedManifestList(
  store: ObjectStore,
  tablePath: string,
  base: readonly ManifestFileMeta[],
  delta: readonly ManifestFileMeta[],
  namer: MetadataFileNamer,
  cache?: ManifestCache,
): Promise<string> {
  const name = namer.manifestList();
  const content: ManifestListContent = { manifests: [...base, ...delta], deltaFrom: base.length };
  await store.put(manifestKey(tablePath, name), metadataBytes({ version: listVersion(content.manifests), ...content }));
  cache?.setList?.(name, content);
  return name;
}

/** Writes a manifest list under a fresh unique name and returns that name. */
export async function writeManifestList(
  store: ObjectStore,
  tablePath: string,
  manifests: readonly ManifestFileMeta[],
  namer: MetadataFileNamer,
): Promise<string> {
  const name = namer.manifestList();
  await store.put(manifestKey(tablePath, name), metadataBytes({ version: listVersion(manifests), manifests }));
  return name;
}

/**
 * A list naming a slice of a manifest (ManifestFileMeta.slice) is version 2: a varve that does
 * not know slices would read the whole file for each row, so it must refuse the list (loudly:
 * "upgrade varve") rather than read the slice's neighbours as this snapshot's changes.
 */
function listVersion(manifests: readonly ManifestFileMeta[]): 1 | 2 {
  return manifests.some((m) => m.slice !== undefined) ? 2 : 1;
}

function parseSlice(v: unknown, what: string): [number, number] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || v.length !== 2 || !v.every((x) => Number.isSafeInteger(x)) || v[0] < 0 || v[0] >= v[1]) {
    throw new CorruptMetadataError(
      `${what}: a manifest row's slice is not [from, to) with 0 ≤ from < to; the file is damaged`,
    );
  }
  return [v[0] as number, v[1] as number];
}

function parseManifestFileMeta(v: unknown, what: string): ManifestFileMeta {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    throw new CorruptMetadataError(`${what}: a manifest row is not an object; the file is damaged`);
  }
  const o = v as Record<string, unknown>;
  const meta: ManifestFileMeta = {
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
  const slice = parseSlice(o.slice, what);
  if (slice !== undefined) meta.slice = slice;
  return meta;
}

/**
 * Reads a manifest list with its `deltaFrom` mark (lists are immutable, so `cache` may keep them);
 * CorruptMetadataError when the content is not one.
 */
export async function readManifestListContent(
  store: ObjectStore,
  tablePath: string,
  name: string,
  cache?: ManifestCache,
): Promise<ManifestListContent> {
  const cached = cache?.getList?.(name);
  if (cached !== undefined) return cached;
  const key = manifestKey(tablePath, name);
  const { body } = await store.get(key);
  const what = `manifest list ${objectLocation(store, key)}`;
  const o = parseMetadataObject(body, what);
  // Version 2 differs only in allowing sliced rows (listVersion).
  const version = intField(o, 'version', what);
  if (version !== 1 && version !== 2)
    throw new CorruptMetadataError(`${what} has version ${version}; this varve reads versions 1 and 2, upgrade varve`);
  const manifests = arrayField(o, 'manifests', what).map((m) => parseManifestFileMeta(m, what));
  const deltaFrom = optionalIntField(o, 'deltaFrom', what);
  if (deltaFrom !== undefined && (deltaFrom < 0 || deltaFrom > manifests.length)) {
    throw new CorruptMetadataError(
      `${what}: deltaFrom ${deltaFrom} is outside 0..${manifests.length}; the file is damaged`,
    );
  }
  const content: ManifestListContent = deltaFrom === undefined ? { manifests } : { manifests, deltaFrom };
  cache?.setList?.(name, content);
  return content;
}

/** Every manifest a list names (for a combined list: base and delta); CorruptMetadataError when the content is not one. */
export async function readManifestList(
  store: ObjectStore,
  tablePath: string,
  name: string,
  cache?: ManifestCache,
): Promise<ManifestFileMeta[]> {
  return [...(await readManifestListContent(store, tablePath, name, cache)).manifests];
}
