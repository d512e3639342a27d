/**
 * What expiring snapshots [from, end) may delete (Paimon's FileDeletionBase rules), computed
 * read-only before anything is deleted:
 * - data files DELETEd by the deltas of snapshots (from, end] and not ADDed back later in the
 *   range (a level upgrade deletes and re-adds the same file in one delta), minus files of tags;
 * - changelog files of snapshots [from, end), minus files of tags;
 * - manifests and manifest lists of snapshots [from, end), minus those of snapshot `end` and of
 *   every tag. Manifests are shared only forward (a snapshot's base is built from its
 *   predecessor's), so a manifest a later snapshot uses is also used by `end`;
 * - deletion-vector indexes and Puffin files of snapshots [from, end), minus those of `end` and of
 *   every tag, by the same rule: a vector a later snapshot keeps is carried from `end`'s index (an
 *   index counts with the manifests, a Puffin file with the data files);
 * - less what a rollback after `end` restored (keepWhatLaterSnapshotsHold).
 */
import { LruManifestCache } from '../manifest/manifest-file.js';
import { readEntries } from '../manifest/scan.js';
import { ROLLBACK_TARGET_PROPERTY, type Snapshot } from '../snapshot/snapshot.js';
import type { NamedTag } from '../snapshot/tags.js';
import type { Table } from '../table/table.js';
import { deletionVectorKeys, entryFileKey, readSnapshotManifests, snapshotReferences } from './snapshot-references.js';

/**
 * A forward rollback (lib/maintenance/rollback.ts) after `end` breaks the forward-only rule above:
 * its delta ADDs back files of its target that snapshots in the range DELETEd, and its
 * deletion-vector index is its target's, so it and every snapshot after it may name vectors of
 * the range. Removes from the candidates what the snapshots after `end` hold that way: the data
 * files rollback snapshots add back, and the vector indexes and Puffin files any of them names.
 */
async function keepWhatLaterSnapshotsHold(
  table: Table,
  end: number,
  read: (id: number) => Promise<Snapshot | undefined>,
  cache: LruManifestCache,
  data: Set<string>,
  dvIndexes: Set<string>,
  dvFiles: Set<string>,
): Promise<void> {
  if (data.size === 0 && dvIndexes.size === 0 && dvFiles.size === 0) return;
  for (let id = end + 1; ; id++) {
    const snapshot = await read(id);
    if (snapshot === undefined) return;
    if (dvIndexes.size > 0 || dvFiles.size > 0) {
      const dv = await deletionVectorKeys(table, snapshot);
      for (const k of dv.index) dvIndexes.delete(k);
      for (const k of dv.puffins) dvFiles.delete(k);
    }
    if (data.size > 0 && snapshot.properties?.[ROLLBACK_TARGET_PROPERTY] !== undefined) {
      const m = await readSnapshotManifests(table, snapshot);
      for (const e of await readEntries(table.store, table.path, m.delta, {}, cache)) {
        if (e.kind === 'ADD') data.delete(entryFileKey(table, e));
      }
    }
  }
}

/** The files one expiry run deletes. */
export interface DeletionPlan {
  dataFiles: string[];
  changelogFiles: string[];
  manifests: string[];
  manifestLists: string[];
}

/** A snapshot the plan needs is gone: another expiry run is working on the same range. */
export class ExpiryRaceSignal extends Error {
  constructor(readonly snapshotId: number) {
    super(`snapshot ${snapshotId} disappeared while expiry planned: another expiry run is at work`);
    this.name = 'ExpiryRaceSignal';
  }
}

/**
 * The deletion plan of snapshots [from, end). `read` returns a snapshot by id (undefined when
 * absent); throws ExpiryRaceSignal when a snapshot of [from, end] is absent.
 */
export async function planDeletions(
  table: Table,
  from: number,
  end: number,
  tags: readonly NamedTag[],
  read: (id: number) => Promise<Snapshot | undefined>,
): Promise<DeletionPlan> {
  const cache = new LruManifestCache();
  // Final state of each data file over the deltas of (from, end], in commit order.
  const dead = new Map<string, boolean>();
  const changelog = new Set<string>();
  const manifests = new Set<string>();
  const lists = new Set<string>();
  const dvIndexes = new Set<string>();
  const dvFiles = new Set<string>();
  for (let id = from; id <= end; id++) {
    const snapshot = await read(id);
    if (snapshot === undefined) throw new ExpiryRaceSignal(id);
    const m = await readSnapshotManifests(table, snapshot);
    const dv = await deletionVectorKeys(table, snapshot);
    for (const k of dv.index) id < end ? dvIndexes.add(k) : dvIndexes.delete(k);
    for (const k of dv.puffins) id < end ? dvFiles.add(k) : dvFiles.delete(k);
    if (id > from) {
      const delta = await readEntries(table.store, table.path, m.delta, {}, cache);
      const added = new Set(delta.filter((e) => e.kind === 'ADD').map((e) => entryFileKey(table, e)));
      for (const e of delta) {
        const key = entryFileKey(table, e);
        // An ADD in the same delta wins: the file lives on (upgraded to another level).
        if (e.kind === 'DELETE' && !added.has(key)) dead.set(key, true);
      }
      for (const key of added) dead.set(key, false);
    }
    if (id < end) {
      for (const e of await readEntries(table.store, table.path, m.changelog, {}, cache)) {
        if (e.kind === 'ADD') changelog.add(entryFileKey(table, e));
      }
      for (const k of m.listKeys) lists.add(k);
      for (const k of m.manifestKeys) manifests.add(k);
    } else {
      // Snapshot `end` stays: everything it references is kept.
      for (const k of m.listKeys) lists.delete(k);
      for (const k of m.manifestKeys) manifests.delete(k);
    }
  }
  const data = new Set([...dead].filter(([, isDead]) => isDead).map(([k]) => k));
  for (const { tag } of tags) {
    const dv = await deletionVectorKeys(table, tag);
    for (const k of dv.index) dvIndexes.delete(k);
    for (const k of dv.puffins) dvFiles.delete(k);
    if (tag.id < end) {
      // Only a tag older than `end` can hold a file that dies in the range.
      const refs = await snapshotReferences(table, tag, cache);
      for (const k of refs.dataFiles) data.delete(k);
      for (const k of refs.changelogFiles) changelog.delete(k);
      for (const k of refs.manifestLists) lists.delete(k);
      for (const k of refs.manifests) manifests.delete(k);
    } else {
      const m = await readSnapshotManifests(table, tag);
      for (const k of m.listKeys) lists.delete(k);
      for (const k of m.manifestKeys) manifests.delete(k);
    }
  }
  await keepWhatLaterSnapshotsHold(table, end, read, cache, data, dvIndexes, dvFiles);
  return {
    dataFiles: [...data, ...dvFiles],
    changelogFiles: [...changelog],
    manifests: [...manifests, ...dvIndexes],
    manifestLists: [...lists],
  };
}
