/**
 * The `iceberg.schema` key of a data file's Parquet footer, as Iceberg's own writers put it there:
 * the Iceberg schema JSON of the file's columns (field ids, the names they have in this file, types
 * in Iceberg's terms), so a reader that maps field ids to the file's column names through it
 * (icebird does) reads a column renamed since under its old name. The system columns are not
 * table columns and stay out. Also the one home of varve's type mapping to Iceberg's type names.
 */
import type * as arrow from 'apache-arrow';
import type { DataType } from '../schema/types.js';
import { arrowFieldId, fromArrowType } from './arrow-schema.js';

/** The Parquet key-value metadata key Iceberg writers store the file's schema under. */
export const ICEBERG_SCHEMA_KEY = 'iceberg.schema';
/** The key-value metadata key varve writes the file's schema id under. */
const SCHEMA_ID_KEY = 'varve.schema-id';

/**
 * The Iceberg type name of a varve column type: BOOLEAN boolean; TINYINT, SMALLINT, INT int;
 * BIGINT long; FLOAT float; DOUBLE double; DECIMAL(p,s) decimal(p,s); STRING string; BYTES
 * binary; DATE date; TIMESTAMP(3|6) timestamp (without zone, like varve's).
 */
export function icebergType(t: DataType): string {
  switch (t.root) {
    case 'BOOLEAN':
      return 'boolean';
    case 'TINYINT':
    case 'SMALLINT':
    case 'INT':
      return 'int';
    case 'BIGINT':
      return 'long';
    case 'FLOAT':
      return 'float';
    case 'DOUBLE':
      return 'double';
    case 'DECIMAL':
      return `decimal(${t.precision ?? 10}, ${t.scale ?? 0})`;
    case 'STRING':
      return 'string';
    case 'BYTES':
      return 'binary';
    case 'DATE':
      return 'date';
    case 'TIMESTAMP':
      return 'timestamp';
  }
}

/**
 * `metadata` plus `iceberg.schema` for a data file of `schema` (the data file layout: table
 * columns, then the two system columns); unchanged when a table column carries no field id or
 * the caller set the key itself.
 */
export function withIcebergSchema(schema: arrow.Schema, metadata: Record<string, string>): Record<string, string> {
  if (ICEBERG_SCHEMA_KEY in metadata) return metadata;
  const columns = schema.fields.slice(0, -2);
  const fields: Array<{ id: number; name: string; required: boolean; type: string }> = [];
  for (const f of columns) {
    const id = arrowFieldId(f);
    if (id === undefined) return metadata;
    fields.push({
      id,
      name: f.name,
      required: !f.nullable,
      type: icebergType(fromArrowType(f.type, f.nullable, f.name)),
    });
  }
  const schemaId = metadata[SCHEMA_ID_KEY];
  const json = {
    type: 'struct',
    ...(schemaId !== undefined && /^\d+$/.test(schemaId) ? { 'schema-id': Number(schemaId) } : {}),
    fields,
  };
  return { ...metadata, [ICEBERG_SCHEMA_KEY]: JSON.stringify(json) };
}
