/**
 * Parses records a user hands to a table (JSONL, CSV or Parquet) into validated rows and row
 * kinds. Every rejected record names its 1-based line (row number for Parquet) and the field.
 * Used by the CLI's `write`/`delete` and by the ingest function.
 */
import { createWriteStream, openAsBlob } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parse as parseCsvStream } from 'csv-parse';
import { CorruptMetadataError, RecordValidationError, VarveError } from '../errors.js';
import { fromArrowType } from '../format/arrow-schema.js';
import { tableToRows } from '../format/columns.js';
import { readParquetFooter, readRowGroupsRanged, type ByteSource, type ParquetFooter } from '../format/row-group-reader.js';
import { normalizeArrowTypes } from '../format/normalize.js';
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
  const out: ParsedRecords = { rows: [], kinds: [], rejected: [] };
  for await (const chunk of parseRecordChunks(input, format, schema, { ...opts, chunkRows: Infinity })) {
    for (const r of chunk.rows) out.rows.push(r);
    for (const k of chunk.kinds) out.kinds.push(k);
    for (const r of chunk.rejected) out.rejected.push(r);
  }
  return out;
}

/**
 * Where records come from: bytes or text in memory, a byte stream (a file, stdin, an S3 body), a
 * Blob, or (Parquet only) a ranged source: its size and reads of byte ranges (an S3 object).
 */
export type RecordInput = Uint8Array | string | AsyncIterable<Uint8Array> | Blob | ByteSource;

export interface ChunkOptions extends ParseOptions {
  /** Records per chunk (default 8192). */
  chunkRows?: number;
}

/** One chunk of parsed records, and how far into the input it reaches. */
export interface ParsedChunk extends ParsedRecords {
  /** Input bytes consumed so far (Parquet: bytes of the row groups read so far). */
  bytesRead: number;
}

/** Records per chunk unless asked otherwise: small enough that a chunk's row objects stay a few MB. */
export const DEFAULT_CHUNK_ROWS = 8192;

/**
 * Parses and validates records chunk by chunk, reading the input as it goes (JSONL and CSV as a
 * byte stream, Parquet row group by row group), so memory holds one chunk, not the input.
 * Rejected records keep their 1-based line (row number for Parquet); without skipInvalid the
 * first one throws.
 */
