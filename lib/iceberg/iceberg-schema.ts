/**
 * varve's schema in Iceberg's terms: the table schema JSON (same field ids, types mapped), the
 * identity partition spec of the partition keys, the name mapping for data files written before
 * field ids were stored in Parquet, and partition values as Iceberg's Avro partition tuple wants
 * them. The type mapping is lib/format/iceberg-footer.ts's icebergType (data file footers carry
 * the same schema JSON).
 */
import { icebergType } from '../format/iceberg-footer.js';
import { unescapePathName } from '../schema/partition.js';
import { unscaledDecimalText } from '../schema/decimal-text.js';
import { coerceText } from '../schema/values.js';
import type { DataField, DataType, TableSchema, Value } from '../schema/types.js';
import type { AvroSchema, PartitionAvroField } from './avro-schemas.js';

/** Iceberg's first partition field id (ids below belong to the table schema). */
export const FIRST_PARTITION_FIELD_ID = 1000;

/** A field of an Iceberg schema JSON. */
export interface IcebergField {
  id: number;
  name: string;
  required: boolean;
  type: string;
  doc?: string;
}

/** An Iceberg schema JSON (`schemas[]` of the table metadata). */
export interface IcebergSchema {
  type: 'struct';
  'schema-id': number;
  'identifier-field-ids'?: number[];
  fields: IcebergField[];
}

/** An Iceberg partition spec JSON. */
export interface IcebergPartitionSpec {
  'spec-id': number;
  fields: Array<{ name: string; transform: 'identity'; 'source-id': number; 'field-id': number }>;
}

/** The Iceberg schema JSON of a varve schema: same id, same field ids; the primary key as identifier fields. */
export function icebergSchemaOf(schema: TableSchema): IcebergSchema {
  const fields = schema.fields.map((f) => ({
    id: f.id,
    name: f.name,
    required: !f.type.nullable,
    type: icebergType(f.type),
    ...(f.description ? { doc: f.description } : {}),
  }));
  const ids = schema.primaryKeys.map((k) => schema.fields.find((f) => f.name === k)!.id);
  return { type: 'struct', 'schema-id': schema.id, ...(ids.length > 0 ? { 'identifier-field-ids': ids } : {}), fields };
}

/** The identity partition spec (id 0) of the partition keys, partition field ids from 1000 in key order. */
export function icebergPartitionSpecOf(schema: TableSchema): IcebergPartitionSpec {
  return {
    'spec-id': 0,
    fields: schema.partitionKeys.map((k, i) => ({
      name: k,
      transform: 'identity',
      'source-id': partitionSource(schema, k).id,
      'field-id': FIRST_PARTITION_FIELD_ID + i,
    })),
  };
}

function partitionSource(schema: TableSchema, key: string): DataField {
  return schema.fields.find((f) => f.name === key)!;
}

/**
 * Iceberg's `schema.name-mapping.default`: each field id with every name it had in `schemas`, so
 * a reader matches the columns of data files written without Parquet field ids by name.
 */
export function nameMappingOf(schemas: readonly IcebergSchema[]): string {
  const names = new Map<number, Set<string>>();
  for (const s of schemas) {
    for (const f of s.fields) {
      let set = names.get(f.id);
      if (!set) names.set(f.id, (set = new Set()));
      set.add(f.name);
    }
  }
  return JSON.stringify(
    [...names].sort((a, b) => a[0] - b[0]).map(([id, set]) => ({ 'field-id': id, names: [...set] })),
  );
}

/** The Avro type (Iceberg's Avro mapping) of a partition column's values. */
function avroTypeOf(t: DataType, fieldId: number): AvroSchema {
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
      // Iceberg writes decimals as the smallest fixed that holds the precision.
      return {
        type: 'fixed',
        name: `decimal_${fieldId}`,
        size: decimalBytes(t.precision ?? 10),
        logicalType: 'decimal',
        precision: t.precision ?? 10,
        scale: t.scale ?? 0,
      };
    case 'STRING':
      return 'string';
    case 'BYTES':
      return 'bytes';
    case 'DATE':
      return { type: 'int', logicalType: 'date' };
    case 'TIMESTAMP':
      return { type: 'long', logicalType: 'timestamp-micros', 'adjust-to-utc': false };
  }
}

/** The Avro fields of the partition tuple of `spec`. */
export function partitionAvroFields(schema: TableSchema, spec: IcebergPartitionSpec): PartitionAvroField[] {
  return spec.fields.map((p) => {
    const source = schema.fields.find((f) => f.id === p['source-id'])!;
    return { name: p.name, fieldId: p['field-id'], type: avroTypeOf(source.type, p['field-id']) };
  });
}

/** Bytes of the smallest two's-complement integer that holds every unscaled value of `precision` digits. */
export function decimalBytes(precision: number): number {
  let bytes = 1;
  while (2n ** BigInt(8 * bytes - 1) <= 10n ** BigInt(precision)) bytes++;
  return bytes;
}

/** Big-endian two's complement of `n` in exactly `size` bytes. */
export function twosComplement(n: bigint, size: number): Uint8Array {
  const out = new Uint8Array(size);
  let v = BigInt.asUintN(8 * size, n);
  for (let i = size - 1; i >= 0; i--) {
    out[i] = Number(v & 0xffn);
    v >>= 8n;
  }
  return out;
}

/** The value a partition tuple holds for a varve value (Avro encoding of Iceberg's types); longs as bigint. */
export function partitionAvroValue(t: DataType, v: Value): unknown {
  if (v === null) return null;
  switch (t.root) {
    case 'BIGINT':
      return BigInt(v as bigint);
    case 'TIMESTAMP':
      // Iceberg timestamps are microseconds.
      return t.precision === 6 ? (v as bigint) : (v as bigint) * 1000n;
    case 'DECIMAL':
      return Buffer.from(
        twosComplement(BigInt(unscaledDecimalText(v as string, t.scale ?? 0)), decimalBytes(t.precision ?? 10)),
      );
    case 'BYTES':
      return Buffer.from(v as Uint8Array);
    default:
      return v;
  }
}

/**
 * The typed partition values of a partition path (`dt=2024-01-01/region=eu`), in spec order. The
 * default partition name stands for NULL, or for "" in a NOT NULL string column (varve writes both the same way).
 */
export function partitionValuesOf(schema: TableSchema, path: string, defaultName: string): Value[] {
  if (schema.partitionKeys.length === 0) return [];
  const segments = path.split('/');
  return schema.partitionKeys.map((k, i) => {
    const f = partitionSource(schema, k);
    const seg = segments[i] ?? '';
    const text = unescapePathName(seg.slice(seg.indexOf('=') + 1));
    if (text === defaultName)
      return f.type.nullable ? null : f.type.root === 'STRING' ? '' : coerceText(f, text, undefined, { quoted: true });
    return coerceText(f, text, undefined, { quoted: true });
  });
}
