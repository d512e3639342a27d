/**
 * Schema evolution by field id (Paimon's SchemaChange / SchemaManager.commitChanges): a list of
 * changes applied to one schema gives the next schema (id + 1). Columns are identified by their
 * field id, never by name, so a data file written under any older schema is read through the new
 * one: renamed columns by id, dropped columns ignored, added columns null, widened types cast.
 * Only changes every old file can be read through are allowed.
 */
import { OptionError, SchemaError } from '../errors.js';
import { FIXED_FIELD_OPTIONS, FIXED_OPTIONS } from './option-catalog.js';
import { OPTION_BY_KEY, matchColumnFormOption, matchFieldOption } from './option-parse.js';
import { checkColumnName, createTableSchema, formatType, parseTypeText } from './parse.js';
import type { DataField, DataType, TableSchema, TypeRoot } from './types.js';

/** One change of `varve alter` / `alterTable`. */
export type SchemaChange =
  | { kind: 'add-column'; name: string; type: DataType; description?: string; after?: string; first?: boolean }
  | { kind: 'rename-column'; from: string; to: string }
  | { kind: 'drop-column'; name: string }
  | { kind: 'update-column-type'; name: string; type: DataType }
  | { kind: 'set-option'; key: string; value: string }
  | { kind: 'reset-option'; key: string }
  | { kind: 'update-comment'; comment: string | undefined };

/** Why `key` cannot be set or reset by `alter`, or undefined when it can. */
function fixedOptionReason(key: string): string | undefined {
  if (FIXED_OPTIONS[key] !== undefined) return FIXED_OPTIONS[key];
  const field = matchFieldOption(key);
  if (field) return FIXED_FIELD_OPTIONS[field.decl.suffix];
  return undefined;
}

const INTEGER_WIDTH: Partial<Record<TypeRoot, number>> = { TINYINT: 1, SMALLINT: 2, INT: 4, BIGINT: 8 };

/**
 * Undefined when a column stored as `from` can be read as `to` without losing a value (integer
 * widening, FLOAT → DOUBLE, DECIMAL precision up at the same scale, NOT NULL → nullable);
 * otherwise why not.
 */
export function wideningProblem(from: DataType, to: DataType): string | undefined {
  if (!from.nullable && to.nullable) return wideningProblem({ ...from, nullable: true }, to);
  if (from.nullable && !to.nullable) return 'a nullable column cannot become NOT NULL (old rows may hold nulls)';
  if (from.root === to.root) {
    if (from.root === 'DECIMAL') {
      if ((to.scale ?? 0) !== (from.scale ?? 0))
        return 'a DECIMAL keeps its scale (changing it would rescale every stored value)';
      if ((to.precision ?? 10) < (from.precision ?? 10)) return 'DECIMAL precision can only grow';
      return undefined;
    }
    if (from.root === 'TIMESTAMP' && from.precision !== to.precision)
      return 'TIMESTAMP precision cannot change (stored values are in the old unit)';
    return undefined;
  }
  const a = INTEGER_WIDTH[from.root];
  const b = INTEGER_WIDTH[to.root];
  if (a !== undefined && b !== undefined)
    return b > a ? undefined : 'an integer column can only widen (TINYINT → SMALLINT → INT → BIGINT)';
  if (from.root === 'FLOAT' && to.root === 'DOUBLE') return undefined;
  return `only safe widenings are allowed: TINYINT → SMALLINT → INT → BIGINT, FLOAT → DOUBLE, DECIMAL(p,s) → DECIMAL(p',s) with p' > p, VARCHAR(n) → VARCHAR(m) (stored as STRING)`;
}

