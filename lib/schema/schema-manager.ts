/**
 * Schema files of a table: `schema/schema-<id>`, JSON, created once with put-if-absent and never
 * rewritten. Creating `schema-0` is the commit point of creating a table.
 */
import { ObjectNotFoundError } from '../errors.js';
import { objectLocation } from '../store/json-file.js';
import { fromUtf8, listAll, utf8, type ObjectStore } from '../store/object-store.js';
import { deserializeSchema, serializeSchema } from './parse.js';
import type { TableSchema } from './types.js';

const SCHEMA_PREFIX = 'schema-';

/** Writes `schema/schema-<id>` if absent; returns false when a schema with that id already exists. */
export async function createSchemaFile(store: ObjectStore, tablePath: string, schema: TableSchema): Promise<boolean> {
  const created = await store.putIfAbsent(
    `${tablePath}/schema/${SCHEMA_PREFIX}${schema.id}`,
    utf8(serializeSchema(schema)),
  );
  return created !== undefined;
}

/** Reads one schema version. Throws ObjectNotFoundError when it does not exist. */
export async function readSchema(store: ObjectStore, tablePath: string, id: number): Promise<TableSchema> {
  const key = `${tablePath}/schema/${SCHEMA_PREFIX}${id}`;
  const { body } = await store.get(key);
  return deserializeSchema(fromUtf8(body), `schema file ${objectLocation(store, key)}`);
}

/** Ids of every schema version of a table, ascending. */
export async function listSchemaIds(store: ObjectStore, tablePath: string): Promise<number[]> {
  const ids: number[] = [];
  for (const o of await listAll(store, `${tablePath}/schema/${SCHEMA_PREFIX}`)) {
    const suffix = o.key.slice(o.key.lastIndexOf('/') + 1 + SCHEMA_PREFIX.length);
    // Only numeric suffixes are schema versions; anything else (temp files) is ignored.
    if (/^\d+$/.test(suffix)) ids.push(Number(suffix));
  }
  return ids.sort((a, b) => a - b);
}

/** The newest schema of a table, or undefined when the table has none (does not exist). */
export async function latestSchema(store: ObjectStore, tablePath: string): Promise<TableSchema | undefined> {
  const ids = await listSchemaIds(store, tablePath);
  if (ids.length === 0) return undefined;
  try {
    return await readSchema(store, tablePath, ids[ids.length - 1]);
  } catch (e) {
    if (e instanceof ObjectNotFoundError) return undefined;
    throw e;
  }
}
