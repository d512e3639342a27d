/**
 * Manifest files: `manifest/manifest-<uuid>-<n>`, a JSON array of ManifestEntry rolled into a new
 * file whenever one reaches `manifest.target-file-size`. Written once under a unique name, never
 * rewritten, so their content can be cached by name.
 */
import { CorruptMetadataError } from '../errors.js';
import { parallelMap } from '../concurrency.js';
import { SizedLru } from '../sized-lru.js';
import { objectLocation } from '../store/json-file.js';
import type { ObjectStore } from '../store/object-store.js';
import { utf8 } from '../store/object-store.js';
import type { MetadataFileNamer } from './file-names.js';
import { arrayField, checkVersion1, parseManifestEntry, parseMetadataObject } from './metadata-json.js';
import { manifestKey } from './table-paths.js';
import type { ManifestEntry, ManifestFileMeta, ManifestListContent } from './types.js';

/** `manifest.target-file-size` default (Paimon: 8 MB). */
export const DEFAULT_MANIFEST_TARGET_FILE_SIZE = 8 * 1024 * 1024;

/** Manifest contents already read, by file name (manifests are immutable, so entries never go stale). */
export interface ManifestCache {
  get(fileName: string): readonly ManifestEntry[] | undefined;
  set(fileName: string, entries: readonly ManifestEntry[]): unknown;
  /** Manifest lists already read or written, by name (immutable too); optional. */
  getList?(name: string): ManifestListContent | undefined;
  setList?(name: string, content: ManifestListContent): unknown;
}

/** Manifest lists a LruManifestCache keeps: a commit needs only its base snapshot's lists. */
const CACHED_LISTS = 16;

/**
 * A ManifestCache holding at most `maxEntries` manifest entries in total, evicting the least
 * recently used manifests: keep one per table in a long-lived process so that each commit reads
 * only the manifests written since the last one.
 */
export class LruManifestCache implements ManifestCache {
  private readonly manifests = new SizedLru<string, readonly ManifestEntry[]>();
  private readonly lists = new Map<string, ManifestListContent>();

  constructor(private readonly maxEntries = 200_000) {}

  getList(name: string): ManifestListContent | undefined {
    return this.lists.get(name);
  }

  setList(name: string, content: ManifestListContent): this {
    this.lists.delete(name);
    this.lists.set(name, content);
    if (this.lists.size > CACHED_LISTS) this.lists.delete(this.lists.keys().next().value as string);
    return this;
  }

  get(fileName: string): readonly ManifestEntry[] | undefined {
    return this.manifests.get(fileName);
  }

  set(fileName: string, entries: readonly ManifestEntry[]): this {
    if (!this.manifests.has(fileName)) this.manifests.set(fileName, entries, entries.length, this.maxEntries);
    return this;
  }
}

/** What a manifest writer needs: where names come from, when to roll, the writer's schema. */
export interface ManifestWriteOptions {
  namer: MetadataFileNamer;
  targetFileSize?: number;
  schemaId: number;
}

const HEADER = '{"version":1,"entries":[';
const FOOTER = ']}';

/** The summary row of a manifest (its ManifestFileMeta) computed from its entries. */
function summarizeManifest(
  fileName: string,
  fileSize: number,
  entries: readonly ManifestEntry[],
  schemaId: number,
): ManifestFileMeta {
  let added = 0;
  let deleted = 0;
  let minBucket = Infinity;
  let maxBucket = -Infinity;
  let minLevel = Infinity;
  let maxLevel = -Infinity;
  let minPartition: string | undefined;
  let maxPartition: string | undefined;
  for (const e of entries) {
    if (e.kind === 'ADD') added++;
    else deleted++;
    minBucket = Math.min(minBucket, e.bucket);
    maxBucket = Math.max(maxBucket, e.bucket);
    minLevel = Math.min(minLevel, e.file.level);
    maxLevel = Math.max(maxLevel, e.file.level);
    if (minPartition === undefined || e.partition < minPartition) minPartition = e.partition;
    if (maxPartition === undefined || e.partition > maxPartition) maxPartition = e.partition;
  }
  return {
    fileName,
    fileSize,
    numAddedFiles: added,
    numDeletedFiles: deleted,
    schemaId,
    minBucket,
    maxBucket,
    minLevel,
    maxLevel,
    minPartition: minPartition ?? '',
    maxPartition: maxPartition ?? '',
  };
}

/** A manifest file ready to be written: its name, bytes, summary row and entries. */
export interface EncodedManifest {
  meta: ManifestFileMeta;
  body: Uint8Array;
  entries: readonly ManifestEntry[];
}

/**
 * Encodes `entries` (in order) into as many manifest files as `targetFileSize` calls for (a file
 * rolls after the entry that makes it reach the target), each under a fresh unique name. The
 * summaries are known before anything is written, so a manifest list can be written alongside.
 */
export function encodeManifestFiles(entries: readonly ManifestEntry[], opts: ManifestWriteOptions): EncodedManifest[] {
  const target = opts.targetFileSize ?? DEFAULT_MANIFEST_TARGET_FILE_SIZE;
  const out: EncodedManifest[] = [];
  let chunk: ManifestEntry[] = [];
  let parts: string[] = [];
  let size = HEADER.length + FOOTER.length;
  const flush = (): void => {
    const name = opts.namer.manifest();
    const body = utf8(HEADER + parts.join(',') + FOOTER);
    out.push({ meta: summarizeManifest(name, body.length, chunk, opts.schemaId), body, entries: chunk });
    chunk = [];
    parts = [];
    size = HEADER.length + FOOTER.length;
  };
  for (const e of entries) {
    const text = JSON.stringify(e);
    chunk.push(e);
    parts.push(text);
    size += text.length + 1;
    if (size >= target) flush();
  }
  if (chunk.length > 0) flush();
  return out;
}

