/**
 * Keys of a table's files inside its object store, relative to the table's key prefix
 * (`db.db/orders`). One place for the layout of DESIGN.md "Table layout in the warehouse".
 */

/** Joins a table path and a relative key; an empty table path means the store root. */
export function tableKey(tablePath: string, relative: string): string {
  const base = tablePath.replace(/\/+$/, '');
  return base === '' ? relative : `${base}/${relative}`;
}

/** Folder of manifest files and manifest lists. */
export function manifestDir(tablePath: string): string {
  return tableKey(tablePath, 'manifest/');
}

/** A manifest file or manifest list by its name (`manifest-…` / `manifest-list-…`). */
export function manifestKey(tablePath: string, fileName: string): string {
  return tableKey(tablePath, `manifest/${fileName}`);
}

/** `[partition/]bucket-<n>/`: the folder of a bucket's data and changelog files. */
function bucketDir(tablePath: string, partition: string, bucket: number): string {
  return tableKey(tablePath, partition === '' ? `bucket-${bucket}/` : `${partition}/bucket-${bucket}/`);
}

/** Full key of a data or changelog file. */
export function dataFileKey(tablePath: string, partition: string, bucket: number, fileName: string): string {
  return bucketDir(tablePath, partition, bucket) + fileName;
}
