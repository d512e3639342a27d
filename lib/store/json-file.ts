/**
 * Validated reads of the JSON objects varve saves in a store (lib/json.ts): errors name the
 * object by its full location, a path for a local folder and a URI otherwise.
 */
import { parseJsonFile, type JsonFileOptions, type JsonSchema } from '../json.js';
import type { ObjectStore } from './object-store.js';

/** Where `key` of `store` is, for messages: `/warehouse/db.db/t/snapshot/snapshot-3`, `s3://bucket/prefix/…`. */
export function objectLocation(store: ObjectStore, key: string): string {
  const uri = store.uri.replace(/\/+$/, '');
  // LocalStore.uri is file://<absolute path> with '%' written as '%25' (lib/store/local-store.ts).
  const base = uri.startsWith('file:///') ? uri.slice('file://'.length).replaceAll('%25', '%') : uri;
  return `${base}/${key}`;
}

/** Parses the body of object `key` of `store` against `schema` (CorruptMetadataError naming its location otherwise). */
export function parseJsonObject<T>(
  store: ObjectStore,
  key: string,
  body: Uint8Array,
  schema: JsonSchema<T>,
  opts?: JsonFileOptions,
): T {
  return parseJsonFile(body, schema, objectLocation(store, key), opts);
}

/** Reads object `key` of `store` and parses it against `schema`; ObjectNotFoundError when it does not exist. */
export async function readJsonFile<T>(
  store: ObjectStore,
  key: string,
  schema: JsonSchema<T>,
  opts?: JsonFileOptions,
): Promise<{ value: T; etag: string; lastModified: number }> {
  const obj = await store.get(key);
  return { value: parseJsonObject(store, key, obj.body, schema, opts), etag: obj.etag, lastModified: obj.lastModified };
}