/**
 * One manifest file holding `base` then `delta` (each non-empty), with a summary row per part
 * (ManifestFileMeta.slice): what a commit that merges manifests writes, so that its own new
 * entries cost no manifest PUT of their own. Each row's `fileSize` is its part's share of the
 * bytes (the header and footer counted in the base's), so the two add up to the file's size.
 */
export function encodeManifestWithDelta(
  base: readonly ManifestEntry[],
  delta: readonly ManifestEntry[],
  opts: ManifestWriteOptions,
): { body: Uint8Array; entries: readonly ManifestEntry[]; base: ManifestFileMeta; delta: ManifestFileMeta } {
  if (base.length === 0 || delta.length === 0)
    throw new RangeError('encodeManifestWithDelta needs entries in both parts');
  const name = opts.namer.manifest();
  const baseText = base.map((e) => JSON.stringify(e)).join(',');
  const deltaText = delta.map((e) => JSON.stringify(e)).join(',');
  const body = utf8(HEADER + baseText + ',' + deltaText + FOOTER);
  const deltaSize = utf8(',' + deltaText).length;
  const entries = [...base, ...delta];
  return {
    body,
    entries,
    base: { ...summarizeManifest(name, body.length - deltaSize, base, opts.schemaId), slice: [0, base.length] },
    delta: { ...summarizeManifest(name, deltaSize, delta, opts.schemaId), slice: [base.length, entries.length] },
  };
}

/** Writes encoded manifests (in parallel) and remembers their entries in `cache`. */
export async function putManifestFiles(
  store: ObjectStore,
  tablePath: string,
  files: readonly EncodedManifest[],
  cache?: ManifestCache,
): Promise<void> {
  await Promise.all(
    files.map(async (f) => {
      await store.put(manifestKey(tablePath, f.meta.fileName), f.body);
      cache?.set(f.meta.fileName, f.entries);
    }),
  );
}

/**
 * Writes `entries` (in order) into as many manifest files as `targetFileSize` calls for, each
 * under a fresh unique name, and returns their summaries in order. No entries, no file.
 */
export async function writeManifestFiles(
  store: ObjectStore,
  tablePath: string,
  entries: readonly ManifestEntry[],
  opts: ManifestWriteOptions,
  cache?: ManifestCache,
): Promise<ManifestFileMeta[]> {
  const files = encodeManifestFiles(entries, opts);
  await putManifestFiles(store, tablePath, files, cache);
  return files.map((f) => f.meta);
}

/**
 * The entries a manifest list row names: the whole file, or its slice (ManifestFileMeta.slice).
 * Every reader of a list's manifests reads through this. CorruptMetadataError when the slice
 * lies outside the file.
 */
async function readManifestEntries(
  store: ObjectStore,
  tablePath: string,
  meta: ManifestFileMeta,
  cache?: ManifestCache,
): Promise<readonly ManifestEntry[]> {
  const entries = await readManifestFile(store, tablePath, meta.fileName, cache);
  if (meta.slice === undefined) return entries;
  const [from, to] = meta.slice;
  if (to > entries.length) {
    throw new CorruptMetadataError(
      `manifest ${manifestKey(tablePath, meta.fileName)} holds ${entries.length} entries, but a manifest list names entries ${from}..${to} of it; the metadata is damaged`,
    );
  }
  return entries.slice(from, to);
}

/**
 * readManifestEntries for each of `metas`, in order, `parallelism` files at a time; a file that
 * several rows slice is read once.
 */
export async function readManifestsEntries(
  store: ObjectStore,
  tablePath: string,
  metas: readonly ManifestFileMeta[],
  parallelism: number,
  cache?: ManifestCache,
): Promise<Array<readonly ManifestEntry[]>> {
  const names = [...new Set(metas.map((m) => m.fileName))];
  const files = await parallelMap(names, parallelism, (name) => readManifestFile(store, tablePath, name, cache));
  const byName = new Map(names.map((n, i) => [n, files[i]]));
  // The file is in hand: slicing it again through a one-entry cache reads nothing more.
  return Promise.all(
    metas.map((m) =>
      readManifestEntries(store, tablePath, m, { get: () => byName.get(m.fileName), set: () => undefined }),
    ),
  );
}

/** Reads a manifest file's entries; CorruptMetadataError when the content is not a manifest. */
export async function readManifestFile(
  store: ObjectStore,
  tablePath: string,
  fileName: string,
  cache?: ManifestCache,
): Promise<readonly ManifestEntry[]> {
  const cached = cache?.get(fileName);
  if (cached !== undefined) return cached;
  const key = manifestKey(tablePath, fileName);
  const { body } = await store.get(key);
  const what = `manifest ${objectLocation(store, key)}`;
  const o = parseMetadataObject(body, what);
  checkVersion1(o, what);
  const entries = arrayField(o, 'entries', what).map((e) => parseManifestEntry(e, what));
  cache?.set(fileName, entries);
  return entries;
}
