/**
 * Parquet input taken column by column: a decoded batch whose columns already are the table's
 * (same names, the Arrow types varve stores them in, no NULL where the table says NOT NULL, dates
 * and timestamps in range) becomes a write chunk by reusing its column buffers as they are, with
 * no value converted and no object made per row or per cell. A batch that is not that (a column of
 * another type, a NULL in a NOT NULL column, an unknown or `_kind` column, a `delete` input, a
 * DECIMAL column) goes through the record path (RecordColumns) instead, which converts and checks
 * each value and names each rejected row: both paths accept and reject the same rows, with the
 * same messages (test/table/parquet-columns.test.ts compares them over random inputs).
 */
import * as arrow from 'apache-arrow';
import { arrowTypesEqual, toArrowField, toArrowType } from '../format/arrow-schema.js';
import { ColumnAppender } from '../format/column-appender.js';
import { makeColumn, tableFromColumns } from '../format/column-layout.js';
import { MAX_DAY, MIN_DAY, timestampRange } from '../schema/temporal.js';
import { KIND_COLUMN, type DataField, type TableSchema } from '../schema/types.js';
import { KIND_FIELD } from './record-columns.js';

/** Turns decoded Parquet batches into write chunks without touching their values, when it can. */
export class ParquetColumns {
  private readonly fields: DataField[];
  private readonly isKey: boolean[];
  private readonly names: Set<string>;
  private readonly arrowSchema: arrow.Schema;
  private readonly types: arrow.DataType[];

  constructor(
    schema: TableSchema,
    private readonly opts: { deletes?: boolean } = {},
  ) {
    this.fields = schema.fields;
    this.isKey = this.fields.map((f) => schema.primaryKeys.includes(f.name));
    this.names = new Set(this.fields.map((f) => f.name));
    this.types = this.fields.map((f) => toArrowType(f.type));
    this.arrowSchema = new arrow.Schema([
      ...this.fields.map(toArrowField),
      new arrow.Field(KIND_COLUMN, new arrow.Int8(), false),
    ]);
  }

  /**
   * The batch as a chunk table (the table's columns, then `_VALUE_KIND` = +I), sharing the batch's
   * column buffers; undefined when a row of it may need converting or rejecting (see the header):
   * the caller then adds its rows one at a time.
   */
  take(batch: arrow.Table): arrow.Table | undefined {
    if (this.opts.deletes || batch.batches.length !== 1) return undefined;
    const names = batch.schema.names as string[];
    if (new Set(names).size !== names.length) return undefined;
    for (const n of names) if (n === KIND_FIELD || !this.names.has(n)) return undefined;
    const data = batch.batches[0].data;
    const n = data.length;
    const children: arrow.Data[] = [];
    for (let i = 0; i < this.fields.length; i++) {
      const f = this.fields[i];
      const at = names.indexOf(f.name);
      if (at < 0) {
        // Absent: NULL, when the column may be NULL (the record path says so row by row otherwise).
        if (this.isKey[i] || !f.type.nullable) return undefined;
        children.push(nullColumn(f, n));
        continue;
      }
      const d = data.children[at];
      if (f.type.root === 'DECIMAL' || !arrowTypesEqual(d.type, this.types[i])) return undefined;
      if (d.nullCount > 0 && (this.isKey[i] || !f.type.nullable)) return undefined;
      if (!inRange(f, d)) return undefined;
      children.push(d.clone(this.types[i]));
    }
    // +I for every row: a zero-filled Int8 column.
    children.push(makeColumn(new arrow.Int8(), n, new Int8Array(n), null, 0));
    return tableFromColumns(this.arrowSchema, children, n);
  }
}

/** A column of `n` NULLs of `f`'s type. */
function nullColumn(f: DataField, n: number): arrow.Data {
  const a = new ColumnAppender(f, Math.max(1, n));
  for (let r = 0; r < n; r++) a.append(null);
  return a.finish();
}

/** Whether every non-NULL value of a DATE or TIMESTAMP column lies in years 0001-9999 (other types: always). */
function inRange(f: DataField, d: arrow.Data): boolean {
  if (f.type.root !== 'DATE' && f.type.root !== 'TIMESTAMP') return true;
  const values = d.values as Int32Array | BigInt64Array;
  const valid = (r: number): boolean => d.nullCount === 0 || d.getValid(r);
  if (f.type.root === 'DATE') {
    const days = values as Int32Array;
    for (let r = 0; r < d.length; r++) {
      const v = days[r];
      if ((v < MIN_DAY || v > MAX_DAY) && valid(r)) return false;
    }
    return true;
  }
  const { min, max } = timestampRange(f.type.precision ?? 6);
  const ts = values as BigInt64Array;
  for (let r = 0; r < d.length; r++) {
    const v = ts[r];
    if ((v < min || v > max) && valid(r)) return false;
  }
  return true;
}
