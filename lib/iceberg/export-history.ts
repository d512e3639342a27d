/**
 * The Iceberg history against varve's: an Iceberg snapshot exports the varve snapshot of the same
 * id, and names it by commit uuid (summary `varve.commit-uuid`), because a rollback removes
 * snapshots and their ids are committed again with other content. An Iceberg snapshot is on
 * varve's chain while the varve snapshot of its id exists with its commit uuid; the export keeps
 * those in the history and drops the rest (expired, or rolled back), deleting the metadata file,
 * manifest list and manifest of each dropped one.
 */
import { ObjectNotFoundError } from '../errors.js';
import { COMMIT_UUID_PROPERTY } from '../snapshot/commit-plan.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import type { ObjectStore } from '../store/object-store.js';
import type { Table } from '../table/table.js';
import { manifestKeysForList } from './iceberg-manifests.js';
import {
  metadataFileKey,
  storeKeyOf,
  type IcebergLocation,
  type IcebergSnapshot,
  type IcebergTableMetadata,
} from './iceberg-metadata.js';

/** Summary key: the commit uuid of the varve snapshot an Iceberg snapshot exports. */
export const COMMIT_UUID_SUMMARY = COMMIT_UUID_PROPERTY;
/** Summary key: the metadata version (`v<N>.metadata.json`) that added the Iceberg snapshot. */
export const METADATA_VERSION_SUMMARY = 'varve.metadata-version';

/** The commit uuid of a varve snapshot (undefined for snapshots committed before commits carried one). */
export function commitUuidOf(s: Snapshot): string | undefined {
  return s.properties?.[COMMIT_UUID_PROPERTY];
}

/** The metadata version that added `s` (exports before versions and snapshot ids parted wrote v<snapshot id>). */
function metadataVersionOf(s: IcebergSnapshot): number {
  const v = s.summary[METADATA_VERSION_SUMMARY];
  return v !== undefined && /^\d+$/.test(v) ? Number(v) : s['snapshot-id'];
}

/** The current Iceberg snapshot of `metadata`, if it lists it. */
export function currentIcebergSnapshot(metadata: IcebergTableMetadata): IcebergSnapshot | undefined {
  return metadata.snapshots.find((s) => s['snapshot-id'] === metadata['current-snapshot-id']);
}

/**
 * True when varve's snapshot of the same id exists and is the commit `s` exported (read fresh:
 * after a rollback the id may name another commit). An export written before summaries carried
 * the commit uuid matches any snapshot of its id.
 */
export async function onVarveChain(table: Table, s: IcebergSnapshot): Promise<boolean> {
  const varve = await table.snapshots.tryReadFresh(s['snapshot-id']);
  if (varve === undefined) return false;
  const uuid = s.summary[COMMIT_UUID_SUMMARY];
  return uuid === undefined || uuid === commitUuidOf(varve);
}

/**
 * The snapshots of `prev` the next export of `snapshot` keeps (those on varve's chain below it),
 * and those it drops (expired, or rolled back). Rollbacks remove a suffix of the chain, so the
 * newest snapshot found on it vouches for all older ones: one read per export without a rollback.
 */
export async function keptHistory(
  table: Table,
  prev: IcebergTableMetadata | undefined,
  snapshot: Snapshot,
): Promise<{ kept: IcebergSnapshot[]; dropped: IcebergSnapshot[] }> {
  const history = [...(prev?.snapshots ?? [])].sort((a, b) => a['snapshot-id'] - b['snapshot-id']);
  const earliest = (await table.snapshots.earliestId()) ?? snapshot.id;
  const kept: IcebergSnapshot[] = [];
  const dropped: IcebergSnapshot[] = [];
  let vouched = false;
  for (let i = history.length - 1; i >= 0; i--) {
    const s = history[i];
    const id = s['snapshot-id'];
    const keep = id < snapshot.id && id >= earliest && (vouched ||= await onVarveChain(table, s));
    (keep ? kept : dropped).push(s);
  }
  return { kept: kept.reverse(), dropped };
}

/**
 * The metadata-log of the next version: the previous versions (the one being replaced last)
 * whose snapshot is still in the history.
 */
export function keptMetadataLog(
  prev: IcebergTableMetadata | undefined,
  prevUri: string | undefined,
  snapshots: readonly IcebergSnapshot[],
): IcebergTableMetadata['metadata-log'] {
  if (prev === undefined || prevUri === undefined) return [];
  const versions = new Set(snapshots.map(metadataVersionOf));
  const log = [...prev['metadata-log'], { 'timestamp-ms': prev['last-updated-ms'], 'metadata-file': prevUri }];
  return log.filter((l) => versions.has(versionOfUri(l['metadata-file']) ?? -1));
}

/** The version of a `.../v<N>.metadata.json` URI. */
function versionOfUri(uri: string): number | undefined {
  const m = /\/v(\d+)\.metadata\.json$/.exec(uri);
  return m ? Number(m[1]) : undefined;
}

/** Deletes the metadata file, manifest list and manifests of Iceberg snapshots dropped from the history; how many objects. */
export async function trimHistory(
  store: ObjectStore,
  loc: IcebergLocation,
  dropped: readonly IcebergSnapshot[],
): Promise<number> {
  let n = 0;
  for (const s of dropped) {
    const listKey = storeKeyOf(store, s['manifest-list']);
    const keys = [metadataFileKey(loc, metadataVersionOf(s))];
    if (listKey?.startsWith(loc.metadataDir)) {
      const manifests = manifestKeysForList(listKey);
      keys.push(listKey, manifests.data);
      // Only a deletion-vector table's exports write a delete manifest.
      if ((await store.head(manifests.deletes)) !== undefined) keys.push(manifests.deletes);
    }
    for (const k of keys) {
      try {
        await store.delete(k);
      } catch (e) {
        // Another exporter trimmed it first.
        if (!(e instanceof ObjectNotFoundError)) throw e;
      }
      n++;
    }
  }
  return n;
}
