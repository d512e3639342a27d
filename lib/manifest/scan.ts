/**
 * Reading a snapshot's files from its manifests. State(N) = fold of base(N) then delta(N)
 * (ADD/DELETE on the file identity); the delta and the changelog lists are read as they are.
 * Manifests whose partition range or bucket range cannot match the filter are not read: a DELETE
 * names the same partition and bucket as its ADD, so pruning both together keeps the fold exact.
 */
import type { ObjectStore } from '../store/object-store.js';
import { fileIdentity, mergeEntries } from './file-entries.js';
import { readManifestsEntries, type ManifestCache } from './manifest-file.js';
import { readManifestList, readManifestListContent } from './manifest-list.js';
import type { ManifestEntry, ManifestFileMeta, ManifestListPair } from './types.js';

/** Which files a scan wants. Every field narrows; an absent field matches everything. */
export interface ScanFilter {
  /** Partition paths to keep. */
  partition?: (partition: string) => boolean;
  /**
   * False when no partition in [min, max] (string order) can pass `partition`: lets a scan skip a
   * manifest without reading it. Without it, a manifest is skipped only when it holds one partition.
   */
  partitionRange?: (min: string, max: string) => boolean;
  /**
   * Buckets to keep: a manifest whose bucket range holds none of them is skipped unread, e.g.
   * another bucket's compaction.
   */
  buckets?: ReadonlySet<number>;
}

/** The filter of the files of `buckets` in `partitions` (a commit's or a compaction's touched buckets, and others beside them). */
export function touchedFilter(partitions: ReadonlySet<string>, buckets: ReadonlySet<number>): ScanFilter {
  return {
    partition: (p) => partitions.has(p),
    partitionRange: (min, max) => [...partitions].some((p) => p >= min && p <= max),
    buckets,
  };
}

const READ_PARALLELISM = 16;

/** True when the manifest may hold an entry matching the filter (false = safe to skip). */
function manifestMayMatch(m: ManifestFileMeta, filter: ScanFilter = {}): boolean {
  if (filter.buckets && ![...filter.buckets].some((b) => b >= m.minBucket && b <= m.maxBucket)) return false;
  if (filter.partitionRange && !filter.partitionRange(m.minPartition, m.maxPartition)) return false;
  if (filter.partition && m.minPartition === m.maxPartition && !filter.partition(m.minPartition)) return false;
  return true;
}

/** True when an entry matches the filter. */
function entryMatches(e: ManifestEntry, filter: ScanFilter = {}): boolean {
  if (filter.buckets && !filter.buckets.has(e.bucket)) return false;
  if (filter.partition && !filter.partition(e.partition)) return false;
  return true;
}

/** A snapshot's data manifests, split into its base (the state before it) and its delta. */
export interface SnapshotLists {
  base: ManifestFileMeta[];
  delta: ManifestFileMeta[];
}

/**
 * The base and delta manifests of a snapshot, from two lists or from one combined list named as
 * both (manifest-list.ts): the one way to read them that never counts a combined list twice.
 */
export async function readSnapshotLists(
  store: ObjectStore,
  tablePath: string,
  snapshot: ManifestListPair,
  cache?: ManifestCache,
): Promise<SnapshotLists> {
  if (snapshot.baseManifestList === snapshot.deltaManifestList) {
    const { manifests, deltaFrom } = await readManifestListContent(store, tablePath, snapshot.deltaManifestList, cache);
    const at = deltaFrom ?? manifests.length;
    return { base: manifests.slice(0, at), delta: manifests.slice(at) };
  }
  const [base, delta] = await Promise.all([
    readManifestList(store, tablePath, snapshot.baseManifestList, cache),
    readManifestList(store, tablePath, snapshot.deltaManifestList, cache),
  ]);
  return { base, delta };
}

/** The manifests holding the state of a snapshot: its base, then its delta. */
export async function readDataManifests(
  store: ObjectStore,
  tablePath: string,
  snapshot: ManifestListPair,
  cache?: ManifestCache,
): Promise<ManifestFileMeta[]> {
  const { base, delta } = await readSnapshotLists(store, tablePath, snapshot, cache);
  return [...base, ...delta];
}

/** Entries of `manifests` matching the filter, in manifest order (pruned manifests are not read). */
export async function readEntries(
  store: ObjectStore,
  tablePath: string,
  manifests: readonly ManifestFileMeta[],
  filter: ScanFilter = {},
  cache?: ManifestCache,
): Promise<ManifestEntry[]> {
  const wanted = manifests.filter((m) => manifestMayMatch(m, filter));
  const contents = await readManifestsEntries(store, tablePath, wanted, READ_PARALLELISM, cache);
  const out: ManifestEntry[] = [];
  for (const entries of contents) for (const e of entries) if (entryMatches(e, filter)) out.push(e);
  return out;
}

