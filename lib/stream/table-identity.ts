/**
 * Which table a long-running reader reads. A table's first schema file, `schema/schema-0`, is
 * created once with put-if-absent and never rewritten, so its etag identifies the table: a drop
 * deletes it, a re-created table under the same name has another one. A reader checks it before
 * creating consumer state and on every discovery run, so it stops (TableNotFoundError) instead of
 * writing into a dropped table's folder or handing its position to a new table of the same name.
 */
import { TableNotFoundError } from '../errors.js';
import type { Table } from '../table/table.js';

/** The identity of `table` now: the etag of its first schema file. Throws TableNotFoundError when it was dropped. */
export async function tableIdentity(table: Table): Promise<string> {
  const head = await table.store.head(`${table.path}/schema/schema-0`);
  if (head === undefined) {
    throw new TableNotFoundError(table.name, `table ${table.name} was dropped while it was being read; the reader stops (nothing is written into the dropped table)`);
  }
  return head.etag;
}

/** Throws TableNotFoundError unless `table` is still the table whose identity is `expected`. */
export async function checkTableIdentity(table: Table, expected: string): Promise<void> {
  if ((await tableIdentity(table)) !== expected) {
    throw new TableNotFoundError(
      table.name,
      `table ${table.name} was dropped and created again while it was being read; the reader of the old table stops (start it again to read the new one)`,
    );
  }
}
