/**
 * Schemas as users write them: the SQL-like column list (`id BIGINT NOT NULL, name STRING`), the
 * JSON form (`[{"name": "id", "type": "BIGINT NOT NULL"}]`), its printer, and table names
 * (`db.table`). Table schemas themselves (validation, files) live in table-schema.ts.
 */
import { InvalidArgumentError, SchemaError } from '../errors.js';
import { parseJsonText } from '../json.js';
import { describeToken, tokenize } from './sql-lexer.js';
import { formatType, parseConstraintsAt, parseTypeAt, parseTypeText, TokenCursor } from './type-text.js';
import { KIND_COLUMN, SEQUENCE_COLUMN, type DataField } from './types.js';

export { formatType, parseTypeText };
export { createTableSchema, deserializeSchema, serializeSchema, type CreateTableSchemaArgs } from './table-schema.js';

const SCHEMA_EXAMPLE = '"order_id BIGINT NOT NULL, status STRING, amount DECIMAL(10,2)"';
/** Column names that data files use for their own columns. */
const RESERVED_NAMES = new Set([SEQUENCE_COLUMN, KIND_COLUMN]);
/** The field of a JSONL record that carries its row kind (lib/table/record-columns.ts): a column of that name could not be written. */
const INPUT_KIND_FIELD = '_kind';
/** Prefix Paimon gives to key copies in data files; kept free so the layout can use it too. */
const RESERVED_PREFIX = '_KEY_';
const PLAIN_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_$]*$/;
const KEYWORDS = new Set(['NOT', 'NULL', 'COMMENT']);

/** Parses `order_id BIGINT NOT NULL, status STRING COMMENT 'x', …` into fields with ids 0, 1, 2, … */
export function parseSchemaText(text: string): DataField[] {
  const what = 'schema text';
  const c = new TokenCursor(tokenize(text, what), what);
  if (c.peek().kind === 'end') {
    throw new SchemaError(`empty schema: declare at least one column, e.g. ${SCHEMA_EXAMPLE}`);
  }
  const fields: DataField[] = [];
  const seen = new Map<string, string>();
  for (;;) {
    c.column = undefined;
    const nameToken = c.peek();
    if (nameToken.kind !== 'word' && nameToken.kind !== 'quoted') {
      throw c.error(
        nameToken,
        `expected a column name, found ${describeToken(nameToken)}; write columns like ${SCHEMA_EXAMPLE}`,
      );
    }
    c.next();
    c.column = nameToken.text;
    checkColumnName(nameToken.text, `${what}, position ${nameToken.pos + 1}`);
    const first = seen.get(nameToken.text.toLowerCase());
    if (first !== undefined) throw c.error(nameToken, duplicateMessage(nameToken.text, first));
    seen.set(nameToken.text.toLowerCase(), nameToken.text);
    if (c.peek().kind === ',' || c.peek().kind === 'end') {
      throw c.error(c.peek(), `column "${nameToken.text}" has no type; write it like "${nameToken.text} BIGINT"`);
    }
    const type = parseTypeAt(c);
    const { nullable, comment } = parseConstraintsAt(c);
    if (nullable === false) type.nullable = false;
    const field: DataField = { id: fields.length, name: nameToken.text, type };
    if (comment !== undefined) field.description = comment;
    fields.push(field);
    const sep = c.peek();
    if (sep.kind === 'end') break;
    if (sep.kind !== ',') {
      throw c.error(
        sep,
        `unexpected ${describeToken(sep)}; after a column's type come only NOT NULL, NULL, COMMENT '…' or a comma`,
      );
    }
    c.next();
  }
  return fields;
}

/**
 * Parses the JSON form: an array of `{"name", "type", "description"?}` (the type written in the same
 * grammar, e.g. `"DECIMAL(10,2) NOT NULL"`), or an object `{"fields": [...]}`. Accepts the JSON text
 * or the already parsed value.
 */
export function parseSchemaJson(json: string | unknown): DataField[] {
  let value: unknown = json;
  if (typeof json === 'string') {
    try {
      value = parseJsonText(json);
    } catch (e) {
      throw new SchemaError(
        `schema JSON is malformed (${(e as Error).message}); write [{"name": "id", "type": "BIGINT NOT NULL"}, …]`,
      );
    }
  }
  if (value !== null && typeof value === 'object' && !Array.isArray(value) && 'fields' in value) {
    value = (value as { fields: unknown }).fields;
  }
  if (!Array.isArray(value)) {
    throw new SchemaError(
      'schema JSON must be an array of columns (or {"fields": [...]}), e.g. [{"name": "id", "type": "BIGINT NOT NULL"}]',
    );
  }
  if (value.length === 0)
    throw new SchemaError(
      `empty schema: declare at least one column, e.g. [{"name": "id", "type": "BIGINT NOT NULL"}]`,
    );
  const fields = value.map((entry, i): DataField => {
    const where = `schema JSON, column ${i + 1}`;
    if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) {
      throw new SchemaError(`${where}: expected an object {"name": …, "type": …}, found ${JSON.stringify(entry)}`);
    }
    const e = entry as Record<string, unknown>;
    if (typeof e.name !== 'string')
      throw new SchemaError(`${where}: "name" must be a string, found ${JSON.stringify(e.name)}`);
    if (typeof e.type !== 'string') {
      throw new SchemaError(
        `${where} ("${e.name}"): "type" must be a type string like "BIGINT NOT NULL", found ${JSON.stringify(e.type)}`,
        e.name,
      );
    }
    checkColumnName(e.name, where);
    const { type, comment } = parseTypeText(e.type, `${where} ("${e.name}"), type "${e.type}"`, e.name);
    if (e.nullable !== undefined) {
      if (typeof e.nullable !== 'boolean')
        throw new SchemaError(`${where} ("${e.name}"): "nullable" must be true or false`, e.name);
      if (e.nullable && !type.nullable)
        throw new SchemaError(
          `${where} ("${e.name}"): "nullable": true contradicts NOT NULL in the type; keep one`,
          e.name,
        );
      type.nullable = e.nullable;
    }
    const description = e.description ?? e.comment ?? comment;
    if (description !== undefined && typeof description !== 'string') {
      throw new SchemaError(`${where} ("${e.name}"): "description" must be a string`, e.name);
    }
    const field: DataField = { id: i, name: e.name, type };
    if (description !== undefined) field.description = description;
    return field;
  });
  checkDuplicates(fields);
  return fields;
}

