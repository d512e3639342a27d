/**
 * Table schemas: building one from columns, keys and options (with every cross-check a table
 * needs to stay consistent forever, since keys and buckets are immutable), and the JSON of
 * `schema/schema-<id>` (types written as text, like Paimon's SchemaSerializer).
 */
import { CorruptMetadataError, OptionError, SchemaError } from '../errors.js';
import { jsonObject, parseJsonFile } from '../json.js';
import { checkAggregateFit } from './option-checks.js';
import { TableOptions } from './options.js';
import { formatType, parseTypeText } from './type-text.js';
import type { DataField, TableSchema } from './types.js';

/** What createTableSchema builds a schema from. */
export interface CreateTableSchemaArgs {
  fields: DataField[];
  primaryKeys?: string[];
  partitionKeys?: string[];
  options?: Record<string, string>;
  comment?: string;
  /** Schema id (0 for a new table). */
  id?: number;
  /** Creation time, epoch ms (default: now). */
  now?: number;
  /** The table's UUID (a new table gets one from its catalog; later schemas carry it over). */
  tableUuid?: string;
}

/**
 * A validated TableSchema: keys exist and are distinct, the primary key covers the partition keys,
 * key columns become NOT NULL, options are valid for these columns, the bucket key is part of the
 * primary key minus partition keys. With no primary key it is an append table: no merge options,
 * `bucket = -1` or a fixed count with a `bucket-key`. Throws SchemaError or OptionError naming the problem.
 */
export function createTableSchema(args: CreateTableSchemaArgs): TableSchema {
  const primaryKeys = [...(args.primaryKeys ?? [])];
  const partitionKeys = [...(args.partitionKeys ?? [])];
  const options = { ...(args.options ?? {}) };
  if (args.fields.length === 0) throw new SchemaError('empty schema: a table needs at least one column');
  checkFieldList(args.fields);
  const names = args.fields.map((f) => f.name);
  const appendOnly = primaryKeys.length === 0;
  checkKeyColumns(args.fields, primaryKeys, partitionKeys);
  // A table without a primary key is an append table (Paimon's append-only table): with no bucket
  // given it is bucket-unaware (`bucket = -1`), stored so that the choice never depends on a default.
  if (appendOnly && options.bucket === undefined) options.bucket = '-1';
  // Key columns are implicitly NOT NULL: a null key has no place in the key order.
  const fields = args.fields.map((f) =>
    primaryKeys.includes(f.name) && f.type.nullable
      ? { ...f, type: { ...f.type, nullable: false } }
      : { ...f, type: { ...f.type } },
  );
  const opts = new TableOptions(options, fields);
  if (appendOnly) {
    checkAppendOnlyOptions(opts, options, partitionKeys, names);
  } else {
    if (opts.bucket === -1) {
      throw new OptionError(
        `option bucket = -1 on a primary-key table (Paimon's dynamic bucket mode) is not supported: varve has fixed buckets only, so a key's bucket never moves; set bucket to a number ≥ 1, e.g. bucket=4 (bucket=-1 is for tables without a primary key)`,
        'bucket',
      );
    }
    checkBucketKey(opts.bucketKey, primaryKeys, partitionKeys);
    checkKeyOptions(opts, fields, primaryKeys);
  }
  const schema: TableSchema = {
    version: 1,
    id: args.id ?? 0,
    fields,
    highestFieldId: Math.max(...fields.map((f) => f.id)),
    partitionKeys,
    primaryKeys,
    options,
    timeMillis: args.now ?? Date.now(),
  };
  if (args.comment !== undefined) schema.comment = args.comment;
  if (args.tableUuid !== undefined) schema.tableUuid = args.tableUuid;
  return schema;
}

/**
 * The key columns exist and are listed once each; no floating-point primary key; on a
 * primary-key table every partition key is part of the primary key; no BYTES partition key.
 */
