import { describe, expect, it } from 'vitest';
import { CorruptMetadataError, OptionError, SchemaError } from '../../lib/errors.js';
import {
  createTableSchema,
  deserializeSchema,
  parseSchemaText,
  serializeSchema,
  type CreateTableSchemaArgs,
} from '../../lib/schema/parse.js';

const COLUMNS = 'dt DATE, region STRING, order_id BIGINT, status STRING, amount DECIMAL(10,2), payload BYTES';

function args(over: Partial<CreateTableSchemaArgs> = {}): CreateTableSchemaArgs {
  return {
    fields: parseSchemaText(COLUMNS),
    primaryKeys: ['dt', 'region', 'order_id'],
    partitionKeys: ['dt', 'region'],
    now: 1700000000000,
    ...over,
  };
}

function failure(f: () => unknown): Error {
  try {
    f();
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected an error');
}

describe('createTableSchema', () => {
  it('builds a schema with NOT NULL keys, the highest field id and the given options', () => {
    // Act
    const s = createTableSchema(args({ options: { bucket: '4' }, comment: 'orders' }));

    // Assess
    expect(s).toMatchObject({
      version: 1,
      id: 0,
      highestFieldId: 5,
      timeMillis: 1700000000000,
      comment: 'orders',
      options: { bucket: '4' },
    });
    expect(s.fields.filter((f) => !f.type.nullable).map((f) => f.name)).toEqual(['dt', 'region', 'order_id']);
    expect(s.primaryKeys).toEqual(['dt', 'region', 'order_id']);
    expect(s.partitionKeys).toEqual(['dt', 'region']);
  });

  it('does not modify the fields it is given', () => {
    const fields = parseSchemaText('id BIGINT, v STRING');
    createTableSchema({ fields, primaryKeys: ['id'] });
    expect(fields[0].type.nullable).toBe(true);
  });

  it('names a missing primary key column and lists the columns', () => {
    const e = failure(() => createTableSchema(args({ primaryKeys: ['orderid'], partitionKeys: [] })));
    expect(e).toBeInstanceOf(SchemaError);
    expect(e.message).toMatch(/primary key column "orderid" is not in the schema/);
    expect(e.message).toContain('the columns are dt, region, order_id, status, amount, payload');
  });

  it('hints at a case mismatch', () => {
    const e = failure(() => createTableSchema(args({ primaryKeys: ['Order_Id'], partitionKeys: [] })));
    expect(e.message).toMatch(/did you mean "order_id"/);
  });

  it('without a primary key builds an append table: bucket-unaware unless a bucket count and bucket-key are given', () => {
    const s = createTableSchema(args({ primaryKeys: [], partitionKeys: ['dt'] }));
    expect(s.primaryKeys).toEqual([]);
    expect(s.options.bucket).toBe('-1');
    // Key columns stay as declared: there are none.
    expect(s.fields.find((f) => f.name === 'region')!.type.nullable).toBe(true);
    expect(
      createTableSchema(args({ primaryKeys: [], options: { bucket: '3', 'bucket-key': 'order_id' } })).options.bucket,
    ).toBe('3');
    const e = failure(() => createTableSchema(args({ primaryKeys: [], options: { bucket: '3' } })));
    expect(e).toBeInstanceOf(OptionError);
    expect(e.message).toMatch(/needs bucket-key/);
    expect(failure(() => createTableSchema(args({ options: { bucket: '-1' } }))).message).toMatch(
      /dynamic bucket mode\) is not supported/,
    );
  });

  it('explains why the primary key must include every partition key', () => {
    const e = failure(() => createTableSchema(args({ primaryKeys: ['order_id'], partitionKeys: ['dt'] })));
    expect(e).toBeInstanceOf(SchemaError);
    expect(e.message).toMatch(/partition key "dt" is not part of the primary key \(order_id\)/);
    expect(e.message).toMatch(/exactly one partition/);
  });

  it.each([
    [{ primaryKeys: ['order_id', 'order_id'], partitionKeys: [] }, /primary key lists column "order_id" twice/],
    [{ partitionKeys: ['dt', 'dt'] }, /partition key lists column "dt" twice/],
    [{ partitionKeys: ['day'] }, /partition key column "day" is not in the schema/],
    [{ primaryKeys: ['order_id', 'payload'], partitionKeys: ['payload'] }, /partition key "payload" is BYTES/],
  ])('rejects bad key lists %#', (over, message) => {
    const e = failure(() => createTableSchema(args(over)));
    expect(e).toBeInstanceOf(SchemaError);
    expect(e.message).toMatch(message);
  });

  it('validates the options against the columns', () => {
    const unknown = failure(() => createTableSchema(args({ options: { buckets: '2' } })));
    expect(unknown).toBeInstanceOf(OptionError);
    expect(unknown.message).toMatch(/unknown table option "buckets" \(did you mean bucket\b/);
    const misfit = failure(() =>
      createTableSchema(
        args({ options: { 'merge-engine': 'aggregation', 'fields.status.aggregate-function': 'sum' } }),
      ),
    );
    expect(misfit).toBeInstanceOf(OptionError);
    expect(misfit.message).toMatch(/sum does not fit column status of type STRING/);
  });

  it('accepts a bucket key inside the primary key minus the partition keys, and nothing else', () => {
    expect(createTableSchema(args({ options: { 'bucket-key': 'order_id' } })).options['bucket-key']).toBe('order_id');
    const e = failure(() => createTableSchema(args({ options: { 'bucket-key': 'dt' } })));
    expect(e).toBeInstanceOf(OptionError);
    expect(e.message).toMatch(/bucket-key column "dt" is not in the primary key minus the partition keys \(order_id\)/);
    expect(failure(() => createTableSchema(args({ options: { 'bucket-key': 'status' } }))).message).toMatch(/"status"/);
  });

  it('refuses aggregate functions on key columns and default functions that misfit a value column', () => {
    const onKey = failure(() =>
      createTableSchema(
        args({ options: { 'merge-engine': 'aggregation', 'fields.order_id.aggregate-function': 'max' } }),
      ),
    );
    expect(onKey.message).toMatch(/primary key column order_id/);
    const fallback = failure(() =>
      createTableSchema(
        args({
          options: {
            'merge-engine': 'aggregation',
            'fields.default-aggregate-function': 'sum',
            'fields.status.aggregate-function': 'max',
          },
        }),
      ),
    );
    // status has its own function; payload (BYTES) would fall back to sum.
    expect(fallback.message).toMatch(/sum does not fit column payload of type BYTES/);
  });
});

describe('schema files', () => {
  it('round-trips through serializeSchema / deserializeSchema with types as text', () => {
    // Prepare
    const fields = parseSchemaText(
      "id BIGINT NOT NULL COMMENT 'key', amount DECIMAL(10,2), ts TIMESTAMP(3), t6 TIMESTAMP",
    );
    const s = createTableSchema({
      fields,
      primaryKeys: ['id'],
      options: { bucket: '2' },
      comment: 'c',
      id: 3,
      now: 42,
    });

    // Act
    const text = serializeSchema(s);

    // Assess
    expect(JSON.parse(text).fields[1]).toEqual({ id: 1, name: 'amount', type: 'DECIMAL(10,2)' });
    expect(deserializeSchema(text)).toEqual(s);
  });

  it.each([
    ['not json', /not valid JSON/],
    ['[]', /expected Object, got Array/],
    ['{"version": 2}', /unsupported version 2/],
    ['{"version": 1, "id": 0, "fields": []}', /"fields" must be a non-empty array/],
    ['{"version": 1, "id": 0, "fields": [{"id": 0, "name": "a", "type": "WAT"}]}', /field a has type "WAT"/],
    [
      '{"version": 1, "id": 0, "fields": [{"id": 0, "name": "a", "type": "INT"}], "highestFieldId": 0, "partitionKeys": [], "primaryKeys": ["b"], "options": {}, "timeMillis": 1}',
      /"primaryKeys" must be an array of column names/,
    ],
    [
      '{"version": 1, "id": 0, "fields": [{"id": 0, "name": "a", "type": "INT"}], "highestFieldId": 0, "partitionKeys": [], "primaryKeys": ["a"], "options": {"bucket": 1}, "timeMillis": 1}',
      /"options" must be an object of strings/,
    ],
    [
      '{"version": 1, "id": 0, "fields": [{"id": 3, "name": "a", "type": "INT"}], "highestFieldId": 0, "partitionKeys": [], "primaryKeys": ["a"], "options": {}, "timeMillis": 1}',
      /highestFieldId/,
    ],
  ])('refuses garbage %#', (text, message) => {
    const e = failure(() => deserializeSchema(text));
    expect(e).toBeInstanceOf(CorruptMetadataError);
    expect(e.message).toMatch(message);
  });
});
