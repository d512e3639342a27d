/**
 * Parses records a user hands to a table (JSONL, CSV or Parquet), reading the input as it goes,
 * into validated Arrow columns chunk by chunk (`parseColumnChunks`, lib/table/record-columns.ts):
 * no row object is kept per record. Every rejected record names its 1-based line (row number for
 * Parquet) and the field. Used by the CLI's `write`/`delete` and by the inbox ingest; the row
 * form (`parseRecords`, `parseRecordChunks`) is built on it for small inputs.
 */
import { createWriteStream, openAsBlob } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parse as parseCsvStream } from 'csv-parse';
import { CorruptMetadataError, RecordValidationError, VarveError } from '../errors.js';
import { parseJsonText } from '../json.js';
import { fromArrowType } from '../format/arrow-schema.js';
import { tableToRows } from '../format/columns.js';
import {
  readParquetFooter,
  readRowGroupsRanged,
  type ByteSource,
  type ParquetFooter,
} from '../format/row-group-reader.js';
import { normalizeArrowTypes } from '../format/normalize.js';
import { toJsonValue } from '../schema/values.js';
import { KIND_COLUMN, type DataField, type Row, type RowKindByte, type TableSchema } from '../schema/types.js';
import { RecordColumns, type ColumnChunk, type RejectedRecord } from './record-columns.js';
import { ParquetColumns } from './parquet-columns.js';

export type { ColumnChunk, RejectedRecord } from './record-columns.js';

export type InputFormat = 'jsonl' | 'csv' | 'parquet';

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

/** Parses and validates records against the table schema as row objects; throws RecordValidationError unless skipInvalid. */
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
  /** Records per chunk, valid and rejected (default 8192). */
  chunkRows?: number;
  /** @internal Parquet: false adds every row through the record path (the tests compare both paths). */
  parquetColumns?: boolean;
}

/** One chunk of parsed records as row objects, and how far into the input it reaches. */
export interface ParsedChunk extends ParsedRecords {
  /** Input bytes consumed so far (Parquet: bytes of the row groups read so far). */
  bytesRead: number;
}

/** Records per chunk unless asked otherwise: a chunk's columns stay well under a MB per column. */
const DEFAULT_CHUNK_ROWS = 8192;

/**
 * `parseColumnChunks` with each chunk's rows as row objects (lib/schema/types.ts values): for
 * callers that want rows (small inputs, tests); a bulk write takes the columns.
 */
export async function* parseRecordChunks(
  input: RecordInput,
  format: InputFormat,
  schema: TableSchema,
  opts: ChunkOptions = {},
): AsyncGenerator<ParsedChunk> {
  for await (const c of parseColumnChunks(input, format, schema, opts)) {
    const kinds = c.table.getChild(KIND_COLUMN)!.toArray() as Int8Array;
    yield {
      rows: tableToRows(c.table, schema.fields),
      kinds: Array.from(kinds) as RowKindByte[],
      rejected: c.rejected,
      bytesRead: c.bytesRead,
    };
  }
}

/**
 * Parses and validates records chunk by chunk, reading the input as it goes (JSONL and CSV as a
 * byte stream, Parquet row group by row group). Each record is validated and written field by
 * field into the chunk's Arrow columns (the table's columns and `_VALUE_KIND`, ready for
 * `TableWriter.writeArrow`), so memory holds one chunk's columns, not the input, and no row object
 * outlives its record. A chunk holds `chunkRows` records, valid and rejected. Rejected records
 * keep their 1-based line (row number for Parquet); without skipInvalid the first one throws.
 */
