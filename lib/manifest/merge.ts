/**
 * Manifest merging, run by every commit on the previous snapshot's base + delta so that the
 * number of manifests a scan reads stays proportional to the live files, not to the number of
 * snapshots (Paimon's ManifestFileMerger, legacy algorithm):
 * - full compaction when the manifests that must change (holding DELETEs, or smaller than the
 *   target size) reach `manifest.full-compaction-threshold-size`: the result holds no DELETE entry;
 * - otherwise minor compaction: consecutive manifests are merged in groups reaching
 *   `manifest.target-file-size`, the tail only when it has at least `manifest.merge-min-count` files.
 * A merge is planned first (planManifestMerge: what to keep, what to write) and written after, so
 * that a commit can add its own new entries to the last manifest the merge writes (commit-plan.ts).
 */
import type { ObjectStore } from '../store/object-store.js';
import { danglingDeletes, fileIdentity, mergeEntriesInto } from './file-entries.js';
import type { MetadataFileNamer } from './file-names.js';
import {
  DEFAULT_MANIFEST_TARGET_FILE_SIZE,
  encodeManifestFiles,
  encodeManifestWithDelta,
  putManifestFiles,
  readManifestsEntries,
  type EncodedManifest,
  type ManifestCache,
} from './manifest-file.js';
import type { ManifestEntry, ManifestFileMeta } from './types.js';

/** `manifest.merge-min-count` default (Paimon: 30). */
const DEFAULT_MANIFEST_MERGE_MIN_COUNT = 30;
/** `manifest.full-compaction-threshold-size` default (Paimon: 16 MB). */
const DEFAULT_MANIFEST_FULL_COMPACTION_THRESHOLD_SIZE = 16 * 1024 * 1024;

/** How manifests are merged; every field defaults to Paimon's option default. */
export interface ManifestMergeOptions {
  targetFileSize?: number;
  mergeMinCount?: number;
  fullCompactionThresholdSize?: number;
}

interface MergeContext {
  store: ObjectStore;
  tablePath: string;
  target: number;
  cache?: ManifestCache;
}

/** One piece of a merge's result, in order: a manifest row kept as it is, or entries to write. */
export type MergedPart = { kept: ManifestFileMeta } | { write: ManifestEntry[] };

/** What a merge will produce: its parts in order, and the schema id of the manifests it writes. */
export interface ManifestMergePlan {
  parts: MergedPart[];
  schemaId: number;
  /** The resolved manifest.target-file-size: where a written part rolls into a new file. */
  targetFileSize: number;
}

const READ_PARALLELISM = 16;

function readAll(ctx: MergeContext, metas: readonly ManifestFileMeta[]): Promise<Array<readonly ManifestEntry[]>> {
  return readManifestsEntries(ctx.store, ctx.tablePath, metas, READ_PARALLELISM, ctx.cache);
}

/**
 * Plans the merge of `input` (in order: state = ADD/DELETE fold of all entries) into an
 * equivalent, shorter list of manifests. Reads manifests, writes nothing.
 */
export async function planManifestMerge(
  store: ObjectStore,
  tablePath: string,
  input: readonly ManifestFileMeta[],
  opts: ManifestMergeOptions = {},
  cache?: ManifestCache,
): Promise<ManifestMergePlan> {
  const ctx: MergeContext = {
    store,
    tablePath,
    target: opts.targetFileSize ?? DEFAULT_MANIFEST_TARGET_FILE_SIZE,
    cache,
  };
  const full = await tryFullCompaction(
    ctx,
    input,
    opts.fullCompactionThresholdSize ?? DEFAULT_MANIFEST_FULL_COMPACTION_THRESHOLD_SIZE,
  );
  const parts = full ?? (await minorCompaction(ctx, input, opts.mergeMinCount ?? DEFAULT_MANIFEST_MERGE_MIN_COUNT));
  return { parts, schemaId: input.reduce((m, f) => Math.max(m, f.schemaId), 0), targetFileSize: ctx.target };
}

