/**
 * Where a table's Iceberg metadata lives and how to read the current version: Paimon's layouts
 * (`metadata.iceberg.storage`): `table-location` puts it in `<table>/metadata/`, `warehouse` in
 * `<warehouse>/iceberg/<database>/<table>/metadata/` (an Iceberg Hadoop-catalog warehouse).
 * Version N is `v<N>.metadata.json`, N being the varve snapshot it exports; `version-hint.text`
 * names the current one (Iceberg's Hadoop tables convention). The hint is only a hint: a missing
 * or stale one is settled by listing the folder.
 */
import * as v from 'valibot';
import { IcebergExportError, ObjectNotFoundError } from '../errors.js';
import { jsonInt, jsonObject, jsonStringMap, jsonTime, parseJsonFile, type JsonSchema } from '../json.js';
import { tableKey } from '../manifest/table-paths.js';
import { objectLocation } from '../store/json-file.js';
import { fromUtf8, listAll, objectUri, type ObjectStore } from '../store/object-store.js';
import type { Table } from '../table/table.js';
import type { IcebergPartitionSpec, IcebergSchema } from './iceberg-schema.js';

/** Values of `metadata.iceberg.storage`. */
export type IcebergStorage = 'disabled' | 'table-location' | 'warehouse';

/** Where one table's Iceberg metadata goes. */
export interface IcebergLocation {
  storage: Exclude<IcebergStorage, 'disabled'>;
  /** Store key of the metadata folder, with a trailing '/'. */
  metadataDir: string;
  /** The Iceberg table's `location` URI. */
  tableUri: string;
}

/** One Iceberg snapshot as the table metadata lists it. */
export interface IcebergSnapshot {
  'snapshot-id': number;
  'parent-snapshot-id'?: number;
  'sequence-number': number;
  'timestamp-ms': number;
  'manifest-list': string;
  summary: Record<string, string> & { operation: string };
  'schema-id': number;
  /** v3 row lineage (spec "Snapshot Row IDs"): the table's next-row-id when the snapshot was added, and the ids it assigned. */
  'first-row-id'?: number;
  'added-rows'?: number;
}

/** The Iceberg table metadata JSON (format version 2 or 3) the export writes. */
export interface IcebergTableMetadata {
  'format-version': 2 | 3;
  'table-uuid': string;
  location: string;
  'last-sequence-number': number;
  'last-updated-ms': number;
  'last-column-id': number;
  'current-schema-id': number;
  schemas: IcebergSchema[];
  'default-spec-id': number;
  'partition-specs': IcebergPartitionSpec[];
  'last-partition-id': number;
  'default-sort-order-id': number;
  'sort-orders': Array<{ 'order-id': number; fields: unknown[] }>;
  properties: Record<string, string>;
  'current-snapshot-id': number;
  refs: Record<string, { 'snapshot-id': number; type: 'branch' | 'tag' }>;
  snapshots: IcebergSnapshot[];
  'snapshot-log': Array<{ 'timestamp-ms': number; 'snapshot-id': number }>;
  'metadata-log': Array<{ 'timestamp-ms': number; 'metadata-file': string }>;
  statistics: unknown[];
  /** v3: higher than every assigned row id; the next snapshot's first-row-id (spec "Row Lineage"). */
  'next-row-id'?: number;
}

const IcebergTableMetadataSchema: JsonSchema<IcebergTableMetadata> = v.looseObject({
  'format-version': v.picklist([2, 3]),
  'table-uuid': v.string(),
  location: v.string(),
  'last-sequence-number': jsonInt,
  'last-updated-ms': jsonTime,
  'last-column-id': jsonInt,
  'current-schema-id': jsonInt,
  schemas: v.array(
    v.looseObject({
      type: v.literal('struct'),
      'schema-id': jsonInt,
      'identifier-field-ids': v.optional(v.array(jsonInt)),
      fields: v.array(
        v.looseObject({
          id: jsonInt,
          name: v.string(),
          required: v.boolean(),
          type: v.string(),
          doc: v.optional(v.string()),
        }),
      ),
    }),
  ),
  'default-spec-id': jsonInt,
  'partition-specs': v.array(
    v.looseObject({
      'spec-id': jsonInt,
      fields: v.array(
        v.looseObject({
          name: v.string(),
          transform: v.literal('identity'),
          'source-id': jsonInt,
          'field-id': jsonInt,
        }),
      ),
    }),
  ),
  'last-partition-id': jsonInt,
  'default-sort-order-id': jsonInt,
  'sort-orders': v.array(v.looseObject({ 'order-id': jsonInt, fields: v.array(v.unknown()) })),
  properties: jsonStringMap,
  'current-snapshot-id': jsonInt,
  refs: v.record(v.string(), v.looseObject({ 'snapshot-id': jsonInt, type: v.picklist(['branch', 'tag']) })),
  snapshots: v.array(
    v.looseObject({
      'snapshot-id': jsonInt,
      'parent-snapshot-id': v.optional(jsonInt),
      'sequence-number': jsonInt,
      'timestamp-ms': jsonTime,
      'manifest-list': v.string(),
      summary: v.objectWithRest({ operation: v.string() }, v.string()),
      'schema-id': jsonInt,
      'first-row-id': v.optional(jsonInt),
      'added-rows': v.optional(jsonInt),
    }),
  ),
  'snapshot-log': v.array(v.looseObject({ 'timestamp-ms': jsonTime, 'snapshot-id': jsonInt })),
  'metadata-log': v.array(v.looseObject({ 'timestamp-ms': jsonTime, 'metadata-file': v.string() })),
  statistics: v.array(jsonObject),
  'next-row-id': v.optional(jsonInt),
});

