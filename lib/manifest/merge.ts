/**
 * Manifest merging, run by every commit on the previous snapshot's base + delta so that the
 * number of manifests a scan reads stays proportional to the live files, not to the number of
 * snapshots (Paimon's ManifestFileMerger, legacy algorithm):
 * - full compaction when the manifests that must change (holding DELETEs, or smaller than the
 *   target size) reach `manifest.full-compaction-threshold-size`: the result holds no DELETE entry;
 * - otherwise minor compaction: consecutive manifests are merged in groups reaching
 *   `manifest.target-file-size`, the tail only when it has at least `manifest.merge-min-count` files.
 */
import type { ObjectStore } from '../store/object-store.js';
import { danglingDeletes, fileIdentity, mergeEntriesInto } from './file-entries.js';
import type { MetadataFileNamer } from './file-names.js';
import { DEFAULT_MANIFEST_TARGET_FILE_SIZE, readManifestFile, writeManifestFiles, type ManifestCache } from './manifest-file.js';
import { parallelMap } from '../concurrency.js';
import type { ManifestEntry, ManifestFileMeta } from './types.js';

/** `manifest.merge-min-count` default (Paimon: 30). */
export const DEFAULT_MANIFEST_MERGE_MIN_COUNT = 30;
/** `manifest.full-compaction-threshold-size` default (Paimon: 16 MB). */
export const DEFAULT_MANIFEST_FULL_COMPACTION_THRESHOLD_SIZE = 16 * 1024 * 1024;

/** How manifests are merged; every field defaults to Paimon's option default. */
export interface ManifestMergeOptions {
  targetFileSize?: number;
  mergeMinCount?: number;
  fullCompactionThresholdSize?: number;
}

interface MergeContext {
  store: ObjectStore;
  tablePath: string;
  namer: MetadataFileNamer;
  target: number;
  schemaId: number;
  cache?: ManifestCache;
}

const READ_PARALLELISM = 16;

async function readAll(ctx: MergeContext, metas: readonly ManifestFileMeta[]): Promise<Array<readonly ManifestEntry[]>> {
  return parallelMap(metas, READ_PARALLELISM, (m) => readManifestFile(ctx.store, ctx.tablePath, m.fileName, ctx.cache));
}

function write(ctx: MergeContext, entries: readonly ManifestEntry[]): Promise<ManifestFileMeta[]> {
  return writeManifestFiles(ctx.store, ctx.tablePath, entries, { namer: ctx.namer, targetFileSize: ctx.target, schemaId: ctx.schemaId }, ctx.cache);
}

/**
 * Merges `input` (in order: state = ADD/DELETE fold of all entries) into an equivalent, shorter
 * list of manifests, writing new manifest files as needed. The input files are never modified.
 */
export async function mergeManifests(
  store: ObjectStore,
  tablePath: string,
  input: readonly ManifestFileMeta[],
  namer: MetadataFileNamer,
  opts: ManifestMergeOptions = {},
  cache?: ManifestCache,
): Promise<ManifestFileMeta[]> {
  const ctx: MergeContext = {
    store,
    tablePath,
    namer,
    target: opts.targetFileSize ?? DEFAULT_MANIFEST_TARGET_FILE_SIZE,
    schemaId: input.reduce((m, f) => Math.max(m, f.schemaId), 0),
    cache,
  };
  const full = await tryFullCompaction(ctx, input, opts.fullCompactionThresholdSize ?? DEFAULT_MANIFEST_FULL_COMPACTION_THRESHOLD_SIZE);
  return full ?? minorCompaction(ctx, input, opts.mergeMinCount ?? DEFAULT_MANIFEST_MERGE_MIN_COUNT);
}

async function minorCompaction(ctx: MergeContext, input: readonly ManifestFileMeta[], minCount: number): Promise<ManifestFileMeta[]> {
  const result: ManifestFileMeta[] = [];
  let candidates: ManifestFileMeta[] = [];
  let size = 0;
  for (const m of input) {
    candidates.push(m);
    size += m.fileSize;
    if (size >= ctx.target) {
      result.push(...(await mergeGroup(ctx, candidates)));
      candidates = [];
      size = 0;
    }
  }
  // The tail is merged only when it has grown to merge-min-count files: fewer small manifests
  // are cheaper to read than to rewrite on every commit.
  if (candidates.length >= minCount) result.push(...(await mergeGroup(ctx, candidates)));
  else result.push(...candidates);
  return result;
}

async function mergeGroup(ctx: MergeContext, group: readonly ManifestFileMeta[]): Promise<ManifestFileMeta[]> {
  if (group.length === 1) return [...group];
  const merged = new Map<string, ManifestEntry>();
  const contents = await readAll(ctx, group);
  contents.forEach((entries, i) => mergeEntriesInto(merged, entries, group[i].fileName));
  // DELETEs whose ADD lies in an earlier group stay: order is kept, so the fold is unchanged.
  return merged.size === 0 ? [] : write(ctx, [...merged.values()]);
}

function mayHold(m: ManifestFileMeta, e: ManifestEntry): boolean {
  return (
    e.partition >= m.minPartition &&
    e.partition <= m.maxPartition &&
    e.bucket >= m.minBucket &&
    e.bucket <= m.maxBucket &&
    e.file.level >= m.minLevel &&
    e.file.level <= m.maxLevel
  );
}

async function tryFullCompaction(ctx: MergeContext, input: readonly ManifestFileMeta[], threshold: number): Promise<ManifestFileMeta[] | undefined> {
  // The leading manifests that need no change (no DELETE, already full-sized) form the base.
  let i = 0;
  while (i < input.length && input[i].numDeletedFiles === 0 && input[i].fileSize >= ctx.target) i++;
  const base = input.slice(0, i);
  const delta = input.slice(i);
  const deltaSize = delta.reduce((s, m) => s + m.fileSize, 0);
  if (deltaSize < threshold) return undefined;

  const deltaMerged = new Map<string, ManifestEntry>();
  (await readAll(ctx, delta)).forEach((entries, k) => mergeEntriesInto(deltaMerged, entries, delta[k].fileName));
  const deletes = danglingDeletes(deltaMerged.values());
  const deletedIds = new Set(deletes.map(fileIdentity));

  const result: ManifestFileMeta[] = [];
  const rewritten: ManifestEntry[] = [];
  // Base manifests whose ranges cannot hold a deleted file are kept without being read.
  const touched = base.filter((m) => deletes.some((d) => mayHold(m, d)));
  const touchedContents = await readAll(ctx, touched);
  const contentOf = new Map(touched.map((m, k) => [m.fileName, touchedContents[k]]));
  for (const m of base) {
    const entries = contentOf.get(m.fileName);
    if (entries === undefined || !entries.some((e) => deletedIds.has(fileIdentity(e)))) {
      result.push(m);
      continue;
    }
    for (const e of entries) if (!deletedIds.has(fileIdentity(e))) rewritten.push(e);
  }
  // DELETEs are dropped: they cancelled a base file above, or named a file no state holds.
  for (const e of deltaMerged.values()) if (e.kind === 'ADD') rewritten.push(e);
  result.push(...(await write(ctx, rewritten)));
  return result;
}
