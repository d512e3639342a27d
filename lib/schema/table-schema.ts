/**
 * Table schemas: building one from columns, keys and options (with every cross-check a table
 * needs to stay consistent forever, since keys and buckets are immutable), and the JSON of
 * `schema/schema-<id>` (types written as text, like Paimon's SchemaSerializer).
 */
import { CorruptMetadataError, OptionError, SchemaError } from '../errors.js';
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
}

/**
 * A validated TableSchema: keys exist and are distinct, the primary key covers the partition keys,
 * key columns become NOT NULL, options are valid for these columns, the bucket key is part of the
 * primary key minus partition keys. Throws SchemaError or OptionError naming the problem.
 */
export function createTableSchema(args: CreateTableSchemaArgs): TableSchema {
  const primaryKeys = [...(args.primaryKeys ?? [])];
  const partitionKeys = [...(args.partitionKeys ?? [])];
  const options = { ...(args.options ?? {}) };
  if (args.fields.length === 0) throw new SchemaError('empty schema: a table needs at least one column');
  checkFieldList(args.fields);
  const names = args.fields.map((f) => f.name);
  const columns = names.join(', ');
  const find = (name: string, role: string) => {
    const f = args.fields.find((x) => x.name === name);
    if (f) return f;
    const near = args.fields.find((x) => x.name.toLowerCase() === name.toLowerCase());
    throw new SchemaError(
      `${role} column "${name}" is not in the schema; ${near ? `did you mean "${near.name}"? ` : ''}the columns are ${columns}`,
      name,
    );
  };
  if (primaryKeys.length === 0) {
    throw new SchemaError(`no primary key: varve tables are primary-key tables; name the key columns (e.g. --primary-key ${names[0]}); the columns are ${columns}`);
  }
  checkDistinct(primaryKeys, 'primary key');
  checkDistinct(partitionKeys, 'partition key');
  primaryKeys.forEach((k) => find(k, 'primary key'));
  for (const k of partitionKeys) {
    const f = find(k, 'partition key');
    if (!primaryKeys.includes(k)) {
      throw new SchemaError(
        `partition key "${k}" is not part of the primary key (${primaryKeys.join(', ')}): each key must map to exactly one partition, ` +
          `otherwise an update that changes "${k}" would leave the old version alive in another partition; add "${k}" to the primary key`,
        k,
      );
    }
    if (f.type.root === 'BYTES') {
      throw new SchemaError(`partition key "${k}" is BYTES, which has no readable text for a partition path; use a STRING, number or DATE column`, k);
    }
  }
  // Key columns are implicitly NOT NULL: a null key has no place in the key order.
  const fields = args.fields.map((f) => (primaryKeys.includes(f.name) && f.type.nullable ? { ...f, type: { ...f.type, nullable: false } } : { ...f, type: { ...f.type } }));
  const opts = new TableOptions(options, fields);
  checkBucketKey(opts.bucketKey, primaryKeys, partitionKeys);
  checkKeyOptions(opts, fields, primaryKeys);
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
  return schema;
}

function checkFieldList(fields: DataField[]): void {
  const ids = new Set<number>();
  const names = new Set<string>();
  for (const f of fields) {
    if (!Number.isInteger(f.id) || f.id < 0) throw new SchemaError(`column "${f.name}" has field id ${f.id}; ids are integers ≥ 0`, f.name);
    if (ids.has(f.id)) throw new SchemaError(`field id ${f.id} is used twice (column "${f.name}"); ids identify columns and must be unique`, f.name);
    if (names.has(f.name.toLowerCase())) throw new SchemaError(`duplicate column "${f.name}" (names are compared case-insensitively); give each column a distinct name`, f.name);
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
    fields: s.fields.map((f) => (f.description === undefined ? { id: f.id, name: f.name, type: formatType(f.type) } : { id: f.id, name: f.name, type: formatType(f.type), description: f.description })),
    highestFieldId: s.highestFieldId,
    partitionKeys: s.partitionKeys,
    primaryKeys: s.primaryKeys,
    options: s.options,
    ...(s.comment === undefined ? {} : { comment: s.comment }),
    timeMillis: s.timeMillis,
  };
  return JSON.stringify(doc, null, 2);
}

/** Parses a schema file; throws CorruptMetadataError when it is not a well-formed, self-consistent schema. */
export function deserializeSchema(text: string): TableSchema {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new CorruptMetadataError(`schema file is not JSON (${(e as Error).message})`, { cause: e });
  }
  const bad = (what: string): never => {
    throw new CorruptMetadataError(`schema file is malformed: ${what}`);
  };
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) bad('expected a JSON object');
  const d = doc as Record<string, unknown>;
  if (d.version !== 1) bad(`unsupported version ${JSON.stringify(d.version)} (this varve reads version 1)`);
  const isId = (v: unknown) => Number.isInteger(v) && (v as number) >= 0;
  if (!isId(d.id)) bad('"id" must be an integer ≥ 0');
  if (!Array.isArray(d.fields) || d.fields.length === 0) bad('"fields" must be a non-empty array');
  const fields = (d.fields as unknown[]).map((raw, i): DataField => {
    if (raw === null || typeof raw !== 'object') return bad(`field ${i} is not an object`);
    const f = raw as Record<string, unknown>;
    if (!isId(f.id) || typeof f.name !== 'string' || typeof f.type !== 'string') return bad(`field ${i} needs an integer "id", a "name" and a "type" string`);
    if (f.description !== undefined && typeof f.description !== 'string') bad(`field ${f.name}: "description" must be a string`);
    let type;
    try {
      type = parseTypeText(f.type, `schema field ${f.name}`).type;
    } catch (e) {
      throw new CorruptMetadataError(`schema file is malformed: field ${f.name} has type "${f.type}": ${(e as Error).message}`, { cause: e });
    }
    const field: DataField = { id: f.id as number, name: f.name, type };
    if (f.description !== undefined) field.description = f.description as string;
    return field;
  });
  if (!isId(d.highestFieldId) || (d.highestFieldId as number) < Math.max(...fields.map((f) => f.id))) bad('"highestFieldId" must be ≥ every field id');
  const names = new Set(fields.map((f) => f.name));
  if (names.size !== fields.length || new Set(fields.map((f) => f.id)).size !== fields.length) bad('field names and ids must be unique');
  const keyList = (k: string): string[] => {
    const v = d[k];
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'string' || !names.has(x))) return bad(`"${k}" must be an array of column names`);
    return v as string[];
  };
  const partitionKeys = keyList('partitionKeys');
  const primaryKeys = keyList('primaryKeys');
  const options = d.options;
  if (options === null || typeof options !== 'object' || Array.isArray(options) || Object.values(options).some((v) => typeof v !== 'string')) {
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
  return schema;
}