export async function* parseRecordChunks(input: RecordInput, format: InputFormat, schema: TableSchema, opts: ChunkOptions = {}): AsyncGenerator<ParsedChunk> {
  const chunkRows = Math.max(1, opts.chunkRows ?? DEFAULT_CHUNK_ROWS);
  const keyFields = schema.fields.filter((f) => schema.primaryKeys.includes(f.name));
  const raw = format === 'parquet' ? parquetRecords(input) : format === 'csv' ? csvRecords(byteStream(input)) : jsonlRecords(byteStream(input));
  let out: ParsedChunk = { rows: [], kinds: [], rejected: [], bytesRead: 0 };
  for await (const rec of raw) {
    out.bytesRead = rec.bytesRead;
    try {
      if (rec.error) throw new RecordValidationError(`line ${rec.line}: ${rec.error}`, rec.line);
      const { kind, values } = splitKind(rec.values, rec.line, opts.deletes);
      if (kind !== RowKind.INSERT && schema.primaryKeys.length === 0) {
        throw new RecordValidationError(
          `line ${rec.line}: a ${ROW_KIND_NAMES[kind]} record, but the table has no primary key (an append table takes inserts only); remove rows with \`varve delete <table> --where ...\``,
          rec.line,
        );
      }
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
    if (out.rows.length + out.rejected.length >= chunkRows) {
      yield out;
      out = { rows: [], kinds: [], rejected: [], bytesRead: out.bytesRead };
    }
  }
  if (out.rows.length + out.rejected.length > 0) yield out;
}

interface RawRecord {
  line: number;
  raw: string;
  values: Record<string, unknown>;
  /** Values are CSV text (coerced with coerceText) rather than JSON values. */
  text?: boolean;
  error?: string;
  /** Input bytes consumed up to and including this record. */
  bytesRead: number;
}

/** The input as a stream of byte chunks. */
async function* byteStream(input: RecordInput): AsyncGenerator<Uint8Array> {
  if (typeof input === 'string') yield new TextEncoder().encode(input);
  else if (input instanceof Uint8Array) yield input;
  else if (input instanceof Blob) yield* input.stream() as unknown as AsyncIterable<Uint8Array>;
  else if (isRangedInput(input)) {
    for (let at = 0; at < input.size; at += 1 << 20) yield await input.read(at, Math.min(input.size, at + (1 << 20)));
  } else yield* input;
}

async function* jsonlRecords(input: AsyncIterable<Uint8Array>): AsyncGenerator<RawRecord> {
  const decoder = new TextDecoder();
  let rest = '';
  let lineNo = 0;
  let bytes = 0;
  function* lines(text: string, final: boolean): Generator<RawRecord> {
    let from = 0;
    for (;;) {
      const nl = text.indexOf('\n', from);
      if (nl < 0 && !final) break;
      const end = nl < 0 ? text.length : nl;
      if (nl < 0 && from >= text.length) break;
      lineNo++;
      const rec = jsonlRecord(text.slice(from, end).trim(), lineNo, bytes);
      if (rec) yield rec;
      if (nl < 0) {
        from = text.length;
        break;
      }
      from = nl + 1;
    }
    rest = text.slice(from);
  }
  for await (const chunk of input) {
    bytes += chunk.byteLength;
    yield* lines(rest + decoder.decode(chunk, { stream: true }), false);
  }
  yield* lines(rest + decoder.decode(), true);
}

function jsonlRecord(line: string, lineNo: number, bytesRead: number): RawRecord | undefined {
  if (!line) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (e) {
    return { line: lineNo, raw: line, values: {}, bytesRead, error: `malformed JSON (${(e as Error).message}); each line must be one JSON object` };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { line: lineNo, raw: line, values: {}, bytesRead, error: 'expected a JSON object per line, e.g. {"id": 1, "name": "a"}' };
  }
  return { line: lineNo, raw: line, values: value as Record<string, unknown>, bytesRead };
}

async function* csvRecords(input: AsyncIterable<Uint8Array>): AsyncGenerator<RawRecord> {
  let bytes = 0;
  const counted = async function* () {
    for await (const chunk of input) {
      bytes += chunk.byteLength;
      yield chunk;
    }
  };
  const parser = Readable.from(counted()).pipe(parseCsvStream({ info: true, raw: true, skip_empty_lines: true, relax_column_count: false }));
  let header: string[] | undefined;
  try {
    for await (const { record, info, raw } of parser as AsyncIterable<{ record: string[]; info: { lines: number }; raw?: string }>) {
      if (!header) {
        header = record.map((h) => h.trim());
        continue;
      }
      const values: Record<string, string> = {};
      header.forEach((h, i) => (values[h] = record[i]));
      yield { line: info.lines, raw: (raw ?? record.join(',')).replace(/\r?\n$/, ''), values, text: true, bytesRead: bytes };
    }
  } catch (e) {
    if (e instanceof VarveError) throw e;
    const err = e as Error & { lines?: number };
    throw new RecordValidationError(`malformed CSV${err.lines ? ` at line ${err.lines}` : ''}: ${err.message}`, err.lines);
  }
}

/**
 * Parquet records row group by row group, each fetched by range (lib/format/row-group-reader.ts):
 * memory holds the footer and one batch of a row group, never the file. A byte stream (stdin, an
 * S3 body) has its footer at the end, so it is first copied to a temporary file, which is then
 * read by range as a file is.
 */
async function* parquetRecords(input: RecordInput): AsyncGenerator<RawRecord> {
  if (typeof input === 'string') throw new RecordValidationError('Parquet input must be bytes, not text');
  let spill: string | undefined;
  try {
    let src: ByteSource;
    if (isRangedInput(input)) src = input;
    else if (input instanceof Uint8Array) src = { size: input.length, name: 'input', read: async (s, e) => input.subarray(s, e) };
    else {
      let blob: Blob;
      if (input instanceof Blob) blob = input;
      else {
        spill = await mkdtemp(join(tmpdir(), 'varve-parquet-input-'));
        const path = join(spill, 'input.parquet');
        await pipeline(Readable.from(input), createWriteStream(path));
        blob = await openAsBlob(path);
      }
      src = { size: blob.size, name: 'input', read: async (s, e) => new Uint8Array(await blob.slice(s, e).arrayBuffer()) };
    }
    let footer: ParquetFooter;
    try {
      footer = await readParquetFooter(src);
    } catch (e) {
      if (e instanceof CorruptMetadataError) throw new RecordValidationError(`input is not a Parquet file: ${e.message}`);
      throw e;
    }
    let line = 0;
    let bytes = 0;
    let group = 0;
    const rowGroups = readRowGroupsRanged(src, {
      footer,
      onRowGroup: (g) => {
        group = g;
        bytes += footer.rowGroups[g].bytes;
      },
      decodeError: (e, g) => (e instanceof VarveError ? e : new RecordValidationError(`row group ${g} of the Parquet input cannot be decoded: ${(e as Error).message}`)),
    });
    for await (const batch of rowGroups) {
      const table = normalizeArrowTypes(batch);
      const fields: DataField[] = table.schema.fields.map((f, i) => ({ id: i, name: f.name, type: fromArrowType(f.type, f.nullable) }));
      for (const row of tableToRows(table, fields)) {
        const values: Record<string, unknown> = {};
        for (const f of fields) values[f.name] = row[f.name] === null ? null : toJsonValue(f.type, row[f.name]);
        line++;
        yield { line, raw: JSON.stringify(values), values, bytesRead: group === footer.rowGroups.length - 1 ? src.size : bytes };
      }
    }
  } finally {
    if (spill !== undefined) await rm(spill, { recursive: true, force: true });
  }
}

function isRangedInput(input: RecordInput): input is ByteSource {
  return typeof input === 'object' && !(input instanceof Uint8Array) && !(input instanceof Blob) && typeof (input as ByteSource).read === 'function' && typeof (input as ByteSource).size === 'number';
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
