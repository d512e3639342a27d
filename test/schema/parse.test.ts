import { describe, expect, it } from 'vitest';
import { InvalidArgumentError, SchemaError } from '../../lib/errors.js';
import {
  formatSchemaText,
  formatType,
  parseSchemaJson,
  parseSchemaText,
  parseTableIdentifier,
} from '../../lib/schema/parse.js';
import type { DataType } from '../../lib/schema/types.js';

/** The type of the single column of `text`. */
function typeOf(text: string): DataType {
  return parseSchemaText(`c ${text}`)[0].type;
}

function schemaError(f: () => unknown): SchemaError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(SchemaError);
    return e as SchemaError;
  }
  throw new Error('expected a SchemaError');
}

describe('parseSchemaText', () => {
  it('parses the example with ids, nullability and parameters', () => {
    // Act
    const fields = parseSchemaText('order_id BIGINT NOT NULL, status STRING, amount DECIMAL(10,2), ts TIMESTAMP(3)');

    // Assess
    expect(fields).toEqual([
      { id: 0, name: 'order_id', type: { root: 'BIGINT', nullable: false } },
      { id: 1, name: 'status', type: { root: 'STRING', nullable: true } },
      { id: 2, name: 'amount', type: { root: 'DECIMAL', nullable: true, precision: 10, scale: 2 } },
      { id: 3, name: 'ts', type: { root: 'TIMESTAMP', nullable: true, precision: 3 } },
    ]);
  });

  it.each([
    ['BOOLEAN', 'BOOLEAN'],
    ['bool', 'BOOLEAN'],
    ['TINYINT', 'TINYINT'],
    ['SmallInt', 'SMALLINT'],
    ['INT', 'INT'],
    ['integer', 'INT'],
    ['BIGINT', 'BIGINT'],
    ['FLOAT', 'FLOAT'],
    ['real', 'FLOAT'],
    ['DOUBLE', 'DOUBLE'],
    ['double precision', 'DOUBLE'],
    ['STRING', 'STRING'],
    ['varchar', 'STRING'],
    ['VARCHAR(255)', 'STRING'],
    ['CHAR(3)', 'STRING'],
    ['text', 'STRING'],
    ['BYTES', 'BYTES'],
    ['binary', 'BYTES'],
    ['VARBINARY(16)', 'BYTES'],
    ['bytea', 'BYTES'],
    ['DATE', 'DATE'],
  ])('reads type %s as %s', (text, root) => {
    expect(typeOf(text)).toEqual({ root, nullable: true });
  });

  it('gives DECIMAL and TIMESTAMP their defaults and aliases', () => {
    expect(typeOf('DECIMAL')).toEqual({ root: 'DECIMAL', nullable: true, precision: 10, scale: 0 });
    expect(typeOf('numeric(38, 38)')).toEqual({ root: 'DECIMAL', nullable: true, precision: 38, scale: 38 });
    expect(typeOf('DECIMAL(5)')).toEqual({ root: 'DECIMAL', nullable: true, precision: 5, scale: 0 });
    expect(typeOf('TIMESTAMP')).toEqual({ root: 'TIMESTAMP', nullable: true, precision: 6 });
    expect(typeOf('timestamp(6)')).toEqual({ root: 'TIMESTAMP', nullable: true, precision: 6 });
  });

  it('reads NOT NULL, NULL and comments in any order', () => {
    const [a, b, c] = parseSchemaText(
      "a INT not null COMMENT 'the ''a''', b STRING NULL, c DATE COMMENT 'day' NOT NULL",
    );
    expect(a).toEqual({ id: 0, name: 'a', type: { root: 'INT', nullable: false }, description: "the 'a'" });
    expect(b.type.nullable).toBe(true);
    expect(c).toMatchObject({ description: 'day', type: { nullable: false } });
  });

  it('reads quoted identifiers with backticks and double quotes', () => {
    const fields = parseSchemaText('`order id` BIGINT, "weird""name" STRING, `NOT` INT, `a``b` DATE');
    expect(fields.map((f) => f.name)).toEqual(['order id', 'weird"name', 'NOT', 'a`b']);
  });

  it('keeps the comma inside DECIMAL(p,s) within the column', () => {
    const fields = parseSchemaText('a DECIMAL(12, 4) NOT NULL,b INT');
    expect(fields).toHaveLength(2);
    expect(fields[0].type).toEqual({ root: 'DECIMAL', nullable: false, precision: 12, scale: 4 });
  });

  it('round-trips through formatSchemaText', () => {
    // Prepare
    const text =
      "id BIGINT NOT NULL COMMENT 'key', `the name` VARCHAR(10), `NULL` BOOLEAN, amount NUMERIC(20,3) NOT NULL, " +
      "f REAL, d DOUBLE PRECISION, b BYTEA, day DATE, t TIMESTAMP, t3 TIMESTAMP(3) NOT NULL COMMENT 'it''s'";
    const fields = parseSchemaText(text);

    // Act
    const printed = formatSchemaText(fields);

    // Assess
    expect(parseSchemaText(printed)).toEqual(fields);
    expect(printed).toContain('`the name` STRING');
    expect(printed).toContain('amount DECIMAL(20,3) NOT NULL');
  });
});