/** The schema text of `fields`: names quoted where needed, comments kept; parseSchemaText reads it back. */
export function formatSchemaText(fields: DataField[]): string {
  return fields
    .map((f) => {
      const comment = f.description !== undefined ? ` COMMENT '${f.description.replaceAll("'", "''")}'` : '';
      return `${quoteIdentifier(f.name)} ${formatType(f.type)}${comment}`;
    })
    .join(', ');
}

/** A column name as schema text: bare when it is a plain identifier, else in backticks. */
function quoteIdentifier(name: string): string {
  if (PLAIN_IDENTIFIER.test(name) && !KEYWORDS.has(name.toUpperCase())) return name;
  return '`' + name.replaceAll('`', '``') + '`';
}

/** Throws SchemaError for names a column cannot have: empty, control characters, system column names. */
export function checkColumnName(name: string, where: string): void {
  if (name.length === 0) throw new SchemaError(`${where}: a column name cannot be empty`);
  if (/\p{Cc}/u.test(name))
    throw new SchemaError(
      `${where}: column name ${JSON.stringify(name)} contains a control character; rename it`,
      name,
    );
  if (RESERVED_NAMES.has(name) || name.startsWith(RESERVED_PREFIX)) {
    throw new SchemaError(
      `${where}: column name "${name}" is reserved for data files' system columns (${[...RESERVED_NAMES].join(', ')}, ${RESERVED_PREFIX}*); rename it`,
      name,
    );
  }
  if (name === INPUT_KIND_FIELD) {
    throw new SchemaError(
      `${where}: column name "${name}" is reserved: a JSONL record's "${name}" field is its row kind (+I, -U, +U, -D), so the column could never be written; rename it`,
      name,
    );
  }
}

function checkDuplicates(fields: DataField[]): void {
  const seen = new Map<string, string>();
  for (const f of fields) {
    const first = seen.get(f.name.toLowerCase());
    if (first !== undefined) throw new SchemaError(duplicateMessage(f.name, first), f.name);
    seen.set(f.name.toLowerCase(), f.name);
  }
}

function duplicateMessage(name: string, first: string): string {
  const same = first !== name ? ` (same as "${first}": column names are compared case-insensitively)` : '';
  return `duplicate column "${name}"${same}; give each column a distinct name`;
}

const NAME_PART = /^[A-Za-z0-9_][A-Za-z0-9_-]{0,127}$/;
const NAME_RULE =
  'a table name is "table" or "database.table", each part 1-128 characters of letters, digits, "_" and "-" (not starting with "-"), e.g. "sales.orders"';

/** Splits `db.table` (a bare `table` is in database `default`); throws InvalidArgumentError for unsafe names. */
export function parseTableIdentifier(name: string): { database: string; table: string } {
  if (typeof name !== 'string' || name.length === 0) throw new InvalidArgumentError(`empty table name; ${NAME_RULE}`);
  if (/[/\\]/.test(name))
    throw new InvalidArgumentError(`table name "${name}" contains a path separator; ${NAME_RULE}`);
  if (name.includes('..')) throw new InvalidArgumentError(`table name "${name}" contains ".."; ${NAME_RULE}`);
  const parts = name.split('.');
  if (parts.length > 2) {
    throw new InvalidArgumentError(`table name "${name}" has ${parts.length - 1} dots; ${NAME_RULE}`);
  }
  for (const p of parts) {
    if (!NAME_PART.test(p)) {
      const why =
        p.length === 0
          ? 'has an empty part'
          : /\s/.test(p)
            ? 'contains whitespace'
            : p.length > 128
              ? 'has a part longer than 128 characters'
              : `has an invalid part "${p}"`;
      throw new InvalidArgumentError(`table name "${name}" ${why}; ${NAME_RULE}`);
    }
  }
  return parts.length === 1 ? { database: 'default', table: parts[0] } : { database: parts[0], table: parts[1] };
}
