/**
 * Columnar table operations varve needs and apache-arrow lacks: build from rows and back, take,
 * gather across tables, flatten to one batch, concat. Every result is built with makeData over
 * fresh typed arrays; no builders, no row objects on the hot paths.
 */
import * as arrow from 'apache-arrow';
import { InvalidArgumentError, SchemaMismatchError } from '../errors.js';
import type { DataField, Row } from '../schema/types.js';
import { arrowTypesEqual, physicalArrowSchemaOf, toArrowField, toArrowType } from './arrow-schema.js';
import { concatColumn } from './column-concat.js';
import { gatherColumn } from './column-gather.js';
import { emptyColumn, makeColumn, ownMemory, tableFromColumns, type Allocate } from './column-layout.js';
import { columnFromRows, rowsFromColumn } from './row-columns.js';

/**
 * One RecordBatch from row objects. With `system`, appends `_SEQUENCE_NUMBER` and `_VALUE_KIND`
 * (the physical layout of a data file); a BigInt64Array sequence is used without copying.
 */
export function rowsToTable(
  fields: DataField[],
  rows: Row[],
  system?: { sequence: Float64Array | BigInt64Array | number[]; kind: Uint8Array | number[] },
): arrow.Table {
  const n = rows.length;
  const children = fields.map((f) => columnFromRows(f, rows));
  if (system === undefined) return tableFromColumns(new arrow.Schema(fields.map(toArrowField)), children, n);
  const { sequence, kind } = system;
  if (sequence.length !== n || kind.length !== n) {
    throw new InvalidArgumentError(
      `rowsToTable: ${n} rows but ${sequence.length} sequence numbers and ${kind.length} row kinds; pass one of each per row`,
    );
  }
  let seq: BigInt64Array;
  if (sequence instanceof BigInt64Array) seq = sequence;
  else {
    seq = new BigInt64Array(n);
    for (let i = 0; i < n; i++) {
      const s = sequence[i];
      if (!Number.isSafeInteger(s)) {
        throw new InvalidArgumentError(
          `rowsToTable: row ${i} has sequence number ${s}; pass integers (a BigInt64Array for huge ones)`,
        );
      }
      seq[i] = BigInt(s);
    }
  }
  for (let i = 0; i < n; i++) {
    const k = kind[i];
    if (k !== 0 && k !== 1 && k !== 2 && k !== 3) {
      throw new InvalidArgumentError(`rowsToTable: row ${i} has row kind ${k}; use 0 (+I), 1 (-U), 2 (+U) or 3 (-D)`);
    }
  }
  const kinds =
    kind instanceof Uint8Array ? new Int8Array(kind.buffer, kind.byteOffset, kind.length) : Int8Array.from(kind);
  children.push(makeColumn(new arrow.Int64(), n, seq, null, 0), makeColumn(new arrow.Int8(), n, kinds, null, 0));
  return tableFromColumns(physicalArrowSchemaOf(fields), children, n);
}

/**
 * Row objects of the named `fields` (system columns too, given SEQUENCE_FIELD/KIND_FIELD), with
 * the JS values of lib/schema/types.ts; DECIMAL as text with exactly `scale` decimals.
 */
export function tableToRows(table: arrow.Table, fields: DataField[]): Row[] {
  const rows: Row[] = new Array(table.numRows);
  for (let i = 0; i < rows.length; i++) {
    const r: Row = {};
    // Same insertion order for every row, so all rows share one object shape.
    for (const f of fields) r[f.name] = null;
    rows[i] = r;
  }
  for (const f of fields) {
    const vector = table.getChild(f.name);
    if (vector === null) {
      throw new SchemaMismatchError(
        `column ${f.name} is not in the table (it has ${table.schema.names.join(', ')})`,
        f.name,
      );
    }
    if (!arrowTypesEqual(vector.type, toArrowType(f.type))) {
      throw new SchemaMismatchError(
        `column ${f.name} is ${String(vector.type)} in the table but ${f.type.root} in the schema`,
        f.name,
      );
    }
    let base = 0;
    for (const d of vector.data) {
      rowsFromColumn(d, f, rows, base);
      base += d.length;
    }
  }
  return rows;
}

/**
 * A new single-batch table of the rows at `indices`, in that order, with the same schema; its
 * buffers from `alloc` (`sharedMemory`: a table worker threads read without a copy).
 */