/** Parses the `"name TYPE [AFTER col | FIRST]"` text of `alter --add`. */
export function parseAddColumn(text: string): Extract<SchemaChange, { kind: 'add-column' }> {
  const m = /^\s*(`[^`]+`|\S+)\s+(.+?)\s*$/s.exec(text);
  if (!m)
    throw new SchemaError(
      `--add "${text}" must look like "name TYPE", e.g. --add "discount DECIMAL(10,2)" or --add "note STRING AFTER id"`,
    );
  const name = m[1].startsWith('`') ? m[1].slice(1, -1) : m[1];
  let rest = m[2];
  let after: string | undefined;
  let first = false;
  const afterMatch = /\s+AFTER\s+(`[^`]+`|\S+)$/i.exec(rest);
  if (afterMatch) {
    after = afterMatch[1].startsWith('`') ? afterMatch[1].slice(1, -1) : afterMatch[1];
    rest = rest.slice(0, afterMatch.index);
  } else if (/\s+FIRST$/i.test(rest)) {
    first = true;
    rest = rest.replace(/\s+FIRST$/i, '');
  }
  const { type, comment } = parseTypeText(rest, `--add "${text}"`, name);
  return {
    kind: 'add-column',
    name,
    type,
    ...(comment !== undefined ? { description: comment } : {}),
    ...(after !== undefined ? { after } : {}),
    ...(first ? { first } : {}),
  };
}

/** Parses `"name NEWTYPE"` of `alter --type`. */
export function parseTypeChange(text: string): Extract<SchemaChange, { kind: 'update-column-type' }> {
  const m = /^\s*(`[^`]+`|\S+)\s+(.+?)\s*$/s.exec(text);
  if (!m) throw new SchemaError(`--type "${text}" must look like "name NEWTYPE", e.g. --type "qty BIGINT"`);
  const name = m[1].startsWith('`') ? m[1].slice(1, -1) : m[1];
  return { kind: 'update-column-type', name, type: parseTypeText(m[2], `--type "${text}"`, name).type };
}

/**
 * The schema after `changes` (applied in order), with id `schema.id + 1`. Throws SchemaError or
 * OptionError naming what cannot change and why; the result passes every check of a new table.
 */
export function applySchemaChanges(
  schema: TableSchema,
  changes: readonly SchemaChange[],
  now = Date.now(),
): TableSchema {
  if (changes.length === 0)
    throw new SchemaError('no change given; pass --add, --rename, --drop, --type, --set, --reset or --comment');
  // The bucket key of an append table hashes stored rows like a key (docs/BUCKETING.md): its type and presence are fixed too.
  const bucketKey =
    schema.primaryKeys.length === 0 ? (schema.options['bucket-key'] ?? '').split(',').map((k) => k.trim()) : [];
  const draft: SchemaDraft = {
    fields: schema.fields.map((f) => ({ ...f, type: { ...f.type } })),
    options: { ...schema.options },
    comment: schema.comment,
    highest: schema.highestFieldId,
    isKey: (name) =>
      schema.primaryKeys.includes(name) || schema.partitionKeys.includes(name) || bucketKey.includes(name),
  };
  for (const c of changes) applyChange(draft, c);
  checkBucketMode(schema, draft.options);
  checkIcebergFormatVersion(schema, draft.options);
  // Every rule of a new table holds for the evolved one (options valid for these columns, …).
  const next = createTableSchema({
    fields: draft.fields,
    primaryKeys: schema.primaryKeys,
    partitionKeys: schema.partitionKeys,
    options: draft.options,
    comment: draft.comment,
    id: schema.id + 1,
    now,
    tableUuid: schema.tableUuid,
  });
  next.highestFieldId = Math.max(draft.highest, next.highestFieldId);
  return next;
}

/** The schema being changed: each change edits it in place (its fields are copies). */
interface SchemaDraft {
  fields: DataField[];
  options: Record<string, string>;
  comment: string | undefined;
  /** The highest field id ever given, so that a new column never reuses a dropped one's. */
  highest: number;
  /** Whether `name` is a primary, partition or (append table) bucket key column. */
  isKey: (name: string) => boolean;
}