export async function* parseColumnChunks(
  input: RecordInput,
  format: InputFormat,
  schema: TableSchema,
  opts: ChunkOptions = {},
): AsyncGenerator<ColumnChunk> {
  const chunkRows = Math.max(1, opts.chunkRows ?? DEFAULT_CHUNK_ROWS);
  const records = new RecordColumns(schema, opts, Math.min(chunkRows, DEFAULT_CHUNK_ROWS));
  if (format === 'parquet')
    yield* parquetChunks(
      input,
      records,
      chunkRows,
      opts.parquetColumns === false ? undefined : new ParquetColumns(schema, opts),
    );
  else if (format === 'csv') yield* csvChunks(byteStream(input), records, chunkRows);
  else yield* jsonlChunks(byteStream(input), records, chunkRows);
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

/**
 * JSONL, a byte chunk at a time: each line is JSON.parse'd and validated into the columns at once,
 * so its object dies with the line; chunks filled by a byte chunk are yielded after it.
 */
async function* jsonlChunks(
  input: AsyncIterable<Uint8Array>,
  records: RecordColumns,
  chunkRows: number,
): AsyncGenerator<ColumnChunk> {
  const decoder = new Utf8Lines();
  let rest = '';
  let lineNo = 0;
  let bytes = 0;
  const ready: ColumnChunk[] = [];
  const lines = (text: string, final: boolean): void => {
    let from = 0;
    for (;;) {
      const nl = text.indexOf('\n', from);
      if (nl < 0 && (!final || from >= text.length)) break;
      lineNo++;
      jsonlLine(records, text.slice(from, nl < 0 ? text.length : nl).trim(), lineNo);
      if (records.count >= chunkRows) ready.push(records.take(bytes));
      if (nl < 0) {
        from = text.length;
        break;
      }
      from = nl + 1;
    }
    rest = text.slice(from);
  };
  for await (const chunk of input) {
    bytes += chunk.byteLength;
    lines(rest + decoder.decode(chunk, lineNo, rest), false);
    yield* ready.splice(0);
  }
  lines(rest + decoder.decode(undefined, lineNo, rest), true);
  yield* ready.splice(0);
  if (records.count > 0) yield records.take(bytes);
}

function jsonlLine(records: RecordColumns, line: string, lineNo: number): void {
  if (!line) return;
  let value: unknown;
  try {
    value = parseJsonText(line);
  } catch (e) {
    records.reject(lineNo, line, `malformed JSON (${(e as Error).message}); each line must be one JSON object`);
    return;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    records.reject(lineNo, line, 'expected a JSON object per line, e.g. {"id": 1, "name": "a"}');
    return;
  }
  if (MAY_OVERFLOW.test(line)) {
    const key = Object.keys(value).find(
      (k) =>
        typeof (value as Record<string, unknown>)[k] === 'number' &&
        !Number.isFinite((value as Record<string, number>)[k]),
    );
    if (key !== undefined) {
      records.reject(
        lineNo,
        line,
        `${key}: the number is beyond the DOUBLE range (about ±1.8e308) and would read as Infinity; write "Infinity" or "-Infinity" (a string) if that is meant`,
      );
      return;
    }
  }
  records.addObject(value as Record<string, unknown>, lineNo, line);
}

/**
 * A line that may hold a JSON number beyond the double range (a 3-digit exponent, or 309 digits in
 * a row): JSON.parse reads such a number as ±Infinity, which no JSON text can mean, so it is refused
 * rather than stored. The test keeps the check off the common line.
 */
const MAY_OVERFLOW = /[eE][+]?\d{3}|\d{309}/;

/** A streaming UTF-8 decoder that refuses invalid bytes, naming the line where they are. */
class Utf8Lines {
  private readonly decoder = new TextDecoder('utf-8', { fatal: true });

  /** The text of `chunk` (undefined: the end); `linesBefore` lines were complete before it, `pending` is the text not yet split. */
  decode(chunk: Uint8Array | undefined, linesBefore: number, pending: string): string {
    try {
      return chunk === undefined ? this.decoder.decode() : this.decoder.decode(chunk, { stream: true });
    } catch {
      // Where: the first replacement character of a lenient decode (approximate if the input also holds a real U+FFFD).
      const lenient = pending + new TextDecoder().decode(chunk ?? new Uint8Array(0));
      const before = lenient.slice(0, Math.max(0, lenient.indexOf('\uFFFD')));
      const line = linesBefore + before.split('\n').length;
      throw new RecordValidationError(
        `line ${line}: the input is not valid UTF-8 (text columns are stored as UTF-8; nothing was written): convert it first, e.g. iconv -f latin1 -t utf-8`,
        line,
      );
    }
  }
}

/** CSV through csv-parse (a header row, then records), each record validated into the columns. */
async function* csvChunks(
  input: AsyncIterable<Uint8Array>,
  records: RecordColumns,
  chunkRows: number,
): AsyncGenerator<ColumnChunk> {
  let bytes = 0;
  // csv-parse would turn invalid UTF-8 into U+FFFD: the bytes are checked on the way in.
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  const checkUtf8 = (chunk?: Uint8Array): void => {
    try {
      if (chunk) utf8.decode(chunk, { stream: true });
      else utf8.decode();
    } catch {
      throw new RecordValidationError(
        `the input is not valid UTF-8 within its first ${bytes} bytes (text columns are stored as UTF-8; nothing was written): convert it first, e.g. iconv -f latin1 -t utf-8`,
      );
    }
  };
  const counted = async function* () {
    for await (const chunk of input) {
      bytes += chunk.byteLength;
      checkUtf8(chunk);
      yield chunk;
    }
    checkUtf8();
  };
  const source = Readable.from(counted());
  const parser = source.pipe(
    parseCsvStream({ info: true, raw: true, skip_empty_lines: true, relax_column_count: false }),
  );
  // pipe() does not pass a source error on: without this the parser would wait for more input forever.
  source.once('error', (e) => parser.destroy(e));
  let header = false;
  try {
    for await (const { record, info, raw } of parser as AsyncIterable<{
      record: string[];
      info: { lines: number };
      raw?: string;
    }>) {
      if (!header) {
        records.setHeader(record.map((h) => h.trim()));
        header = true;
        continue;
      }
      records.addText(record, info.lines, () => (raw ?? record.join(',')).replace(/\r?\n$/, ''));
      if (records.count >= chunkRows) yield records.take(bytes);
    }
  } catch (e) {
    if (e instanceof VarveError) throw e;
    const err = e as Error & { lines?: number };
    throw new RecordValidationError(
      `malformed CSV${err.lines ? ` at line ${err.lines}` : ''}: ${err.message}`,
      err.lines,
    );
  }
  if (records.count > 0) yield records.take(bytes);
}

/** Parquet rows turned into JSON values at a time. */
const PARQUET_SLICE_ROWS = 1024;

/**
 * Parquet records row group by row group, each fetched by range (lib/format/row-group-reader.ts):
 * memory holds the footer and one batch of a row group, never the file. A byte stream (stdin, an
 * S3 body) has its footer at the end, so it is first copied to a temporary file, which is then
 * read by range as a file is. A decoded batch already in the table's columns and types becomes a
 * chunk as it is, its column buffers shared (parquet-columns.ts); any other batch goes row by row,
 * each row's values validated as JSON values are, rejects numbered by row (1-based, across row groups).
 */
async function* parquetChunks(
  input: RecordInput,
  records: RecordColumns,
  chunkRows: number,
  columns?: ParquetColumns,
): AsyncGenerator<ColumnChunk> {
  if (typeof input === 'string') throw new RecordValidationError('Parquet input must be bytes, not text');
  let spill: string | undefined;
  try {
    const src = await rangedSourceOf(input, (dir) => (spill = dir));
    const footer = await inputFooter(src);
    const rows = new ParquetRowLabels(footer);
    let line = 0;
    let bytes = 0;
    let group = 0;
    const take = () => rows.relabelChunk(records.take(group === footer.rowGroups.length - 1 ? src.size : bytes));
    const rowGroups = readRowGroupsRanged(src, {
      footer,
      onRowGroup: (g) => {
        group = g;
        bytes += footer.rowGroups[g].bytes;
      },
      decodeError: (e, g) =>
        e instanceof VarveError
          ? e
          : new RecordValidationError(`row group ${g} of the Parquet input cannot be decoded: ${(e as Error).message}`),
    });
    for await (const batch of rowGroups) {
      const table = normalizeArrowTypes(batch);
      // A batch already in the table's columns is taken as it is (parquet-columns.ts), no row at a time.
      const direct = columns?.take(table);
      if (direct !== undefined) {
        const read = group === footer.rowGroups.length - 1 ? src.size : bytes;
        if (records.count > 0) yield take();
        for (let at = 0; at < direct.numRows; at += chunkRows)
          yield { table: direct.slice(at, at + chunkRows), rejected: [], bytesRead: read };
        line += direct.numRows;
        continue;
      }
      const fields: DataField[] = table.schema.fields.map((f, i) => ({
        id: i,
        name: f.name,
        type: fromArrowType(f.type, f.nullable),
      }));
      // A slice of rows at a time, so a batch's row objects are never all alive at once.
      for (let at = 0; at < table.numRows; at += PARQUET_SLICE_ROWS) {
        for (const row of tableToRows(table.slice(at, at + PARQUET_SLICE_ROWS), fields)) {
          const values: Record<string, unknown> = {};
          for (const f of fields) values[f.name] = row[f.name] === null ? null : toJsonValue(f.type, row[f.name]);
          line++;
          try {
            records.addObject(values, line, () => JSON.stringify(values));
          } catch (e) {
            throw rows.relabelError(e);
          }
          if (records.count >= chunkRows) yield take();
        }
      }
    }
    if (records.count > 0) yield take();
  } finally {
    if (spill !== undefined) await rm(spill, { recursive: true, force: true });
  }
}

/**
 * Parquet input has rows, not lines: a record's error says "row N (row group G)" (N 1-based
 * across the file, G 0-based as Parquet tools count them) where text input says "line N".
 */
class ParquetRowLabels {
  /** The 1-based number of each row group's first row. */
  private readonly firstRows: number[] = [];

  constructor(footer: ParquetFooter) {
    let next = 1;
    for (const g of footer.rowGroups) {
      this.firstRows.push(next);
      next += g.numRows;
    }
  }

  /** `message` with its leading "line N" said as a Parquet row. */
  relabel(message: string): string {
    return message.replace(/^line (\d+)/, (_, n: string) => {
      let g = 0;
      while (g + 1 < this.firstRows.length && this.firstRows[g + 1] <= Number(n)) g++;
      return `row ${n} (row group ${g})`;
    });
  }

  relabelError(e: unknown): unknown {
    if (!(e instanceof RecordValidationError)) return e;
    return new RecordValidationError(this.relabel(e.message), e.line, e.field);
  }

  relabelChunk(chunk: ColumnChunk): ColumnChunk {
    if (chunk.rejected.length === 0) return chunk;
    return { ...chunk, rejected: chunk.rejected.map((r) => ({ ...r, reason: this.relabel(r.reason) })) };
  }
}

/** The input as a source read by range; a byte stream is first copied to a file in a temporary directory, given to `spilled` to remove. */
async function rangedSourceOf(
  input: Exclude<RecordInput, string>,
  spilled: (dir: string) => void,
): Promise<ByteSource> {
  if (isRangedInput(input)) return input;
  if (input instanceof Uint8Array)
    return { size: input.length, name: 'input', read: async (s, e) => input.subarray(s, e) };
  let blob: Blob;
  if (input instanceof Blob) blob = input;
  else {
    const dir = await mkdtemp(join(tmpdir(), 'varve-parquet-input-'));
    spilled(dir);
    const path = join(dir, 'input.parquet');
    await pipeline(Readable.from(input), createWriteStream(path));
    blob = await openAsBlob(path);
  }
  return { size: blob.size, name: 'input', read: async (s, e) => new Uint8Array(await blob.slice(s, e).arrayBuffer()) };
}

/** The input's Parquet footer; input that has none is the user's error, not corrupt table metadata. */
async function inputFooter(src: ByteSource): Promise<ParquetFooter> {
  try {
    return await readParquetFooter(src);
  } catch (e) {
    if (e instanceof CorruptMetadataError) throw new RecordValidationError(`input is not a Parquet file: ${e.message}`);
    throw e;
  }
}

function isRangedInput(input: RecordInput): input is ByteSource {
  return (
    typeof input === 'object' &&
    !(input instanceof Uint8Array) &&
    !(input instanceof Blob) &&
    typeof (input as ByteSource).read === 'function' &&
    typeof (input as ByteSource).size === 'number'
  );
}