function checkKeyColumns(fields: DataField[], primaryKeys: string[], partitionKeys: string[]): void {
  const columns = fields.map((f) => f.name).join(', ');
  const find = (name: string, role: string) => {
    const f = fields.find((x) => x.name === name);
    if (f) return f;
    const near = fields.find((x) => x.name.toLowerCase() === name.toLowerCase());
    throw new SchemaError(
      `${role} column "${name}" is not in the schema; ${near ? `did you mean "${near.name}"? ` : ''}the columns are ${columns}`,
      name,
    );
  };
  const appendOnly = primaryKeys.length === 0;
  checkDistinct(primaryKeys, 'primary key');
  checkDistinct(partitionKeys, 'partition key');
  for (const k of primaryKeys) {
    const f = find(k, 'primary key');
    if (f.type.root === 'FLOAT' || f.type.root === 'DOUBLE') {
      throw new SchemaError(
        `primary key column "${k}" is ${f.type.root}: floating-point keys match by bits, not by value (0.1 + 0.2 is another key than 0.3, -0.0 another than 0.0), ` +
          'and Iceberg forbids float and double identifier fields; use DECIMAL(p,s) or an integer type for the key',
        k,
      );
    }
  }
  for (const k of partitionKeys) {
    const f = find(k, 'partition key');
    if (!appendOnly && !primaryKeys.includes(k)) {
      throw new SchemaError(
        `partition key "${k}" is not part of the primary key (${primaryKeys.join(', ')}): each key must map to exactly one partition, ` +
          `otherwise an update that changes "${k}" would leave the old version alive in another partition; add "${k}" to the primary key`,
        k,
      );
    }
    if (f.type.root === 'BYTES') {
      throw new SchemaError(
        `partition key "${k}" is BYTES, which has no readable text for a partition path; use a STRING, number or DATE column`,
        k,
      );
    }
  }
}

function checkFieldList(fields: DataField[]): void {
  const ids = new Set<number>();
  const names = new Set<string>();
  for (const f of fields) {
    if (!Number.isInteger(f.id) || f.id < 0)
      throw new SchemaError(`column "${f.name}" has field id ${f.id}; ids are integers ≥ 0`, f.name);
    if (ids.has(f.id))
      throw new SchemaError(
        `field id ${f.id} is used twice (column "${f.name}"); ids identify columns and must be unique`,
        f.name,
      );
    if (names.has(f.name.toLowerCase()))
      throw new SchemaError(
        `duplicate column "${f.name}" (names are compared case-insensitively); give each column a distinct name`,
        f.name,
      );
    ids.add(f.id);
    names.add(f.name.toLowerCase());
  }
}

function checkDistinct(list: string[], role: string): void {
  const seen = new Set<string>();
  for (const k of list) {
    if (seen.has(k)) throw new SchemaError(`${role} lists column "${k}" twice; name each column once`, k);
    seen.add(k);
  }
}

function checkBucketKey(bucketKey: string[], primaryKeys: string[], partitionKeys: string[]): void {
  if (bucketKey.length === 0) return;
  checkDistinct(bucketKey, 'bucket-key');
  const allowed = primaryKeys.filter((k) => !partitionKeys.includes(k));
  for (const k of bucketKey) {
    if (!allowed.includes(k)) {
      throw new OptionError(
        `bucket-key column "${k}" is not in the primary key minus the partition keys (${allowed.join(', ') || 'nothing'}): ` +
          'all versions of a key must hash to the same bucket, so the bucket key may only use key columns',
        'bucket-key',
      );
    }
  }
}

/** Options that only mean something for a primary key: refused on an append table, with the reason. */
const KEY_ONLY_OPTIONS: Readonly<Record<string, string>> = {
  'merge-engine': 'an append table keeps every row as written; there are no versions of a key to merge',
  'sequence.field': 'an append table has no versions of a key to order',
  'sequence.field.sort-order': 'an append table has no versions of a key to order',
  'ignore-delete': 'an append table accepts inserts only; remove rows with `varve delete --where`',
  'partial-update.remove-record-on-delete': 'an append table has no merge engine',
  'partial-update.remove-record-on-sequence-group': 'an append table has no merge engine',
  'aggregation.remove-record-on-delete': 'an append table has no merge engine',
  'fields.default-aggregate-function': 'an append table has no merge engine',
  'changelog-producer':
    'the changelog of an append table is its rows as written (every row is an insert); a stream reads them with changelog-producer none',
  'changelog-producer.row-deduplicate': 'an append table has no changelog producer',
  'deletion-vectors.enabled':
    'every row of an append table is live, so there is nothing to mark deleted; reads already need no merge',
};