/** The manifest files each written part of `plan` becomes (one list per part; empty for a kept row). */
export function encodeMergedParts(plan: ManifestMergePlan, namer: MetadataFileNamer): EncodedManifest[][] {
  return plan.parts.map((p) =>
    'write' in p
      ? encodeManifestFiles(p.write, { namer, targetFileSize: plan.targetFileSize, schemaId: plan.schemaId })
      : [],
  );
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
  const plan = await planManifestMerge(store, tablePath, input, opts, cache);
  const files = encodeMergedParts(plan, namer);
  await putManifestFiles(store, tablePath, files.flat(), cache);
  return plan.parts.flatMap((p, i) => ('kept' in p ? [p.kept] : files[i].map((f) => f.meta)));
}

async function minorCompaction(
  ctx: MergeContext,
  input: readonly ManifestFileMeta[],
  minCount: number,
): Promise<MergedPart[]> {
  const result: MergedPart[] = [];
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
  else result.push(...candidates.map((kept) => ({ kept })));
  return result;
}

async function mergeGroup(ctx: MergeContext, group: readonly ManifestFileMeta[]): Promise<MergedPart[]> {
  if (group.length === 1) return [{ kept: group[0] }];
  const merged = new Map<string, ManifestEntry>();
  const contents = await readAll(ctx, group);
  contents.forEach((entries, i) => mergeEntriesInto(merged, entries, group[i].fileName));
  // DELETEs whose ADD lies in an earlier group stay: order is kept, so the fold is unchanged.
  return merged.size === 0 ? [] : [{ write: [...merged.values()] }];
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

async function tryFullCompaction(
  ctx: MergeContext,
  input: readonly ManifestFileMeta[],
  threshold: number,
): Promise<MergedPart[] | undefined> {
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

  const result: MergedPart[] = [];
  const rewritten: ManifestEntry[] = [];
  // Base manifests whose ranges cannot hold a deleted file are kept without being read.
  const touched = base.filter((m) => deletes.some((d) => mayHold(m, d)));
  const touchedContents = await readAll(ctx, touched);
  // By row, not by file name: two rows may name slices of one file.
  const contentOf = new Map(touched.map((m, k) => [m, touchedContents[k]]));
  for (const m of base) {
    const entries = contentOf.get(m);
    if (entries === undefined || !entries.some((e) => deletedIds.has(fileIdentity(e)))) {
      result.push({ kept: m });
      continue;
    }
    for (const e of entries) if (!deletedIds.has(fileIdentity(e))) rewritten.push(e);
  }
  // DELETEs are dropped: they cancelled a base file above, or named a file no state holds.
  for (const e of deltaMerged.values()) if (e.kind === 'ADD') rewritten.push(e);
  if (rewritten.length > 0) result.push({ write: rewritten });
  return result;
}

/** A commit's data manifests once its merge is planned: the files to write and the rows of its list. */
export interface MergedWithDelta {
  /** Every manifest file to write (merged parts, and the delta's unless folded into one of them). */
  files: EncodedManifest[];
  base: ManifestFileMeta[];
  delta: ManifestFileMeta[];
}

/**
 * Encodes `plan` and places a commit's delta manifests after it. **beyond**: when the merge
 * writes a manifest and the delta fits in one, the delta's entries are appended to the last
 * manifest the merge writes (encodeManifestWithDelta): one file whose base part the list names
 * among the base rows and whose delta part it names as the delta, so the commit that merges
 * writes no more manifests than one that does not (Paimon writes the merged manifests beside the
 * delta's). Nothing is written here.
 */
export function encodeMergeWithDelta(
  plan: ManifestMergePlan,
  namer: MetadataFileNamer,
  delta: readonly EncodedManifest[],
  deltaSchemaId: number,
): MergedWithDelta {
  const merged = encodeMergedParts(plan, namer);
  let foldedDelta: ManifestFileMeta | undefined;
  const last = merged.findLastIndex((files) => files.length > 0);
  if (last >= 0 && delta.length === 1) {
    const host = merged[last].pop()!;
    const folded = encodeManifestWithDelta(host.entries, delta[0].entries, {
      namer,
      schemaId: Math.max(plan.schemaId, deltaSchemaId),
    });
    merged[last].push({ meta: folded.base, body: folded.body, entries: folded.entries });
    foldedDelta = folded.delta;
  }
  return {
    files: foldedDelta ? merged.flat() : [...merged.flat(), ...delta],
    base: plan.parts.flatMap((p, i) => ('kept' in p ? [p.kept] : merged[i].map((f) => f.meta))),
    delta: foldedDelta ? [foldedDelta] : delta.map((f) => f.meta),
  };
}
