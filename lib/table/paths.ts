/**
 * Where a table lives in the warehouse. The keys inside a table's folder are laid out once, in
 * lib/manifest/table-paths.ts; this file adds the folder of the table itself.
 */
export { dataFileKey } from '../manifest/table-paths.js';

/** Folder of a table: `<database>.db/<table>`. */
export function tableLocation(database: string, table: string): string {
  return `${database}.db/${table}`;
}