/**
 * The options of an append table (no primary key): no merge or changelog options, and a bucket
 * mode that needs no key: `bucket = -1` (unaware: rows go to bucket 0, any number of files), or a
 * fixed count hashed on an explicit `bucket-key` of non-partition columns.
 */
function checkAppendOnlyOptions(
  opts: TableOptions,
  raw: Record<string, string>,
  partitionKeys: string[],
  names: string[],
): void {
  for (const key of Object.keys(raw)) {
    const reason =
      KEY_ONLY_OPTIONS[key] ??
      (/^fields\..+\.(aggregate-function|ignore-retract|list-agg-delimiter|sequence-group)$/.test(key)
        ? 'an append table has no merge engine'
        : undefined);
    if (reason === undefined) continue;
    if (key === 'changelog-producer' && raw[key].trim() === 'none') continue;
    throw new OptionError(
      `option ${key} is set on a table without a primary key: ${reason}; remove the option, or give the table a primary key (--primary-key)`,
      key,
    );
  }
  const bucketKey = opts.bucketKey;
  if (opts.bucket === -1) {
    if (bucketKey.length > 0) {
      throw new OptionError(
        'bucket-key is set on a bucket-unaware table (bucket = -1), which has no buckets to hash into; set bucket to a number ≥ 1 as well, or remove bucket-key',
        'bucket-key',
      );
    }
    return;
  }
  if (bucketKey.length === 0) {
    throw new OptionError(
      `bucket = ${opts.bucket} on a table without a primary key needs bucket-key, the columns whose hash picks a row's bucket (e.g. --option bucket-key=${names.find((n) => !partitionKeys.includes(n)) ?? names[0]}); or use bucket = -1 (bucket-unaware)`,
      'bucket-key',
    );
  }
  checkDistinct(bucketKey, 'bucket-key');
  for (const k of bucketKey) {
    if (!names.includes(k))
      throw new OptionError(
        `bucket-key column "${k}" is not in the schema; the columns are ${names.join(', ')}`,
        'bucket-key',
      );
    if (partitionKeys.includes(k)) {
      throw new OptionError(
        `bucket-key column "${k}" is a partition key, constant within a partition, so every row of a partition would share one bucket; use other columns`,
        'bucket-key',
      );
    }
  }
}

/** Aggregate functions apply to value columns only; each value column's effective function must fit its type. */
function checkKeyOptions(opts: TableOptions, fields: DataField[], primaryKeys: string[]): void {
  for (const col of Object.keys(opts.aggregateFunctions())) {
    if (primaryKeys.includes(col)) {
      throw new OptionError(
        `fields.${col}.aggregate-function is set on primary key column ${col}; key columns identify the row and are never aggregated; remove the option`,
        `fields.${col}.aggregate-function`,
      );
    }
  }
  const fallback = opts.fieldsDefaultAggregateFunction;
  if (opts.mergeEngine !== 'aggregation' || fallback === undefined) return;
  const sequence = new Set(opts.sequenceField);
  for (const f of fields) {
    if (primaryKeys.includes(f.name) || sequence.has(f.name) || opts.aggregateFunction(f.name) !== undefined) continue;
    checkAggregateFit(fallback, f, 'fields.default-aggregate-function');
  }
}

