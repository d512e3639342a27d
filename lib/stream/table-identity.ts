/**
 * Which table a long-running reader reads. A table gets a UUID when it is created, in its first
 * schema file `schema/schema-0` (created once with put-if-absent, never rewritten, deleted first by
 * a drop; later schemas carry the UUID over). A table dropped and created again under the same
 * name has another UUID. A table created before UUIDs is identified by the etag of its schema-0
 * instead (`schema-0@<etag>`), which a re-create changes too.
 *
 * A reader checks the identity before creating consumer state and on every discovery run, so it
 * stops (TableNotFoundError) instead of writing into a dropped table's folder or handing its
 * position to a new table of the same name. Consumers and leases record the UUID they were made
 * for (`tableUuid`), and a consumer or lease left by a dropped table is never taken over by the
 * table created after it.
 */
import { ObjectNotFoundError, TableNotFoundError } from '../errors.js';
import { deserializeSchema } from '../schema/parse.js';
import { objectLocation } from '../store/json-file.js';
import { fromUtf8 } from '../store/object-store.js';
import type { Table } from '../table/table.js';

/** The identity `table` was opened with (no request): its UUID, or undefined for a table from before UUIDs. */
export function openedTableUuid(table: Table): string | undefined {
  return table.schema.tableUuid;
}

/**
 * The identity of the table at `table`'s path now: the UUID in its schema-0, or `schema-0@<etag>`
 * for a table created before UUIDs (one GET). Throws TableNotFoundError when it was dropped.
 */
export async function tableIdentity(table: Table): Promise<string> {
  const key = `${table.path}/schema/schema-0`;
  let obj;
  try {
    obj = await table.store.get(key);
  } catch (e) {
    if (!(e instanceof ObjectNotFoundError)) throw e;
    throw new TableNotFoundError(
      table.name,
      `table ${table.name} was dropped while it was being read; the reader stops (nothing is written into the dropped table)`,
    );
  }
  const uuid = deserializeSchema(fromUtf8(obj.body), `schema file ${objectLocation(table.store, key)}`).tableUuid;
  return uuid ?? `schema-0@${obj.etag}`;
}

/** Throws TableNotFoundError unless `table` is still the table whose identity is `expected`. */
export async function checkTableIdentity(table: Table, expected: string): Promise<void> {
  if ((await tableIdentity(table)) !== expected) throw recreatedError(table);
}

/**
 * Throws TableNotFoundError unless the table at `table`'s path is still the one `table` was opened
 * as: for a reader about to write consumer state, so that a reader of a dropped (or dropped and
 * re-created) table never writes into its folder.
 */
export async function checkOpenedTable(table: Table): Promise<string> {
  const now = await tableIdentity(table);
  const opened = openedTableUuid(table);
  if (opened !== undefined && now !== opened) throw recreatedError(table);
  return now;
}

function recreatedError(table: Table): TableNotFoundError {
  return new TableNotFoundError(
    table.name,
    `table ${table.name} was dropped and created again while it was being read; the reader of the old table stops (start it again to read the new one)`,
  );
}
