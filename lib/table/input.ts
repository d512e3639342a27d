/**
 * Parses records a user hands to a table (JSONL, CSV or Parquet) into validated rows and row
 * kinds. Every rejected record names its 1-based line (row number for Parquet) and the field.
 * Used by the CLI's `write`/`delete` and by the ingest function.
 */
import { parse as parseCsv } from 'csv-parse/sync';
import { RecordValidationError } from '../errors.js';
import { fromArrowType } from '../format/arrow-schema.js';
import { tableToRows } from '../format/columns.js';
import { readDataFile } from '../format/data-file.js';
import { coerceText, toJsonValue, validateRecord } from '../schema/values.js';
import { ROW_KIND_NAMES, RowKind, type DataField, type Row, type RowKindByte, type TableSchema } from '../schema/types.js';

export type InputFormat = 'jsonl' | 'csv' | 'parquet';

/** The column that may carry a row kind in JSONL and CSV input. */
export const KIND_FIELD = '_kind';

export interface RejectedRecord {
  line: number;
  reason: string;
  raw: string;
}

export interface ParsedRecords {
  rows: Row[];
  kinds: RowKindByte[];
  rejected: RejectedRecord[];
}

export interface ParseOptions {
  /** Collect invalid records in `rejected` instead of throwing on the first one. */
  skipInvalid?: boolean;
  /** Every record is a delete (-D) given by its primary key alone (the `delete` command). */
  deletes?: boolean;
}

/** Picks the input format from a file name, or undefined when the extension says nothing. */
export function formatFromFileName(name: string): InputFormat | undefined {
  const lower = name.toLowerCase();
  if (lower.endsWith('.jsonl') || lower.endsWith('.ndjson') || lower.endsWith('.json')) return 'jsonl';
  if (lower.endsWith('.csv')) return 'csv';
  if (lower.endsWith('.parquet')) return 'parquet';
  return undefined;
}

