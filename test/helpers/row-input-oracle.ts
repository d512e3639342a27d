/**
 * The row-object input path as it was before input was parsed into columns (lib/table/input.ts at
 * 6da8afd): each record JSON-parsed (or CSV-parsed), its kind split off, and validated into a row
 * object with validateRecord / coerceText. Kept only as the oracle the columnar parser is compared
 * with (test/table/record-columns.test.ts).
 */
import { parse as parseCsv } from 'csv-parse/sync';
import { RecordValidationError } from '../../lib/errors.js';
import { coerceText, validateRecord } from '../../lib/schema/values.js';
import {
  ROW_KIND_NAMES,
  RowKind,
  type DataField,
  type Row,
  type RowKindByte,
  type TableSchema,
} from '../../lib/schema/types.js';
import type { ParsedRecords } from '../../lib/table/input.js';

const KIND_FIELD = '_kind';

interface RawRecord {
  line: number;
  raw: string;
  values: Record<string, unknown>;
  text?: boolean;
  error?: string;
}

export function oracleParse(
  text: string,
  format: 'jsonl' | 'csv',
  schema: TableSchema,
  opts: { skipInvalid?: boolean; deletes?: boolean } = {},
): ParsedRecords {
  const keyFields = schema.fields.filter((f) => schema.primaryKeys.includes(f.name));
  const out: ParsedRecords = { rows: [], kinds: [], rejected: [] };
  for (const rec of format === 'csv' ? csvRecords(text) : jsonlRecords(text)) {
    try {
      if (rec.error) throw new RecordValidationError(`line ${rec.line}: ${rec.error}`, rec.line);
      const { kind, values } = splitKind(rec.values, rec.line, opts.deletes);
      if (kind !== RowKind.INSERT && schema.primaryKeys.length === 0) {
        throw new RecordValidationError(
          `line ${rec.line}: a ${ROW_KIND_NAMES[kind]} record, but the table has no primary key (an append table takes inserts only); remove rows with \`varve delete <table> --where ...\``,
          rec.line,
        );
      }
      const row =
        kind === RowKind.DELETE
          ? deleteRow(schema, keyFields, values, rec.line, rec.text)
          : rec.text
            ? validateText(schema, values as Record<string, string>, rec.line)
            : validateRecord(schema.fields, schema.primaryKeys, values, rec.line);
      out.rows.push(row);
      out.kinds.push(kind);
    } catch (e) {
      if (!(e instanceof RecordValidationError) || !opts.skipInvalid) throw e;
      out.rejected.push({ line: rec.line, reason: e.message, raw: rec.raw });
    }
  }
  return out;
}

function* jsonlRecords(text: string): Generator<RawRecord> {
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (!line) continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (e) {
      yield {
        line: i + 1,
        raw: line,
        values: {},
        error: `malformed JSON (${(e as Error).message}); each line must be one JSON object`,
      };
      continue;
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      yield {
        line: i + 1,
        raw: line,
        values: {},
        error: 'expected a JSON object per line, e.g. {"id": 1, "name": "a"}',
      };
      continue;
    }
    yield { line: i + 1, raw: line, values: value as Record<string, unknown> };
  }
}

function* csvRecords(text: string): Generator<RawRecord> {
  const records = parseCsv(text, {
    info: true,
    raw: true,
    skip_empty_lines: true,
    relax_column_count: false,
  }) as unknown as { record: string[]; info: { lines: number }; raw?: string }[];
  let header: string[] | undefined;
  for (const { record, info, raw } of records) {
    if (!header) {
      header = record.map((h) => h.trim());
      continue;
    }
    const values: Record<string, string> = {};
    header.forEach((h, i) => (values[h] = record[i]));
    yield { line: info.lines, raw: (raw ?? record.join(',')).replace(/\r?\n$/, ''), values, text: true };
  }
}

function splitKind(
  values: Record<string, unknown>,
  line: number,
  deletes?: boolean,
): { kind: RowKindByte; values: Record<string, unknown> } {
  if (!(KIND_FIELD in values)) return { kind: deletes ? RowKind.DELETE : RowKind.INSERT, values };
  const { [KIND_FIELD]: k, ...rest } = values;
  const idx = ROW_KIND_NAMES.indexOf(String(k) as never);
  if (idx < 0) {
    throw new RecordValidationError(
      `line ${line}, field "${KIND_FIELD}": ${JSON.stringify(k)} is not a row kind; use one of ${ROW_KIND_NAMES.join(', ')}`,
      line,
      KIND_FIELD,
    );
  }
  if (deletes && idx !== RowKind.DELETE) {
    throw new RecordValidationError(
      `line ${line}: \`delete\` only takes deletes, but the record has ${KIND_FIELD}=${String(k)}`,
      line,
      KIND_FIELD,
    );
  }
  return { kind: idx as RowKindByte, values: rest };
}

function validateText(schema: TableSchema, values: Record<string, string>, line: number): Row {
  checkColumns(schema, values, line);
  const row: Row = {};
  for (const f of schema.fields) {
    const text = values[f.name];
    if (text === undefined) {
      if (schema.primaryKeys.includes(f.name))
        throw new RecordValidationError(`line ${line}: primary key column "${f.name}" is missing`, line, f.name);
      if (!f.type.nullable)
        throw new RecordValidationError(`line ${line}: column "${f.name}" is NOT NULL but missing`, line, f.name);
      row[f.name] = null;
      continue;
    }
    row[f.name] = coerceText(f, text, line);
  }
  return row;
}

function deleteRow(
  schema: TableSchema,
  keyFields: DataField[],
  values: Record<string, unknown>,
  line: number,
  text?: boolean,
): Row {
  const row: Row = {};
  for (const f of keyFields) {
    if (values[f.name] === undefined || values[f.name] === null) {
      throw new RecordValidationError(
        `line ${line}: primary key column "${f.name}" is missing; a delete names the key of the row to delete`,
        line,
        f.name,
      );
    }
    row[f.name] = text
      ? coerceText(f, String(values[f.name]), line)
      : validateRecord([f], [f.name], { [f.name]: values[f.name] }, line)[f.name];
  }
  for (const f of schema.fields) {
    if (f.name in row) continue;
    const v = values[f.name];
    if (v === undefined || v === null) row[f.name] = f.type.nullable ? null : placeholder(f);
    else row[f.name] = text ? coerceText(f, String(v), line) : validateRecord([f], [], { [f.name]: v }, line)[f.name];
  }
  checkColumns(schema, values, line);
  return row;
}

function placeholder(f: DataField): Row[string] {
  switch (f.type.root) {
    case 'BOOLEAN':
      return false;
    case 'BIGINT':
    case 'TIMESTAMP':
      return 0n;
    case 'DECIMAL':
      return (0).toFixed(f.type.scale ?? 0);
    case 'STRING':
      return '';
    case 'BYTES':
      return new Uint8Array(0);
    default:
      return 0;
  }
}

function checkColumns(schema: TableSchema, values: Record<string, unknown>, line: number): void {
  for (const name of Object.keys(values)) {
    if (!schema.fields.some((f) => f.name === name)) {
      throw new RecordValidationError(
        `line ${line}: unknown column "${name}"; the table's columns are ${schema.fields.map((f) => f.name).join(', ')}`,
        line,
        name,
      );
    }
  }
}