/** The draft's column `name`, or a SchemaError for `what` listing the columns. */
function columnOf(d: SchemaDraft, name: string, what: string): DataField {
  const f = d.fields.find((x) => x.name === name);
  if (f) return f;
  throw new SchemaError(
    `${what}: column "${name}" does not exist; the columns are ${d.fields.map((x) => x.name).join(', ')}`,
    name,
  );
}

function applyChange(d: SchemaDraft, c: SchemaChange): void {
  switch (c.kind) {
    case 'add-column':
      addColumn(d, c);
      break;
    case 'rename-column': {
      const f = columnOf(d, c.from, 'rename');
      checkColumnName(c.to, `rename ${c.from}`);
      if (d.isKey(c.from)) {
        throw new SchemaError(
          `rename ${c.from}: it is a primary or partition key column; key names are part of file metadata and partition paths, so they cannot change`,
          c.from,
        );
      }
      if (d.fields.some((x) => x !== f && x.name.toLowerCase() === c.to.toLowerCase()))
        throw new SchemaError(`rename ${c.from}: "${c.to}" already exists; pick another name`, c.to);
      d.options = renameInOptions(d.options, c.from, c.to);
      f.name = c.to;
      break;
    }
    case 'drop-column': {
      const f = columnOf(d, c.name, 'drop');
      if (d.isKey(c.name))
        throw new SchemaError(
          `drop ${c.name}: it is a primary or partition key column; key columns cannot be dropped`,
          c.name,
        );
      const user = optionsUsing(d.options, c.name);
      if (user !== undefined)
        throw new SchemaError(
          `drop ${c.name}: option ${user} uses it; a column the table's options name cannot be dropped`,
          c.name,
        );
      if (d.fields.length === 1) throw new SchemaError(`drop ${c.name}: it is the last column`, c.name);
      d.fields = d.fields.filter((x) => x !== f);
      // A Parquet writer option of the column only said how its pages were encoded: it goes with it.
      for (const key of Object.keys(d.options))
        if (matchColumnFormOption(key)?.column === c.name) delete d.options[key];
      break;
    }
    case 'update-column-type': {
      const f = columnOf(d, c.name, 'change type');
      if (d.isKey(c.name)) {
        throw new SchemaError(
          `change type of ${c.name}: it is a primary or partition key column; its type decides key order, hashing and paths, so it cannot change`,
          c.name,
        );
      }
      const problem = wideningProblem(f.type, c.type);
      if (problem !== undefined)
        throw new SchemaError(
          `change type of ${c.name} from ${formatType(f.type)} to ${formatType(c.type)}: ${problem}`,
          c.name,
        );
      f.type = { ...c.type };
      break;
    }
    case 'set-option':
    case 'reset-option':
      changeOption(d, c);
      break;
    case 'update-comment':
      d.comment = c.comment;
      break;
  }
}

function addColumn(d: SchemaDraft, c: Extract<SchemaChange, { kind: 'add-column' }>): void {
  checkColumnName(c.name, `add column ${c.name}`);
  if (d.fields.some((f) => f.name.toLowerCase() === c.name.toLowerCase()))
    throw new SchemaError(`add column: "${c.name}" already exists; pick another name`, c.name);
  if (!c.type.nullable) {
    throw new SchemaError(
      `add column ${c.name}: a new column must be nullable (the rows already stored have no value for it); drop NOT NULL`,
      c.name,
    );
  }
  const field: DataField = { id: ++d.highest, name: c.name, type: { ...c.type } };
  if (c.description !== undefined) field.description = c.description;
  if (c.first) d.fields = [field, ...d.fields];
  else if (c.after !== undefined) {
    const at = d.fields.indexOf(columnOf(d, c.after, `add column ${c.name} AFTER`));
    d.fields = [...d.fields.slice(0, at + 1), field, ...d.fields.slice(at + 1)];
  } else d.fields = [...d.fields, field];
}