/** The table's `metadata.iceberg.storage`. */
export function icebergStorageOf(table: Table): IcebergStorage {
  return table.options.metadataIcebergStorage;
}

/** Where `table` exports its Iceberg metadata, or undefined when the export is disabled. */
export function icebergLocation(table: Table): IcebergLocation | undefined {
  const storage = icebergStorageOf(table);
  if (storage === 'disabled') return undefined;
  let base = table.path;
  if (storage === 'warehouse') {
    // `database.table`: the database never contains a dot (catalog names are validated).
    const dot = table.name.indexOf('.');
    base = `iceberg/${table.name.slice(0, dot)}/${table.name.slice(dot + 1)}`;
  }
  return { storage, metadataDir: tableKey(base, 'metadata/'), tableUri: storeUri(table.store, base) };
}

/** The absolute URI of a store key (what Iceberg metadata holds for every file). */
export function storeUri(store: ObjectStore, key: string): string {
  return objectUri(store, key);
}

/** The store key of an absolute URI inside `store`, or undefined when it points elsewhere. */
export function storeKeyOf(store: ObjectStore, uri: string): string | undefined {
  const prefix = `${store.uri.replace(/\/+$/, '')}/`;
  return uri.startsWith(prefix) ? uri.slice(prefix.length) : undefined;
}

/** `version-hint.text` in a metadata folder. */
export function versionHintKey(loc: IcebergLocation): string {
  return `${loc.metadataDir}version-hint.text`;
}

/** `v<N>.metadata.json` in a metadata folder. */
export function metadataFileKey(loc: IcebergLocation, version: number): string {
  return `${loc.metadataDir}v${version}.metadata.json`;
}

const METADATA_FILE = /^v(\d+)\.metadata\.json$/;

/** Parses a metadata JSON; `file` (its location) names it in errors. */
function parseIcebergMetadata(bytes: Uint8Array, file: string): IcebergTableMetadata {
  return parseJsonFile(bytes, IcebergTableMetadataSchema, file, {
    what: 'Iceberg table metadata',
    fix: 'it is not Iceberg v2 or v3 table metadata written by varve; delete it and run `varve export-iceberg`',
  });
}

/** The version the hint names, or undefined when there is no hint. */
export async function readVersionHint(
  store: ObjectStore,
  loc: IcebergLocation,
): Promise<{ version: number; etag: string } | undefined> {
  try {
    const o = await store.get(versionHintKey(loc));
    const text = fromUtf8(o.body).trim();
    return /^\d+$/.test(text) ? { version: Number(text), etag: o.etag } : { version: 0, etag: o.etag };
  } catch (e) {
    if (e instanceof ObjectNotFoundError) return undefined;
    throw e;
  }
}

type VersionedMetadata = { version: number; key: string; metadata: IcebergTableMetadata };

/** Metadata version `version`, or undefined when it does not exist. */
async function tryReadVersion(
  store: ObjectStore,
  loc: IcebergLocation,
  version: number,
): Promise<VersionedMetadata | undefined> {
  const key = metadataFileKey(loc, version);
  try {
    const { body } = await store.get(key);
    return { version, key, metadata: parseIcebergMetadata(body, objectLocation(store, key)) };
  } catch (e) {
    if (e instanceof ObjectNotFoundError) return undefined;
    throw e;
  }
}

/**
 * The current Iceberg metadata of a table (version, key, content), or undefined when none was
 * exported: the version the hint names, else the newest listed; then, like Iceberg's Hadoop
 * tables, every following version that exists (the hint is moved after the version is created).
 */
export async function readCurrentIcebergMetadata(
  store: ObjectStore,
  loc: IcebergLocation,
): Promise<VersionedMetadata | undefined> {
  const hint = await readVersionHint(store, loc);
  let found = hint !== undefined && hint.version > 0 ? await tryReadVersion(store, loc, hint.version) : undefined;
  if (found === undefined) {
    // No hint, or one naming a missing version: the newest metadata file present.
    const versions = (await listAll(store, loc.metadataDir))
      .map((o) => METADATA_FILE.exec(o.key.slice(loc.metadataDir.length)))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => Number(m[1]))
      .sort((a, b) => b - a);
    if (versions.length === 0) return undefined;
    found = await tryReadVersion(store, loc, versions[0]);
    if (found === undefined)
      throw new IcebergExportError(`${metadataFileKey(loc, versions[0])} disappeared while it was read; run again`);
  }
  for (
    let next = await tryReadVersion(store, loc, found.version + 1);
    next !== undefined;
    next = await tryReadVersion(store, loc, found.version + 1)
  ) {
    found = next;
  }
  return found;
}