/** The JSON text of a schema file (types as text, e.g. `"DECIMAL(10,2) NOT NULL"`). */
export function serializeSchema(s: TableSchema): string {
  const doc = {
    version: s.version,
    id: s.id,
    fields: s.fields.map((f) =>
      f.description === undefined
        ? { id: f.id, name: f.name, type: formatType(f.type) }
        : { id: f.id, name: f.name, type: formatType(f.type), description: f.description },
    ),
    highestFieldId: s.highestFieldId,
    partitionKeys: s.partitionKeys,
    primaryKeys: s.primaryKeys,
    options: s.options,
    ...(s.comment === undefined ? {} : { comment: s.comment }),
    timeMillis: s.timeMillis,
    ...(s.tableUuid === undefined ? {} : { tableUuid: s.tableUuid }),
  };
  return JSON.stringify(doc, null, 2);
}

/**
 * Parses a schema file (`file`: its location, for errors); throws CorruptMetadataError when it is not
 * a well-formed, self-consistent schema.
 */
export function deserializeSchema(text: string, file = 'schema file'): TableSchema {
  const d = parseJsonFile(text, jsonObject, file);
  const bad = (what: string): never => {
    throw new CorruptMetadataError(
      `${file} is malformed: ${what}; the file is damaged or was not written by varve, restore it from a backup`,
      { file },
    );
  };
  if (d.version !== 1) bad(`unsupported version ${JSON.stringify(d.version)} (this varve reads version 1)`);
  const isId = (v: unknown) => Number.isInteger(v) && (v as number) >= 0;
  if (!isId(d.id)) bad('"id" must be an integer ≥ 0');
  if (!Array.isArray(d.fields) || d.fields.length === 0) bad('"fields" must be a non-empty array');
  const fields = (d.fields as unknown[]).map((raw, i): DataField => {
    if (raw === null || typeof raw !== 'object') return bad(`field ${i} is not an object`);
    const f = raw as Record<string, unknown>;
    if (!isId(f.id) || typeof f.name !== 'string' || typeof f.type !== 'string')
      return bad(`field ${i} needs an integer "id", a "name" and a "type" string`);
    if (f.description !== undefined && typeof f.description !== 'string')
      bad(`field ${f.name}: "description" must be a string`);
    let type;
    try {
      type = parseTypeText(f.type, `schema field ${f.name}`).type;
    } catch (e) {
      throw new CorruptMetadataError(
        `${file} is malformed: field ${f.name} has type "${f.type}": ${(e as Error).message}`,
        { cause: e, file },
      );
    }
    const field: DataField = { id: f.id as number, name: f.name, type };
    if (f.description !== undefined) field.description = f.description as string;
    return field;
  });
  if (!isId(d.highestFieldId) || (d.highestFieldId as number) < Math.max(...fields.map((f) => f.id)))
    bad('"highestFieldId" must be ≥ every field id');
  const names = new Set(fields.map((f) => f.name));
  if (names.size !== fields.length || new Set(fields.map((f) => f.id)).size !== fields.length)
    bad('field names and ids must be unique');
  const keyList = (k: string): string[] => {
    const v = d[k];
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'string' || !names.has(x)))
      return bad(`"${k}" must be an array of column names`);
    return v as string[];
  };
  const partitionKeys = keyList('partitionKeys');
  const primaryKeys = keyList('primaryKeys');
  const options = d.options;
  if (
    options === null ||
    typeof options !== 'object' ||
    Array.isArray(options) ||
    Object.values(options).some((v) => typeof v !== 'string')
  ) {
    bad('"options" must be an object of strings');
  }
  if (d.comment !== undefined && typeof d.comment !== 'string') bad('"comment" must be a string');
  if (typeof d.timeMillis !== 'number' || !Number.isFinite(d.timeMillis)) bad('"timeMillis" must be a number');
  const schema: TableSchema = {
    version: 1,
    id: d.id as number,
    fields,
    highestFieldId: d.highestFieldId as number,
    partitionKeys,
    primaryKeys,
    options: { ...(options as Record<string, string>) },
    timeMillis: d.timeMillis as number,
  };
  if (d.comment !== undefined) schema.comment = d.comment as string;
  if (d.tableUuid !== undefined) {
    if (typeof d.tableUuid !== 'string' || d.tableUuid === '') bad('"tableUuid" must be a non-empty string');
    schema.tableUuid = d.tableUuid as string;
  }
  return schema;
}