function changeOption(d: SchemaDraft, c: Extract<SchemaChange, { kind: 'set-option' | 'reset-option' }>): void {
  const reason = fixedOptionReason(c.key);
  if (reason !== undefined)
    throw new OptionError(`option ${c.key} cannot change after the table is created: ${reason}`, c.key);
  if (c.kind === 'set-option') {
    d.options[c.key] = c.value;
    return;
  }
  if (
    !OPTION_BY_KEY.has(c.key) &&
    matchFieldOption(c.key) === undefined &&
    matchColumnFormOption(c.key) === undefined &&
    d.options[c.key] === undefined
  ) {
    throw new OptionError(`--reset ${c.key}: unknown table option; every option is listed in docs/OPTIONS.md`, c.key);
  }
  delete d.options[c.key];
}

/**
 * `bucket` may change (new partitions take the new count; `varve rescale` rewrites old ones), but
 * not between bucket-unaware and hashed: the stored rows of an unaware table have no bucket key.
 */
function checkBucketMode(schema: TableSchema, options: Record<string, string>): void {
  const unaware = (o: Record<string, string>) =>
    o.bucket === undefined ? schema.primaryKeys.length === 0 : o.bucket.trim() === '-1';
  if (unaware(schema.options) === unaware(options)) return;
  throw new OptionError(
    `option bucket cannot change between -1 (bucket-unaware) and a fixed count: ` +
      "the table's files were not written by a bucket key; create a new table and copy the rows (varve read | varve write)",
    'bucket',
  );
}

/**
 * `metadata.iceberg.format-version` only goes up (2 → 3): Iceberg has no downgrade, and a v2
 * export after v3 metadata would drop the row lineage v3 readers rely on (docs/ICEBERG.md).
 */
function checkIcebergFormatVersion(schema: TableSchema, options: Record<string, string>): void {
  const key = 'metadata.iceberg.format-version';
  const version = (o: Record<string, string>) => Number((o[key] ?? '2').trim());
  if (!(version(options) < version(schema.options))) return;
  throw new OptionError(
    `option ${key} cannot go from ${version(schema.options)} down to ${options[key] ?? 'its default 2'}: Iceberg format versions only go up; keep ${version(schema.options)}, or create a new table with ${key}=2 and copy the rows into it (varve read … | varve write …)`,
    key,
  );
}

/** The first option that names `column` (per-column keys, column lists), or undefined. */
function optionsUsing(options: Record<string, string>, column: string): string | undefined {
  for (const [key, value] of Object.entries(options)) {
    const field = matchFieldOption(key);
    if (
      field?.target
        .split(',')
        .map((s) => s.trim())
        .includes(column)
    )
      return key;
    if (
      field?.decl.columnList &&
      value
        .split(',')
        .map((s) => s.trim())
        .includes(column)
    )
      return key;
    if (
      (key === 'sequence.field' || key === 'bucket-key' || key === 'partial-update.remove-record-on-sequence-group') &&
      value
        .split(',')
        .map((s) => s.trim())
        .includes(column)
    )
      return key;
  }
  return undefined;
}

/** Options with `from` renamed to `to` wherever they name it. */
function renameInOptions(options: Record<string, string>, from: string, to: string): Record<string, string> {
  const swap = (list: string) =>
    list
      .split(',')
      .map((s) => (s.trim() === from ? to : s.trim()))
      .join(',');
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(options)) {
    const form = matchColumnFormOption(key);
    if (form) {
      out[form.column === from ? `${form.decl.key}#${to}` : key] = value;
      continue;
    }
    const field = matchFieldOption(key);
    if (field) {
      const target = field.decl.columnList ? swap(field.target) : field.target === from ? to : field.target;
      out[`fields.${target}.${field.decl.suffix}`] = field.decl.columnList ? swap(value) : value;
    } else if (
      key === 'sequence.field' ||
      key === 'bucket-key' ||
      key === 'partial-update.remove-record-on-sequence-group'
    ) {
      out[key] = swap(value);
    } else out[key] = value;
  }
  return out;
}
