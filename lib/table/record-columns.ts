/**
 * Validates records one at a time and writes each field straight into its Arrow column
 * (lib/format/column-appender.ts): what JSONL, CSV and Parquet input become, chunk by chunk,
 * without a row object per record. A record is validated whole into one reused scratch array
 * before any of it is appended, so a rejected record leaves nothing behind; every rejection is a
 * RecordValidationError naming the record's 1-based line and the field.
 */
import * as arrow from 'apache-arrow';
import { RecordValidationError } from '../errors.js';
import { toArrowField } from '../format/arrow-schema.js';
import { ColumnAppender } from '../format/column-appender.js';
import { makeColumn, tableFromColumns } from '../format/column-layout.js';
import { coerceText, coerceValue } from '../schema/values.js';
import {
  KIND_COLUMN,
  ROW_KIND_NAMES,
  RowKind,
  type DataField,
  type RowKindByte,
  type TableSchema,
  type Value,
} from '../schema/types.js';

/** The column that may carry a row kind in JSONL and CSV input. */
export const KIND_FIELD = '_kind';

export interface RejectedRecord {
  line: number;
  reason: string;
  raw: string;
}

/** One chunk of parsed records as columns: the table's columns and `_VALUE_KIND` (Int8). */
export interface ColumnChunk {
  table: arrow.Table;
  rejected: RejectedRecord[];
  /** Input bytes consumed so far (Parquet: bytes of the row groups read so far). */
  bytesRead: number;
}

export interface RecordColumnOptions {
  /** Collect invalid records in `rejected` instead of throwing on the first one. */
  skipInvalid?: boolean;
  /** Every record is a delete (-D) given by its primary key alone (the `delete` command). */
  deletes?: boolean;
}

/** The text of a record for the rejects, made only when it is rejected. */
export type RawText = string | (() => string);

/** Validates records into column appenders; `take` hands out what was added as one chunk. */
export class RecordColumns {
  private readonly fields: DataField[];
  private readonly isKey: boolean[];
  private readonly keyIndexes: number[];
  private readonly names: Set<string>;
  private readonly appenders: ColumnAppender[];
  private readonly arrowSchema: arrow.Schema;
  /** Scratch: the current record's validated values, by field index; reused for every record. */
  private readonly values: Value[];
  private kinds: Int8Array;
  private rows = 0;
  private rejected: RejectedRecord[] = [];
  /** CSV: for each field, the header position of its column (-1 when absent); the `_kind` position; the first unknown column. */
  private csv?: { at: number[]; kindAt: number; unknown?: string };

  constructor(
    private readonly schema: TableSchema,
    private readonly opts: RecordColumnOptions = {},
    initialRows = 1024,
  ) {
    this.fields = schema.fields;
    this.isKey = this.fields.map((f) => schema.primaryKeys.includes(f.name));
    this.keyIndexes = this.fields.flatMap((_, i) => (this.isKey[i] ? [i] : []));
    this.names = new Set(this.fields.map((f) => f.name));
    this.appenders = this.fields.map((f) => new ColumnAppender(f, initialRows));
    this.arrowSchema = new arrow.Schema([
      ...this.fields.map(toArrowField),
      new arrow.Field(KIND_COLUMN, new arrow.Int8(), false),
    ]);
    this.values = new Array(this.fields.length).fill(null);
    this.kinds = new Int8Array(Math.max(8, initialRows));
  }

  /** Records taken in since the last `take`, valid and rejected. */
  get count(): number {
    return this.rows + this.rejected.length;
  }

  /** Valid records since the last `take`. */
  get validRows(): number {
    return this.rows;
  }

  /** A record that could not be read at all (malformed JSON): rejected with `message`, or thrown. */
  reject(line: number, raw: RawText, message: string): void {
    this.fail(new RecordValidationError(`line ${line}: ${message}`, line), line, raw);
  }

  /** Adds a record of JSON values (a JSON object, a Parquet row), `_kind` included. */
  addObject(obj: Record<string, unknown>, line: number, raw: RawText): void {
    try {
      const kind =
        KIND_FIELD in obj ? this.kindOf(obj[KIND_FIELD], line) : this.opts.deletes ? RowKind.DELETE : RowKind.INSERT;
      this.checkKind(kind, line);
      const values = this.values;
      if (kind === RowKind.DELETE) {
        // A delete needs only its key: `{"id": 7, "_kind": "-D"}` is a complete record.
        for (const i of this.keyIndexes) {
          const v = obj[this.fields[i].name];
          if (v === undefined || v === null) throw this.keyMissing(this.fields[i], line);
          values[i] = coerceValue(this.fields[i], v, line);
        }
        for (let i = 0; i < this.fields.length; i++) {
          if (this.isKey[i]) continue;
          const f = this.fields[i];
          const v = obj[f.name];
          values[i] =
            v === undefined || v === null ? (f.type.nullable ? null : placeholder(f)) : coerceValue(f, v, line);
        }
        for (const name of Object.keys(obj))
          if (name !== KIND_FIELD && !this.names.has(name)) throw this.unknownColumn(name, line);
      } else {
        for (const name in obj) if (name !== KIND_FIELD && !this.names.has(name)) throw this.unknownColumn(name, line);
        for (let i = 0; i < this.fields.length; i++) {
          const f = this.fields[i];
          const raw = obj[f.name];
          if (raw === undefined && this.isKey[i]) {
            throw new RecordValidationError(
              `line ${line}: primary key column "${f.name}" is missing; every record needs its whole primary key (${this.schema.primaryKeys.join(', ')})`,
              line,
              f.name,
            );
          }
          values[i] = coerceValue(f, raw, line);
        }
      }
      this.commit(kind);
    } catch (e) {
      this.fail(e, line, raw);
    }
  }