export function takeRows(table: arrow.Table, indices: Uint32Array, alloc: Allocate = ownMemory): arrow.Table {
  const flat = singleBatch(table);
  const n = flat.numRows;
  for (let i = 0; i < indices.length; i++) {
    if (indices[i] >= n)
      throw new InvalidArgumentError(`takeRows: index ${indices[i]} at ${i} is out of range for ${n} rows`);
  }
  const batch = flat.batches[0];
  const children = flat.schema.fields.map((f, c) =>
    gatherColumn(f.type, f.name, [batch.data.children[c]], null, indices, alloc),
  );
  return tableFromColumns(flat.schema, children, indices.length);
}

/**
 * A new single-batch table whose row i is row `row[i]` of `sources[source[i]]`. Sources must share
 * one schema (the first one's); multi-batch sources are flattened first.
 */
export function gatherRows(sources: arrow.Table[], source: Uint16Array, row: Uint32Array): arrow.Table {
  const schema = sources[0]?.schema;
  const children = gatherRowColumns(sources, source, row, schema?.fields.length ?? 0);
  return tableFromColumns(schema, children, row.length);
}

/**
 * The first `columns` columns of gatherRows's table, gathered straight from the sources' batches
 * (no projected table per source): the merge's value columns, beside which it builds its own.
 * Their buffers come from `alloc`.
 */
export function gatherRowColumns(
  sources: arrow.Table[],
  source: Uint16Array,
  row: Uint32Array,
  columns: number,
  alloc: Allocate = ownMemory,
): arrow.Data[] {
  if (sources.length === 0) throw new InvalidArgumentError('gatherRows: no source tables; pass at least one');
  if (source.length !== row.length) {
    throw new InvalidArgumentError(
      `gatherRows: ${source.length} source indexes but ${row.length} row indexes; pass one of each per output row`,
    );
  }
  const schema = sources[0].schema;
  const flat = sources.map((t, k) => {
    assertSameTypes(schema, t.schema, `source ${k}`);
    return singleBatch(t);
  });
  const sizes = flat.map((t) => t.numRows);
  for (let i = 0; i < row.length; i++) {
    const s = source[i];
    if (s >= sizes.length || row[i] >= sizes[s]) {
      throw new InvalidArgumentError(
        `gatherRows: output row ${i} points at source ${s} row ${row[i]}, which does not exist`,
      );
    }
  }
  return schema.fields.slice(0, columns).map((f, c) =>
    gatherColumn(
      f.type,
      f.name,
      flat.map((t) => t.batches[0].data.children[c]),
      source,
      row,
      alloc,
    ),
  );
}

/** The table as exactly one RecordBatch: itself when it already is, else a copy of its columns. */
export function singleBatch(table: arrow.Table): arrow.Table {
  if (table.batches.length === 1) return table;
  if (table.batches.length === 0) return emptyTable(table.schema);
  const children = table.schema.fields.map((f, c) =>
    concatColumn(
      f.type,
      f.name,
      table.batches.map((b) => b.data.children[c]),
    ),
  );
  return tableFromColumns(table.schema, children, table.numRows);
}

/** The tables' batches one after another under `schema`, without copying; types must match it. */
export function concatTables(tables: arrow.Table[], schema: arrow.Schema): arrow.Table {
  const batches: arrow.RecordBatch[] = [];
  const struct = new arrow.Struct(schema.fields);
  tables.forEach((t, k) => {
    assertSameTypes(schema, t.schema, `table ${k}`);
    for (const b of t.batches) batches.push(new arrow.RecordBatch(schema, b.data.clone(struct)));
  });
  return batches.length === 0 ? emptyTable(schema) : new arrow.Table(schema, batches);
}

/** A table of the schema with one zero-row batch. */
export function emptyTable(schema: arrow.Schema): arrow.Table {
  return tableFromColumns(
    schema,
    schema.fields.map((f) => emptyColumn(f.type, f.name)),
    0,
  );
}

/** Rows [begin, end) of the table, sharing its buffers. */
export function sliceTable(table: arrow.Table, begin: number, end?: number): arrow.Table {
  return table.slice(begin, end);
}

function assertSameTypes(expected: arrow.Schema, actual: arrow.Schema, what: string): void {
  const a = expected.fields;
  const b = actual.fields;
  const same = a.length === b.length && a.every((f, i) => f.name === b[i].name && arrowTypesEqual(f.type, b[i].type));
  if (!same) {
    const show = (s: arrow.Schema) => s.fields.map((f) => `${f.name} ${String(f.type)}`).join(', ');
    throw new SchemaMismatchError(`${what} has columns (${show(actual)}) but (${show(expected)}) were expected`);
  }
}
