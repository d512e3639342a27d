/**
 * Keys of a table's snapshot-layer files (snapshots, hints, tags), relative to the table's key prefix.
 */
import { tableKey } from '../manifest/table-paths.js';

/** Folder of snapshot files and the LATEST / EARLIEST hints. */
export function snapshotDir(tablePath: string): string {
  return tableKey(tablePath, 'snapshot/');
}

/** `snapshot/snapshot-<id>`: created once, with put-if-absent; the commit point. */
export function snapshotKey(tablePath: string, id: number): string {
  return tableKey(tablePath, `snapshot/snapshot-${id}`);
}

/** The LATEST hint: a decimal snapshot id, possibly stale. */
export function latestHintKey(tablePath: string): string {
  return tableKey(tablePath, 'snapshot/LATEST');
}

/** The EARLIEST hint: a decimal snapshot id, possibly pointing at an expired snapshot. */
export function earliestHintKey(tablePath: string): string {
  return tableKey(tablePath, 'snapshot/EARLIEST');
}

/** Folder of tag files. */
export function tagDir(tablePath: string): string {
  return tableKey(tablePath, 'tag/');
}

/** `tag/tag-<name>`. */
export function tagKey(tablePath: string, name: string): string {
  return tableKey(tablePath, `tag/tag-${name}`);
}

/**
 * A table as users write it (`db.orders`) from its key prefix (`[warehouse/]db.db/orders`), for
 * messages; a prefix of another shape is returned as is.
 */
export function displayTableName(tablePath: string): string {
  const m = /(?:^|\/)([^/]+)\.db\/([^/]+)\/?$/.exec(tablePath);
  return m ? `${m[1]}.${m[2]}` : tablePath;
}
