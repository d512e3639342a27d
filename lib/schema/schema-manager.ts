/**
 * Schema files of a table: `schema/schema-<id>`, JSON, created once with put-if-absent and never
 * rewritten. Creating `schema-0` is the commit point of creating a table.
 */
import { ObjectNotFoundError } from '../errors.js';
import { objectLocation } from '../store/json-file.js';
import { newestNumbered } from '../store/numbered-objects.js';
import { fromUtf8, listAll, utf8, type ObjectStore } from '../store/object-store.js';
import { deserializeSchema, serializeSchema } from './parse.js';
import type { TableSchema } from './types.js';

const SCHEMA_PREFIX = 'schema-';

function schemaKey(tablePath: string, id: number): string {
  return `${tablePath}/schema/${SCHEMA_PREFIX}${id}`;
}

/** Writes `schema/schema-<id>` if absent; returns false when a schema with that id already exists. */
export async function createSchemaFile(store: ObjectStore, tablePath: string, schema: TableSchema): Promise<boolean> {
  const created = await store.putIfAbsent(schemaKey(tablePath, schema.id), utf8(serializeSchema(schema)));
  return created !== undefined;
}

/** Reads one schema version. Throws ObjectNotFoundError when it does not exist. */
export async function readSchema(store: ObjectStore, tablePath: string, id: number): Promise<TableSchema> {
  const key = schemaKey(tablePath, id);
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

/**
 * The newest schema of a table, or undefined when the table has none (does not exist, or a drop is
 * under way: a drop deletes schema-0 first). Found without listing the schema folder: schema ids
 * are contiguous from 0 (an alter creates `schema-<latest + 1>` with put-if-absent; only a drop
 * deletes them), so schema-0 is read while schema-1's existence is checked, and a table that was
 * altered gallops on: HEADs at 2, 4, 8, … until one is missing, then a binary search between the
 * last present and the first missing id. An unaltered table costs two GET-class requests (the
 * listing was a LIST, priced as a PUT, plus the GET).
 */
export async function latestSchema(store: ObjectStore, tablePath: string): Promise<TableSchema | undefined> {
  const exists = async (id: number) => (await store.head(schemaKey(tablePath, id))) !== undefined;
  const [first, second] = await Promise.all([tryReadSchema(store, tablePath, 0), exists(1)]);
  if (first === undefined || !second) return first;
  const newest = await newestNumbered(1, (step) => step, exists);
  // Gone since it was seen: a drop deleting the schema files.
  return tryReadSchema(store, tablePath, newest);
}

/** Schema `id`, or undefined when its file does not exist. */
async function tryReadSchema(store: ObjectStore, tablePath: string, id: number): Promise<TableSchema | undefined> {
  try {
    return await readSchema(store, tablePath, id);
  } catch (e) {
    if (e instanceof ObjectNotFoundError) return undefined;
    throw e;
  }
}
