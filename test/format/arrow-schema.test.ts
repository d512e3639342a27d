import * as arrow from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { SchemaMismatchError } from '../../lib/errors.js';
import {
  arrowFieldId,
  arrowTypesEqual,
  fromArrowType,
  physicalArrowSchema,
  tableArrowSchema,
  toArrowType,
} from '../../lib/format/arrow-schema.js';
import type { DataType, TableSchema } from '../../lib/schema/types.js';
import { allTypeFields, field } from './fixtures.js';

function tableSchema(): TableSchema {
  return {
    version: 1,
    id: 0,
    fields: allTypeFields(),
    highestFieldId: 16,
    partitionKeys: [],
    primaryKeys: ['id'],
    options: {},
    timeMillis: 0,
  };
}

describe('toArrowType / fromArrowType', () => {
  it('maps every varve type to its Arrow type', () => {
    const expected: [DataType, string][] = [
      [{ root: 'BOOLEAN', nullable: true }, 'Bool'],
      [{ root: 'TINYINT', nullable: true }, 'Int8'],
      [{ root: 'SMALLINT', nullable: true }, 'Int16'],
      [{ root: 'INT', nullable: true }, 'Int32'],
      [{ root: 'BIGINT', nullable: true }, 'Int64'],
      [{ root: 'FLOAT', nullable: true }, 'Float32'],
      [{ root: 'DOUBLE', nullable: true }, 'Float64'],
      [{ root: 'DECIMAL', nullable: true, precision: 38, scale: 4 }, 'Decimal[38e+4]'],
      [{ root: 'STRING', nullable: true }, 'Utf8'],
      [{ root: 'BYTES', nullable: true }, 'Binary'],
      [{ root: 'DATE', nullable: true }, 'Date32<DAY>'],
      [{ root: 'TIMESTAMP', nullable: true, precision: 3 }, 'Timestamp<MILLISECOND>'],
      [{ root: 'TIMESTAMP', nullable: true, precision: 6 }, 'Timestamp<MICROSECOND>'],
    ];
    for (const [t, name] of expected) {
      const a = toArrowType(t);
      expect(String(a)).toBe(name);
      expect(fromArrowType(a, t.nullable)).toEqual(t);
    }
    const dec = toArrowType({ root: 'DECIMAL', nullable: false, precision: 38, scale: 4 }) as arrow.Decimal;
    expect([dec.precision, dec.scale, dec.bitWidth]).toEqual([38, 4, 128]);
    const ts = toArrowType({ root: 'TIMESTAMP', nullable: false, precision: 6 }) as arrow.Timestamp;
    expect(ts.timezone ?? null).toBeNull();
  });

  it('accepts wider encodings of the same values', () => {
    expect(fromArrowType(new arrow.LargeUtf8(), true).root).toBe('STRING');
    expect(fromArrowType(new arrow.Utf8View(), true).root).toBe('STRING');
    expect(fromArrowType(new arrow.LargeBinary(), false)).toEqual({ root: 'BYTES', nullable: false });
    expect(fromArrowType(new arrow.DateMillisecond(), true).root).toBe('DATE');
    expect(fromArrowType(new arrow.TimestampMicrosecond('UTC'), true)).toEqual({
      root: 'TIMESTAMP',
      nullable: true,
      precision: 6,
    });
  });

  it('refuses types varve cannot store, naming the column', () => {
    for (const t of [
      new arrow.Uint32(),
      new arrow.Float16(),
      new arrow.TimestampNanosecond(),
      new arrow.List(new arrow.Field('x', new arrow.Int32())),
    ]) {
      expect(() => fromArrowType(t, true, 'col_x')).toThrow(SchemaMismatchError);
      expect(() => fromArrowType(t, true, 'col_x')).toThrow(/column col_x/);
    }
  });

  it('compares decimal and timestamp parameters that apache-arrow ignores', () => {
    expect(arrowTypesEqual(new arrow.Decimal(2, 10, 128), new arrow.Decimal(3, 10, 128))).toBe(false);
    expect(arrowTypesEqual(new arrow.Decimal(2, 10, 128), new arrow.Decimal(2, 10, 128))).toBe(true);
    expect(arrowTypesEqual(new arrow.TimestampMillisecond(), new arrow.TimestampMillisecond('UTC'))).toBe(false);
    expect(arrowTypesEqual(new arrow.Int32(), new arrow.Int64())).toBe(false);
  });
});

describe('table schemas', () => {
  it('puts the table columns in schema order with nullability and field ids', () => {
    const s = tableArrowSchema(tableSchema());
    expect(s.names).toEqual(allTypeFields().map((f) => f.name));
    expect(s.fields[0].nullable).toBe(false);
    expect(s.fields[1].nullable).toBe(true);
    expect(s.fields.map(arrowFieldId)).toEqual(allTypeFields().map((f) => f.id));
  });

  it('appends _SEQUENCE_NUMBER (Int64) and _VALUE_KIND (Int8), both not null, to the physical schema', () => {
    const s = physicalArrowSchema({ ...tableSchema(), fields: [field(1, 'k', 'STRING', { nullable: false })] });
    expect(s.fields.map((f) => [f.name, String(f.type), f.nullable])).toEqual([
      ['k', 'Utf8', false],
      ['_SEQUENCE_NUMBER', 'Int64', false],
      ['_VALUE_KIND', 'Int8', false],
    ]);
  });
});