/** Parses and validates records against the table schema; throws RecordValidationError unless skipInvalid. */
export async function parseRecords(
  input: Uint8Array | string,
  format: InputFormat,
  schema: TableSchema,
  opts: ParseOptions = {},
): Promise<ParsedRecords> {
  const raw = format === 'parquet' ? await parquetRecords(input) : format === 'csv' ? csvRecords(input) : jsonlRecords(input);
  const out: ParsedRecords = { rows: [], kinds: [], rejected: [] };
  const keyFields = schema.fields.filter((f) => schema.primaryKeys.includes(f.name));
  for (const rec of raw) {
    try {
      if (rec.error) throw new RecordValidationError(`line ${rec.line}: ${rec.error}`, rec.line);
      const { kind, values } = splitKind(rec.values, rec.line, opts.deletes);
      // A delete needs only its key: `{"id": 7, "_kind": "-D"}` is a complete record.
      const row = kind === RowKind.DELETE
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

interface RawRecord {
  line: number;
  raw: string;
  values: Record<string, unknown>;
  /** Values are CSV text (coerced with coerceText) rather than JSON values. */
  text?: boolean;
  error?: string;
}

function jsonlRecords(input: Uint8Array | string): RawRecord[] {
  const text = typeof input === 'string' ? input : new TextDecoder().decode(input);
  const out: RawRecord[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (!line) continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (e) {
      out.push({ line: i + 1, raw: line, values: {}, error: `malformed JSON (${(e as Error).message}); each line must be one JSON object` });
      continue;
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      out.push({ line: i + 1, raw: line, values: {}, error: 'expected a JSON object per line, e.g. {"id": 1, "name": "a"}' });
      continue;
    }
    out.push({ line: i + 1, raw: line, values: value as Record<string, unknown> });
  }
  return out;
}

function csvRecords(input: Uint8Array | string): RawRecord[] {
  const text = typeof input === 'string' ? input : new TextDecoder().decode(input);
  let records: Array<{ record: string[]; info: { lines: number; raw?: string } }>;
  try {
    records = parseCsv(text, { info: true, raw: true, skip_empty_lines: true, relax_column_count: false }) as never;
  } catch (e) {
    const err = e as Error & { lines?: number };
    throw new RecordValidationError(`malformed CSV${err.lines ? ` at line ${err.lines}` : ''}: ${err.message}`, err.lines);
  }
  if (records.length === 0) return [];
  const header = records[0].record.map((h) => h.trim());
  return records.slice(1).map(({ record, info }) => {
    const values: Record<string, string> = {};
    header.forEach((h, i) => (values[h] = record[i]));
    return { line: info.lines, raw: (info.raw ?? record.join(',')).replace(/\r?\n$/, ''), values, text: true };
  });
}

async function parquetRecords(input: Uint8Array | string): Promise<RawRecord[]> {
  if (typeof input === 'string') throw new RecordValidationError('Parquet input must be bytes, not text');
  const table = await readDataFile(input);
  const fields: DataField[] = table.schema.fields.map((f, i) => ({ id: i, name: f.name, type: fromArrowType(f.type, f.nullable) }));
  return tableToRows(table, fields).map((row, i) => {
    const values: Record<string, unknown> = {};
    for (const f of fields) values[f.name] = row[f.name] === null ? null : toJsonValue(f.type, row[f.name]);
    return { line: i + 1, raw: JSON.stringify(values), values };
  });
}

function splitKind(values: Record<string, unknown>, line: number, deletes?: boolean): { kind: RowKindByte; values: Record<string, unknown> } {
  if (!(KIND_FIELD in values)) return { kind: deletes ? RowKind.DELETE : RowKind.INSERT, values };
  const { [KIND_FIELD]: k, ...rest } = values;
  const idx = ROW_KIND_NAMES.indexOf(String(k) as never);
  if (idx < 0) {
    throw new RecordValidationError(`line ${line}, field "${KIND_FIELD}": ${JSON.stringify(k)} is not a row kind; use one of ${ROW_KIND_NAMES.join(', ')}`, line, KIND_FIELD);
  }
  if (deletes && idx !== RowKind.DELETE) {
    throw new RecordValidationError(`line ${line}: \`delete\` only takes deletes, but the record has ${KIND_FIELD}=${String(k)}`, line, KIND_FIELD);
  }
  return { kind: idx as RowKindByte, values: rest };
}

function validateText(schema: TableSchema, values: Record<string, string>, line: number): Row {
  checkColumns(schema, values, line);
  const row: Row = {};
  for (const f of schema.fields) {
    const text = values[f.name];
    if (text === undefined) {
      if (schema.primaryKeys.includes(f.name)) throw new RecordValidationError(`line ${line}: primary key column "${f.name}" is missing`, line, f.name);
      if (!f.type.nullable) throw new RecordValidationError(`line ${line}: column "${f.name}" is NOT NULL but missing`, line, f.name);
      row[f.name] = null;
      continue;
    }
    row[f.name] = coerceText(f, text, line);
  }
  return row;
}

/** A delete needs only the primary key; other NOT NULL columns get a placeholder that no reader sees. */
function deleteRow(schema: TableSchema, keyFields: DataField[], values: Record<string, unknown>, line: number, text?: boolean): Row {
  const row: Row = {};
  for (const f of keyFields) {
    if (values[f.name] === undefined || values[f.name] === null) {
      throw new RecordValidationError(`line ${line}: primary key column "${f.name}" is missing; a delete names the key of the row to delete`, line, f.name);
    }
    row[f.name] = text ? coerceText(f, String(values[f.name]), line) : validateRecord([f], [f.name], { [f.name]: values[f.name] }, line)[f.name];
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

/** Throws RecordValidationError naming the first column of `values` the table does not have. */
function checkColumns(schema: TableSchema, values: Record<string, unknown>, line: number): void {
  for (const name of Object.keys(values)) {
    if (!schema.fields.some((f) => f.name === name)) {
      throw new RecordValidationError(`line ${line}: unknown column "${name}"; the table's columns are ${schema.fields.map((f) => f.name).join(', ')}`, line, name);
    }
  }
}
