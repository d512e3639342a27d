/**
 * Where each object of a table lives, relative to the warehouse root. One place, so that the
 * layout in DESIGN.md ("Table layout in the warehouse") is written down exactly once.
 */

/** Folder of a table: `<database>.db/<table>`. */
export function tableLocation(database: string, table: string): string {
  return `${database}.db/${table}`;
}

/** Folder of one bucket's data and changelog files. */
export function bucketDir(tablePath: string, partition: string, bucket: number): string {
  return partition ? `${tablePath}/${partition}/bucket-${bucket}` : `${tablePath}/bucket-${bucket}`;
}

/** Key of a data or changelog file of a bucket. */
export function dataFileKey(tablePath: string, partition: string, bucket: number, fileName: string): string {
  return `${bucketDir(tablePath, partition, bucket)}/${fileName}`;
}

export function schemaKey(tablePath: string, id: number): string {
  return `${tablePath}/schema/schema-${id}`;
}

export function consumerKey(tablePath: string, consumerId: string): string {
  return `${tablePath}/consumer/consumer-${consumerId}`;
}