/** Entries of the manifests named by manifest list `listName` matching the filter. */
async function readListEntries(
  store: ObjectStore,
  tablePath: string,
  listName: string,
  filter: ScanFilter | undefined,
  cache: ManifestCache | undefined,
): Promise<ManifestEntry[]> {
  return readEntries(store, tablePath, await readManifestList(store, tablePath, listName), filter, cache);
}

/** The live files of `manifests` (ADD entries with every DELETE applied) that match the filter. */
export async function foldLiveFiles(
  store: ObjectStore,
  tablePath: string,
  manifests: readonly ManifestFileMeta[],
  filter: ScanFilter = {},
  cache?: ManifestCache,
): Promise<ManifestEntry[]> {
  const merged = mergeEntries(await readEntries(store, tablePath, manifests, filter, cache));
  // A DELETE left over names a file this state never held; it changes nothing a reader sees.
  return merged.filter((e) => e.kind === 'ADD');
}

/** The live data files of a snapshot: ADD entries only, every DELETE applied. */
export async function readLiveFiles(
  store: ObjectStore,
  tablePath: string,
  snapshot: ManifestListPair,
  filter?: ScanFilter,
  cache?: ManifestCache,
): Promise<ManifestEntry[]> {
  return foldLiveFiles(store, tablePath, await readDataManifests(store, tablePath, snapshot, cache), filter, cache);
}

/** The file changes a snapshot made (its delta: ADD and DELETE entries as written). */
export async function readDeltaEntries(
  store: ObjectStore,
  tablePath: string,
  snapshot: ManifestListPair,
  filter?: ScanFilter,
  cache?: ManifestCache,
): Promise<ManifestEntry[]> {
  return readEntries(
    store,
    tablePath,
    (await readSnapshotLists(store, tablePath, snapshot, cache)).delta,
    filter,
    cache,
  );
}

/** The changelog files a snapshot produced (none when it has no changelog list). */
export async function readChangelogFiles(
  store: ObjectStore,
  tablePath: string,
  snapshot: { changelogManifestList?: string },
  filter?: ScanFilter,
  cache?: ManifestCache,
): Promise<ManifestEntry[]> {
  if (snapshot.changelogManifestList === undefined) return [];
  return readListEntries(store, tablePath, snapshot.changelogManifestList, filter, cache);
}

/**
 * The `totalBuckets` of each of `partitions` in the state of `manifests` after removing the files
 * in `ignored` (identities), for partitions that still hold a live file. Reads the manifests whose
 * partition range (the manifest list's statistics) holds one of `partitions`, newest first, and
 * stops once every partition is resolved: a DELETE always follows its ADD in fold
 * order, so the first ADD met backwards that no later DELETE (or `ignored`) cancels is live.
 */
export async function findPartitionTotalBuckets(
  store: ObjectStore,
  tablePath: string,
  manifests: readonly ManifestFileMeta[],
  partitions: ReadonlySet<string>,
  ignored: ReadonlySet<string> = new Set(),
  cache?: ManifestCache,
): Promise<Map<string, number>> {
  const found = new Map<string, number>();
  const deleted = new Set(ignored);
  const candidates = manifests.filter((m) => [...partitions].some((p) => p >= m.minPartition && p <= m.maxPartition));
  const CHUNK = 4;
  // The newest candidate alone first: it is usually the last commit's, holding a live file of the
  // partitions that commit wrote, so a write's routing reads one manifest, not four; then four at
  // a time (one round trip more than before only when the newest does not answer).
  let size = 1;
  for (let end = candidates.length; end > 0 && found.size < partitions.size; end -= size, size = CHUNK) {
    const chunk = candidates.slice(Math.max(0, end - size), end);
    const contents = await readManifestsEntries(store, tablePath, chunk, CHUNK, cache);
    for (let k = contents.length - 1; k >= 0; k--) {
      const entries = contents[k];
      for (let j = entries.length - 1; j >= 0; j--) {
        const e = entries[j];
        if (!partitions.has(e.partition) || found.has(e.partition)) continue;
        const id = fileIdentity(e);
        if (e.kind === 'DELETE') deleted.add(id);
        else if (!deleted.has(id)) found.set(e.partition, e.totalBuckets);
      }
    }
  }
  return found;
}