describe('parseSchemaText errors', () => {
  it('rejects an empty schema', () => {
    expect(schemaError(() => parseSchemaText('   ')).message).toMatch(/empty schema/);
  });

  it.each([
    ['a INT,', /position 7.*expected a column name/],
    ['a', /column "a" has no type/],
    ['a INT b STRING', /position 7 \(column "a"\).*unexpected "b"/],
    ['a DECIMAL(10,2', /expected a closing parenthesis/],
    ["a INT COMMENT 'open", /quote ' opened at position 15 is never closed/],
    ['a INT NOT', /expected NULL after NOT/],
    ['a INT NOT NULL NULL', /both NULL and NOT NULL/],
    ['a INT; b INT', /position 6 \(column "a"\): unexpected ";"/],
    ['a INT, ? STRING', /position 8: expected a column name, found "\?"/],
    ['a INT(3)', /INT takes no parameters/],
    ['a VARCHAR(0)', /one positive length/],
  ])('reports malformed text %j with its position', (text, message) => {
    expect(schemaError(() => parseSchemaText(text)).message).toMatch(message);
  });

  it('names an unknown type and lists the known ones', () => {
    const e = schemaError(() => parseSchemaText('id BIGINT, tags ARRAY<STRING>'));
    expect(e.message).toMatch(/position 17 \(column "tags"\): unknown type ARRAY/);
    expect(e.message).toContain('known types: BOOLEAN');
    expect(e.message).toContain('TIMESTAMP(6)');
    expect(e.field).toBe('tags');
  });

  it('rejects unsupported TIMESTAMP precisions and says which are allowed', () => {
    const e = schemaError(() => parseSchemaText('t TIMESTAMP(9)'));
    expect(e.message).toMatch(/TIMESTAMP\(9\) is not supported; use TIMESTAMP\(3\).*TIMESTAMP\(6\)/);
  });

  it.each([
    ['d DECIMAL(0,0)', /precision 0 is out of range; use 1 to 38/],
    ['d DECIMAL(39,2)', /precision 39 is out of range/],
    ['d DECIMAL(5,6)', /scale larger than its precision/],
  ])('checks DECIMAL bounds: %s', (text, message) => {
    expect(schemaError(() => parseSchemaText(text)).message).toMatch(message);
  });

  it('rejects duplicate columns case-insensitively', () => {
    const e = schemaError(() => parseSchemaText('id BIGINT, name STRING, ID INT'));
    expect(e.message).toMatch(/duplicate column "ID" \(same as "id"/);
    expect(e.message).toMatch(/position 25/);
  });

  it('rejects reserved system column names', () => {
    expect(schemaError(() => parseSchemaText('_SEQUENCE_NUMBER BIGINT')).message).toMatch(/reserved/);
    expect(schemaError(() => parseSchemaText('_KEY_id BIGINT')).message).toMatch(/reserved/);
  });
});

describe('parseSchemaJson', () => {
  it('reads an array of {name, type} with the same type grammar', () => {
    const fields = parseSchemaJson(
      '[{"name":"a","type":"BIGINT NOT NULL"},{"name":"b","type":"decimal(10, 2)","description":"money"}]',
    );
    expect(fields).toEqual([
      { id: 0, name: 'a', type: { root: 'BIGINT', nullable: false } },
      { id: 1, name: 'b', type: { root: 'DECIMAL', nullable: true, precision: 10, scale: 2 }, description: 'money' },
    ]);
  });

  it('reads {"fields": [...]} and already parsed values', () => {
    const fields = parseSchemaJson({ fields: [{ name: 'x', type: 'TIMESTAMP(3)', nullable: false }] });
    expect(fields).toEqual([{ id: 0, name: 'x', type: { root: 'TIMESTAMP', nullable: false, precision: 3 } }]);
  });

  it.each([
    ['{not json', /malformed/],
    ['{"columns": []}', /must be an array of columns/],
    ['[]', /empty schema/],
    ['[{"name": "a"}]', /"type" must be a type string/],
    ['[{"name": "a", "type": "BLOB"}]', /column 1 \("a"\).*unknown type BLOB/],
    ['[{"name": "a", "type": "INT"}, {"name": "A", "type": "INT"}]', /duplicate column "A"/],
    ['[{"name": "a", "type": "INT NOT NULL", "nullable": true}]', /contradicts NOT NULL/],
  ])('rejects %s', (json, message) => {
    expect(schemaError(() => parseSchemaJson(json)).message).toMatch(message);
  });
});

describe('formatType', () => {
  it('prints parameters and NOT NULL', () => {
    expect(formatType({ root: 'DECIMAL', nullable: false, precision: 10, scale: 2 })).toBe('DECIMAL(10,2) NOT NULL');
    expect(formatType({ root: 'TIMESTAMP', nullable: true, precision: 3 })).toBe('TIMESTAMP(3)');
    expect(formatType({ root: 'BYTES', nullable: true })).toBe('BYTES');
  });
});

describe('parseTableIdentifier', () => {
  it('splits db.table and defaults the database', () => {
    expect(parseTableIdentifier('sales.orders')).toEqual({ database: 'sales', table: 'orders' });
    expect(parseTableIdentifier('orders_2024-q1')).toEqual({ database: 'default', table: 'orders_2024-q1' });
  });

  it.each([
    ['a/b', /path separator/],
    ['db.a\\b', /path separator/],
    ['..', /contains "\.\."/],
    ['db..t', /contains "\.\."/],
    ['../etc', /path separator/],
    ['.t', /empty part/],
    ['db.', /empty part/],
    ['', /empty table name/],
    ['a.b.c', /2 dots/],
    ['my table', /whitespace/],
    ['-x', /invalid part "-x"/],
    ['x'.repeat(129), /longer than 128/],
  ])('rejects %j and says what a valid name looks like', (name, why) => {
    let error: unknown;
    try {
      parseTableIdentifier(name);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect((error as Error).message).toMatch(why);
    expect((error as Error).message).toContain('"database.table"');
  });
});
