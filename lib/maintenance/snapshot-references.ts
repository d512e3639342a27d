/**
 * The objects a snapshot (or a tag, which holds a snapshot's JSON) needs to be read: its manifest
 * lists, the manifests they name, its live data files and its changelog files. Expiry, orphan
 * cleanup and table verification all reason in these keys.
 */
import { readDeletionIndex } from '../manifest/deletion-index.js';
import type { ManifestCache } from '../manifest/manifest-file.js';
import { readManifestList } from '../manifest/manifest-list.js';
import { foldLiveFiles, readEntries, readSnapshotLists } from '../manifest/scan.js';
import { manifestKey, tableKey } from '../manifest/table-paths.js';
import type { DataFileMeta, ManifestEntry, ManifestFileMeta } from '../manifest/types.js';
import type { ChangelogRetained, LongLivedChangelog } from '../snapshot/changelog.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import { followUpSource } from '../table/follow-up.js';
import { dataFileKey } from '../table/paths.js';
import type { Table } from '../table/table.js';

/** Keys of every object a snapshot references, by kind. */
export interface SnapshotReferences {
  manifestLists: string[];
  manifests: string[];
  /** Live data files: base and delta folded (ADD minus DELETE). The delta's ADDs are among them. */
  dataFiles: string[];
  changelogFiles: string[];
  /** Deletion-vector tables: the snapshot's deletion-vector index and the Puffin files its vectors lie in. */
  deletionVectorFiles: string[];
  /** The manifest entry's file metadata of each data and changelog file, by key (verify checks the files against it). */
  files: Map<string, DataFileMeta>;
}

/** The manifest lists of a snapshot, read: names as stored and the manifests each holds. */
export interface SnapshotManifests {
  base: ManifestFileMeta[];
  delta: ManifestFileMeta[];
  changelog: ManifestFileMeta[];
  /** Keys of the manifest lists themselves. */
  listKeys: string[];
  /** Keys of every manifest named by any of the lists. */
  manifestKeys: string[];
}

/** Key of the data or changelog file of a manifest entry. */
export function entryFileKey(table: Table, e: Pick<ManifestEntry, 'partition' | 'bucket' | 'file'>): string {
  return dataFileKey(table.path, e.partition, e.bucket, e.file.fileName);
}

/** Reads a snapshot's manifest lists (not the manifests). */
export async function readSnapshotManifests(table: Table, snapshot: Snapshot): Promise<SnapshotManifests> {
  const [{ base, delta }, changelog] = await Promise.all([
    readSnapshotLists(table.store, table.path, snapshot),
    snapshot.changelogManifestList === undefined
      ? Promise.resolve([] as ManifestFileMeta[])
      : readManifestList(table.store, table.path, snapshot.changelogManifestList),
  ]);
  // A combined list is named as both base and delta: one key.
  const names = new Set([snapshot.baseManifestList, snapshot.deltaManifestList, snapshot.changelogManifestList]);
  const listKeys = [...names].filter((n): n is string => n !== undefined).map((n) => manifestKey(table.path, n));
  const manifestKeys = [...base, ...delta, ...changelog].map((m) => manifestKey(table.path, m.fileName));
  return { base, delta, changelog, listKeys, manifestKeys };
}

/** Every object a snapshot references; `cache` shares manifest contents across snapshots of one run. */
export async function snapshotReferences(
  table: Table,
  snapshot: Snapshot,
  cache?: ManifestCache,
): Promise<SnapshotReferences> {
  const m = await readSnapshotManifests(table, snapshot);
  const [live, changelog, dv] = await Promise.all([
    foldLiveFiles(table.store, table.path, [...m.base, ...m.delta], {}, cache),
    readEntries(table.store, table.path, m.changelog, {}, cache),
    deletionVectorKeys(table, snapshot),
  ]);
  const adds = changelog.filter((e) => e.kind === 'ADD');
  return {
    manifestLists: m.listKeys,
    manifests: m.manifestKeys,
    dataFiles: live.map((e) => entryFileKey(table, e)),
    changelogFiles: adds.map((e) => entryFileKey(table, e)),
    deletionVectorFiles: [...dv.index, ...dv.puffins],
    files: new Map([...live, ...adds].map((e) => [entryFileKey(table, e), e.file])),
  };
}

/** Adds every key of `refs` to `into`. */
export function addReferences(into: Set<string>, refs: SnapshotReferences): void {
  for (const list of [
    refs.manifestLists,
    refs.manifests,
    refs.dataFiles,
    refs.changelogFiles,
    refs.deletionVectorFiles,
  ])
    for (const k of list) into.add(k);
}

/** Keys of a snapshot's deletion-vector index (none without) and of the Puffin files its vectors lie in. */
export async function deletionVectorKeys(
  table: Table,
  snapshot: Snapshot,
): Promise<{ index: string[]; puffins: string[] }> {
  if (snapshot.deletionVectors === undefined) return { index: [], puffins: [] };
  const refs = await readDeletionIndex(table.store, table.path, snapshot);
  return {
    index: [manifestKey(table.path, snapshot.deletionVectors)],
    puffins: [...new Set(refs.map((r) => tableKey(table.path, r.dvFile)))],
  };
}

/**
 * What a long-lived changelog of `snapshot` must keep for a stream to read its changes (the
 * objects planFollowUp reads, by followUpSource), as keys relative to the table folder.
 */
export async function changelogRetained(
  table: Table,
  snapshot: Snapshot,
  cache?: ManifestCache,
): Promise<ChangelogRetained> {
  const source = followUpSource(table, snapshot);
  const rel = (key: string) => key.slice(tableKey(table.path, '').length);
  const out: ChangelogRetained = { manifestLists: [], manifests: [], files: [] };
  if (source === 'none') return out;
  let manifests: ManifestFileMeta[];
  if (source === 'changelog') {
    out.manifestLists.push(snapshot.changelogManifestList!);
    manifests = await readManifestList(table.store, table.path, snapshot.changelogManifestList!, cache);
  } else {
    // A combined list (base + delta in one) stays whole; only its delta part is read from it.
    out.manifestLists.push(snapshot.deltaManifestList);
    manifests = (await readSnapshotLists(table.store, table.path, snapshot, cache)).delta;
  }
  out.manifestLists = out.manifestLists.map((n) => rel(manifestKey(table.path, n)));
  out.manifests = manifests.map((m) => rel(manifestKey(table.path, m.fileName)));
  for (const e of await readEntries(table.store, table.path, manifests, {}, cache)) {
    // Exactly the files the follow-up plan opens: changelog ADDs, level-0 delta ADDs, or both sides of an overwrite.
    const wanted = source === 'overwrite' || (e.kind === 'ADD' && (source === 'changelog' || e.file.level === 0));
    if (wanted) out.files.push(rel(entryFileKey(table, e)));
  }
  return out;
}

/** Every full key a long-lived changelog keeps alive. */
export function changelogKeys(table: Table, c: LongLivedChangelog): string[] {
  const { manifestLists, manifests, files } = c.retained;
  return [...manifestLists, ...manifests, ...files].map((k) => tableKey(table.path, k));
}
