import * as arrow from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError, SchemaMismatchError } from '../../lib/errors.js';
import {
  arrowTypesEqual,
  KIND_FIELD,
  physicalArrowSchemaOf,
  SEQUENCE_FIELD,
  toArrowField,
} from '../../lib/format/arrow-schema.js';
import {
  concatTables,
  emptyTable,
  gatherRows,
  rowsToTable,
  singleBatch,
  sliceTable,
  tableToRows,
  takeRows,
} from '../../lib/format/columns.js';
import type { Row } from '../../lib/schema/types.js';
import { rng, testSeed } from '../helpers/random.js';
import { allTypeFields, edgeRows, field, randomRows } from './fixtures.js';

const FIELDS = allTypeFields();
const WITH_SYSTEM = [...FIELDS, SEQUENCE_FIELD, KIND_FIELD];

/** Splits a table into batches of at most `size` rows (sliced, so chunks have non-zero offsets). */
function rebatch(table: arrow.Table, size: number): arrow.Table {
  const batches: arrow.RecordBatch[] = [];
  for (let i = 0; i < table.numRows; i += size) batches.push(...table.slice(i, i + size).batches);
  return new arrow.Table(table.schema, batches);
}

describe('rowsToTable / tableToRows', () => {
  it('round-trips edge values of every type, with nulls', () => {
    // Prepare
    const rows = edgeRows();
    // Act
    const table = rowsToTable(FIELDS, rows);
    const back = tableToRows(table, FIELDS);
    // Assess
    expect(table.batches).toHaveLength(1);
    expect(back).toEqual(rows);
    expect(Object.is(back[3].f64, -0)).toBe(true);
    expect(table.getChild('s')!.nullCount).toBe(1);
    expect(table.getChild('id')!.nullCount).toBe(0);
  });

  it('builds the declared Arrow schema, with field ids, and appends the system columns', () => {
    const rows = edgeRows();
    const table = rowsToTable(FIELDS, rows, { sequence: [10, 11, 12, 13, 14], kind: new Uint8Array([0, 1, 2, 3, 0]) });
    const expected = physicalArrowSchemaOf(FIELDS);
    expect(table.schema.names).toEqual(expected.names);
    table.schema.fields.forEach((f, i) => {
      expect(arrowTypesEqual(f.type, expected.fields[i].type)).toBe(true);
      expect(f.nullable).toBe(expected.fields[i].nullable);
      expect(f.metadata.get('varve.field-id')).toBe(expected.fields[i].metadata.get('varve.field-id'));
    });
    const sys = tableToRows(table, [SEQUENCE_FIELD, KIND_FIELD]);
    expect(sys.map((r) => [r._SEQUENCE_NUMBER, r._VALUE_KIND])).toEqual([
      [10n, 0],
      [11n, 1],
      [12n, 2],
      [13n, 3],
      [14n, 0],
    ]);
  });

  it('writes decimals as 128-bit unscaled integers and formats them with exactly `scale` decimals', () => {
    const dec = field(1, 'd', 'DECIMAL', { precision: 12, scale: 3 });
    const table = rowsToTable([dec], [{ d: '-1' }, { d: '2.5' }, { d: '0.120' }, { d: '-.5' }]);
    const words = table.getChild('d')!.data[0].values as Uint32Array;
    expect(Array.from(words.subarray(0, 8))).toEqual([0xfffffc18, 0xffffffff, 0xffffffff, 0xffffffff, 2500, 0, 0, 0]);
    expect(tableToRows(table, [dec]).map((r) => r.d)).toEqual(['-1.000', '2.500', '0.120', '-0.500']);
  });

  it('refuses values that do not fit the column, naming it', () => {
    const cases: [ReturnType<typeof field>, Row][] = [
      [field(1, 'n', 'INT', { nullable: false }), { n: null }],
      [field(1, 'n', 'TINYINT'), { n: 128 }],
      [field(1, 'n', 'INT'), { n: 1.5 }],
      [field(1, 'n', 'BIGINT'), { n: 2n ** 63n }],
      [field(1, 'n', 'STRING'), { n: 5 }],
      [field(1, 'n', 'DECIMAL', { precision: 4, scale: 2 }), { n: '123.4' }],
      [field(1, 'n', 'DECIMAL', { precision: 4, scale: 2 }), { n: '1.234' }],
      [field(1, 'n', 'DECIMAL', { precision: 4, scale: 2 }), { n: 'abc' }],
    ];
    for (const [f, row] of cases) {
      expect(() => rowsToTable([f], [row]), JSON.stringify(f.type)).toThrow(SchemaMismatchError);
      expect(() => rowsToTable([f], [row])).toThrow(/column n/);
    }
  });

  it('checks system column lengths and row kinds', () => {
    const f = [field(1, 'k', 'BIGINT')];
    expect(() => rowsToTable(f, [{ k: 1n }], { sequence: [], kind: [0] })).toThrow(InvalidArgumentError);
    expect(() => rowsToTable(f, [{ k: 1n }], { sequence: [1], kind: [4] })).toThrow(/row kind 4/);
    expect(() => rowsToTable(f, [{ k: 1n }], { sequence: [1], kind: [1.5] })).toThrow(/row kind 1.5/);
    expect(() => rowsToTable(f, [{ k: 1n }], { sequence: [0.5], kind: [0] })).toThrow(/sequence number 0.5/);
  });

  it('reads rows across several batches', () => {
    const rows = edgeRows();
    const table = rebatch(rowsToTable(FIELDS, rows), 2);
    expect(table.batches.length).toBe(3);
    expect(tableToRows(table, FIELDS)).toEqual(rows);
  });
});