  /** Sets the CSV header whose columns the following `addText` records have. */
  setHeader(header: string[]): void {
    // The record as an object, as it reads by name: a repeated column's last value wins.
    const sample: Record<string, string> = {};
    header.forEach((h) => (sample[h] = ''));
    delete sample[KIND_FIELD];
    this.csv = {
      at: this.fields.map((f) => header.lastIndexOf(f.name)),
      kindAt: header.lastIndexOf(KIND_FIELD),
      unknown: Object.keys(sample).find((name) => !this.names.has(name)),
    };
  }

  /** Adds a CSV record (text per header column; empty text is NULL). */
  addText(record: string[], line: number, raw: RawText): void {
    const csv = this.csv!;
    try {
      const kind =
        csv.kindAt >= 0 ? this.kindOf(record[csv.kindAt], line) : this.opts.deletes ? RowKind.DELETE : RowKind.INSERT;
      this.checkKind(kind, line);
      const values = this.values;
      const textOf = (i: number): string | undefined => (csv.at[i] < 0 ? undefined : record[csv.at[i]]);
      if (kind === RowKind.DELETE) {
        for (const i of this.keyIndexes) {
          const v = textOf(i);
          if (v === undefined) throw this.keyMissing(this.fields[i], line);
          values[i] = coerceText(this.fields[i], v, line);
        }
        for (let i = 0; i < this.fields.length; i++) {
          if (this.isKey[i]) continue;
          const f = this.fields[i];
          const v = textOf(i);
          values[i] = v === undefined ? (f.type.nullable ? null : placeholder(f)) : coerceText(f, v, line);
        }
        if (csv.unknown !== undefined) throw this.unknownColumn(csv.unknown, line);
      } else {
        if (csv.unknown !== undefined) throw this.unknownColumn(csv.unknown, line);
        for (let i = 0; i < this.fields.length; i++) {
          const f = this.fields[i];
          const text = textOf(i);
          if (text === undefined) {
            if (this.isKey[i])
              throw new RecordValidationError(`line ${line}: primary key column "${f.name}" is missing`, line, f.name);
            if (!f.type.nullable)
              throw new RecordValidationError(`line ${line}: column "${f.name}" is NOT NULL but missing`, line, f.name);
            values[i] = null;
            continue;
          }
          values[i] = coerceText(f, text, line);
        }
      }
      this.commit(kind);
    } catch (e) {
      this.fail(e, line, raw);
    }
  }

  /** The records added since the last call, as one chunk (valid rows as columns, and the rejected). */
  take(bytesRead: number): ColumnChunk {
    const n = this.rows;
    const children = this.appenders.map((a) => a.finish());
    children.push(makeColumn(new arrow.Int8(), n, this.kinds.slice(0, n), null, 0));
    const chunk: ColumnChunk = {
      table: tableFromColumns(this.arrowSchema, children, n),
      rejected: this.rejected,
      bytesRead,
    };
    this.rows = 0;
    this.rejected = [];
    return chunk;
  }

  private commit(kind: RowKindByte): void {
    const values = this.values;
    for (let i = 0; i < this.appenders.length; i++) {
      this.appenders[i].append(values[i]);
      values[i] = null;
    }
    if (this.rows === this.kinds.length) {
      const grown = new Int8Array(this.kinds.length * 2);
      grown.set(this.kinds);
      this.kinds = grown;
    }
    this.kinds[this.rows++] = kind;
  }

  private fail(e: unknown, line: number, raw: RawText): void {
    this.values.fill(null);
    if (!(e instanceof RecordValidationError) || !this.opts.skipInvalid) throw e;
    this.rejected.push({ line, reason: e.message, raw: typeof raw === 'string' ? raw : raw() });
  }

  private kindOf(k: unknown, line: number): RowKindByte {
    const idx = ROW_KIND_NAMES.indexOf(String(k) as never);
    if (idx < 0) {
      throw new RecordValidationError(
        `line ${line}, field "${KIND_FIELD}": ${JSON.stringify(k)} is not a row kind; use one of ${ROW_KIND_NAMES.join(', ')}`,
        line,
        KIND_FIELD,
      );
    }
    if (this.opts.deletes && idx !== RowKind.DELETE) {
      throw new RecordValidationError(
        `line ${line}: \`delete\` only takes deletes, but the record has ${KIND_FIELD}=${String(k)}`,
        line,
        KIND_FIELD,
      );
    }
    return idx as RowKindByte;
  }

  private checkKind(kind: RowKindByte, line: number): void {
    if (kind !== RowKind.INSERT && this.schema.primaryKeys.length === 0) {
      throw new RecordValidationError(
        `line ${line}: a ${ROW_KIND_NAMES[kind]} record, but the table has no primary key (an append table takes inserts only); remove rows with \`varve delete <table> --where ...\``,
        line,
      );
    }
  }

  private keyMissing(f: DataField, line: number): RecordValidationError {
    return new RecordValidationError(
      `line ${line}: primary key column "${f.name}" is missing; a delete names the key of the row to delete`,
      line,
      f.name,
    );
  }

  private unknownColumn(name: string, line: number): RecordValidationError {
    return new RecordValidationError(
      `line ${line}: unknown column "${name}"; the table's columns are ${this.fields.map((f) => f.name).join(', ')}`,
      line,
      name,
    );
  }
}

/** A delete needs only the primary key; other NOT NULL columns get a placeholder that no reader sees. */
function placeholder(f: DataField): Value {
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
