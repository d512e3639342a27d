/**
 * Orphans of the Iceberg metadata folder, for orphan cleanup: manifests and manifest lists that no
 * snapshot of the current Iceberg metadata lists. An export writes them before it creates its
 * metadata version; one that loses the create removes them, but one that crashes first (or whose
 * removal fails) leaves them, and varve's own orphan scan never looks into this folder (with the
 * `warehouse` layout it lies outside the table). Only the export's own names are candidates
 * (`snap-<id>-1-<uuid>.avro`, `<uuid>-m0.avro`, `<uuid>-m1.avro`); metadata files and the version
 * hint never are.
 */
import { listAll, type ObjectInfo } from '../store/object-store.js';
import type { Table } from '../table/table.js';
import { manifestKeysForList } from './iceberg-manifests.js';
import { icebergLocation, readCurrentIcebergMetadata, storeKeyOf } from './iceberg-metadata.js';

const EXPORT_AVRO = /^(snap-\d+-1-[^/]+|[^/]+-m[01])\.avro$/;

/**
 * The export's manifests and manifest lists that the current Iceberg metadata does not reference:
 * those last modified before `cutoff` (epoch ms) as orphans, and how many younger ones were left
 * (an export in flight writes them before its metadata version). Listed before the metadata is
 * read, so a file an export commits meanwhile counts as referenced.
 */
export async function icebergMetadataOrphans(
  table: Table,
  cutoff: number,
): Promise<{ orphans: ObjectInfo[]; tooRecent: number }> {
  const loc = icebergLocation(table);
  if (loc === undefined) return { orphans: [], tooRecent: 0 };
  const objects = await listAll(table.store, loc.metadataDir);
  const current = await readCurrentIcebergMetadata(table.store, loc);
  const used = new Set<string>();
  for (const s of current?.metadata.snapshots ?? []) {
    const list = storeKeyOf(table.store, s['manifest-list']);
    if (list === undefined || !list.startsWith(loc.metadataDir)) continue;
    const manifests = manifestKeysForList(list);
    used.add(list).add(manifests.data).add(manifests.deletes);
  }
  const orphans: ObjectInfo[] = [];
  let tooRecent = 0;
  for (const o of objects) {
    if (!EXPORT_AVRO.test(o.key.slice(loc.metadataDir.length)) || used.has(o.key)) continue;
    if (o.lastModified >= cutoff) tooRecent++;
    else orphans.push(o);
  }
  return { orphans, tooRecent };
}