describe('takeRows / gatherRows', () => {
  it('takes rows in the given order, preserving nulls, booleans, -0.0 and NaN', () => {
    const rows = edgeRows();
    const table = rowsToTable(FIELDS, rows, { sequence: [1, 2, 3, 4, 5], kind: [0, 0, 0, 3, 0] });
    const idx = Uint32Array.from([4, 2, 0, 2, 3, 1]);
    const out = takeRows(table, idx);
    expect(out.schema).toBe(table.schema);
    expect(tableToRows(out, WITH_SYSTEM)).toEqual(Array.from(idx, (i) => tableToRows(table, WITH_SYSTEM)[i]));
    expect(out.getChild('i32')!.nullCount).toBe(2);
  });

  it('matches a row-by-row reference on random data, for multi-batch sliced inputs', () => {
    const seed = testSeed('format.take-gather');
    const r = rng(seed);
    const sources = [0, 1, 2].map(() => rowsToTable(FIELDS, randomRows(r, FIELDS, r.int(1, 300))));
    const chunked = sources.map((t) => rebatch(t, r.int(1, 70)));
    const n = 500;
    const source = Uint16Array.from({ length: n }, () => r.int(0, 2));
    const row = Uint32Array.from(source, (s) => r.int(0, sources[s].numRows - 1));
    const refRows = sources.map((t) => tableToRows(t, FIELDS));
    // Act
    const gathered = gatherRows(chunked, source, row);
    const takeAt = Uint32Array.from({ length: n }, () => r.int(0, sources[1].numRows - 1));
    const taken = takeRows(chunked[1], takeAt);
    // Assess
    expect(gathered.batches).toHaveLength(1);
    expect(tableToRows(gathered, FIELDS)).toEqual(Array.from(source, (s, i) => refRows[s][row[i]]));
    expect(taken.numRows).toBe(n);
    expect(tableToRows(taken, FIELDS)).toEqual(Array.from(takeAt, (i) => refRows[1][i]));
    for (const f of gathered.schema.fields) {
      const v = gathered.getChild(f.name)!;
      let nulls = 0;
      for (let i = 0; i < n; i++) if (!v.isValid(i)) nulls++;
      expect(v.nullCount).toBe(nulls);
    }
  });

  it('gathers an empty plan into an empty table and refuses out-of-range positions', () => {
    const t = rowsToTable(FIELDS, edgeRows());
    expect(gatherRows([t], new Uint16Array(0), new Uint32Array(0)).numRows).toBe(0);
    expect(() => takeRows(t, Uint32Array.from([5]))).toThrow(InvalidArgumentError);
    expect(() => gatherRows([t], Uint16Array.from([1]), Uint32Array.from([0]))).toThrow(InvalidArgumentError);
    expect(() => gatherRows([t], Uint16Array.from([0, 0]), Uint32Array.from([0]))).toThrow(InvalidArgumentError);
  });

  it('refuses sources whose schemas differ', () => {
    const a = rowsToTable([field(1, 'k', 'INT')], [{ k: 1 }]);
    const b = rowsToTable([field(1, 'k', 'BIGINT')], [{ k: 1n }]);
    expect(() => gatherRows([a, b], Uint16Array.from([0]), Uint32Array.from([0]))).toThrow(SchemaMismatchError);
  });
});

describe('singleBatch / concatTables / emptyTable / sliceTable', () => {
  it('returns a one-batch table as is and flattens several batches into an equal copy', () => {
    const seed = testSeed('format.single-batch');
    const r = rng(seed);
    const t = rowsToTable(FIELDS, randomRows(r, FIELDS, 200));
    const many = rebatch(t.slice(3), r.int(1, 13));
    expect(singleBatch(t)).toBe(t);
    const flat = singleBatch(many);
    expect(flat.batches).toHaveLength(1);
    expect(tableToRows(flat, FIELDS)).toEqual(tableToRows(t, FIELDS).slice(3));
    for (const f of FIELDS) expect(flat.getChild(f.name)!.nullCount).toBe(many.getChild(f.name)!.nullCount);
  });

  it('concatenates tables under a schema without copying, and checks their types', () => {
    const rows = edgeRows();
    const a = rowsToTable(FIELDS, rows.slice(0, 2));
    const b = rowsToTable(FIELDS, rows.slice(2));
    const schema = new arrow.Schema(FIELDS.map(toArrowField));
    const both = concatTables([a, b], schema);
    expect(both.schema).toBe(schema);
    expect(both.batches).toHaveLength(2);
    expect(both.batches[0].getChildAt(0)!.data[0].values).toBe(a.batches[0].getChildAt(0)!.data[0].values);
    expect(tableToRows(both, FIELDS)).toEqual(rows);
    expect(concatTables([], schema).numRows).toBe(0);
    const other = rowsToTable([field(1, 'id', 'INT')], [{ id: 1 }]);
    expect(() => concatTables([other], schema)).toThrow(SchemaMismatchError);
  });

  it('makes an empty table of any schema that still flows through every kernel', () => {
    const schema = physicalArrowSchemaOf(FIELDS);
    const empty = emptyTable(schema);
    expect(empty.numRows).toBe(0);
    expect(empty.batches).toHaveLength(1);
    expect(takeRows(empty, new Uint32Array(0)).numRows).toBe(0);
    expect(singleBatch(new arrow.Table(schema)).batches).toHaveLength(1);
    expect(tableToRows(empty, FIELDS)).toEqual([]);
  });

  it('slices without copying', () => {
    const t = rowsToTable(FIELDS, edgeRows());
    const s = sliceTable(t, 1, 3);
    expect(tableToRows(s, FIELDS)).toEqual(edgeRows().slice(1, 3));
    expect(tableToRows(takeRows(s, Uint32Array.from([1, 0])), FIELDS)).toEqual([edgeRows()[2], edgeRows()[1]]);
  });
});
