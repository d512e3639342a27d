/**
 * The Arrow mapping of varve's column types, and the physical layout of a data file: every table
 * column in schema order, then `_SEQUENCE_NUMBER` (Int64, not null) and `_VALUE_KIND` (Int8, not
 * null). Field ids travel as Arrow field metadata under `varve.field-id`, and under
 * `PARQUET:field_id`, which parquet-rs writes as the Parquet schema's field_id: Iceberg readers
 * (and the Iceberg export, lib/iceberg) find columns by it.
 */
import * as arrow from 'apache-arrow';
import { SchemaMismatchError } from '../errors.js';
import { KIND_COLUMN, SEQUENCE_COLUMN, type DataField, type DataType, type TableSchema } from '../schema/types.js';

/** Arrow field metadata key that carries a column's varve field id. */
const FIELD_ID_KEY = 'varve.field-id';
/** Arrow field metadata key that parquet-rs turns into the Parquet field_id (Iceberg's column identity). */
const PARQUET_FIELD_ID_KEY = 'PARQUET:field_id';

/**
 * Field id of `_SEQUENCE_NUMBER` in files written now: Integer.MAX_VALUE - 201, just below the
 * ids Iceberg reserves for its metadata columns (MAX_VALUE - 200 and up; MAX_VALUE - 1 is `_file`).
 * Files written before carry Paimon's MAX_VALUE - 1; readers find both system columns by name.
 */
const SEQUENCE_FIELD_ID = 2147483446;
/** Field id of `_VALUE_KIND` in files written now: Integer.MAX_VALUE - 202 (before: Paimon's MAX_VALUE - 2, Iceberg's `_pos`). */
const KIND_FIELD_ID = 2147483445;

/** `_SEQUENCE_NUMBER` as a DataField, so row-oriented helpers can read and write it like a column. */
export const SEQUENCE_FIELD: DataField = {
  id: SEQUENCE_FIELD_ID,
  name: SEQUENCE_COLUMN,
  type: { root: 'BIGINT', nullable: false },
};

/** `_VALUE_KIND` as a DataField (TINYINT: 0 +I, 1 -U, 2 +U, 3 -D). */
export const KIND_FIELD: DataField = {
  id: KIND_FIELD_ID,
  name: KIND_COLUMN,
  type: { root: 'TINYINT', nullable: false },
};

/** The Arrow type that stores a varve column type. */
export function toArrowType(t: DataType): arrow.DataType {
  switch (t.root) {
    case 'BOOLEAN':
      return new arrow.Bool();
    case 'TINYINT':
      return new arrow.Int8();
    case 'SMALLINT':
      return new arrow.Int16();
    case 'INT':
      return new arrow.Int32();
    case 'BIGINT':
      return new arrow.Int64();
    case 'FLOAT':
      return new arrow.Float32();
    case 'DOUBLE':
      return new arrow.Float64();
    case 'DECIMAL':
      // Always 128-bit: Parquet stores it as FIXED_LEN_BYTE_ARRAY(16) and every reader agrees on it.
      return new arrow.Decimal(t.scale ?? 0, t.precision ?? 10, 128);
    case 'STRING':
      return new arrow.Utf8();
    case 'BYTES':
      return new arrow.Binary();
    case 'DATE':
      return new arrow.DateDay();
    case 'TIMESTAMP':
      // No time zone: the values are epoch-based instants, the same convention as Parquet's
      // isAdjustedToUTC=false timestamps that parquet-rs writes for a zone-less Arrow type.
      return t.precision === 6 ? new arrow.TimestampMicrosecond() : new arrow.TimestampMillisecond();
  }
}

/**
 * The varve type of an Arrow type, the inverse of `toArrowType`; wider Arrow encodings of the same
 * values (Utf8View, LargeUtf8, LargeBinary, zoned timestamps, Date64) map to the same varve type.
 * Throws SchemaMismatchError naming `column` for a type varve cannot store.
 */
export function fromArrowType(t: arrow.DataType, nullable: boolean, column = '?'): DataType {
  const unsupported = (): never => {
    throw new SchemaMismatchError(
      `column ${column} has Arrow type ${String(t)}, which varve cannot store; use BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DECIMAL(p,s), STRING, BYTES, DATE or TIMESTAMP(3|6)`,
      column,
    );
  };
  if (arrow.DataType.isBool(t)) return { root: 'BOOLEAN', nullable };
  if (arrow.DataType.isInt(t)) {
    if (!t.isSigned) return unsupported();
    const root = ({ 8: 'TINYINT', 16: 'SMALLINT', 32: 'INT', 64: 'BIGINT' } as const)[t.bitWidth];
    return root ? { root, nullable } : unsupported();
  }
  if (arrow.DataType.isFloat(t)) {
    if (t.precision === arrow.Precision.SINGLE) return { root: 'FLOAT', nullable };
    if (t.precision === arrow.Precision.DOUBLE) return { root: 'DOUBLE', nullable };
    return unsupported();
  }
  if (arrow.DataType.isDecimal(t)) {
    if (t.precision < 1 || t.precision > 38 || t.scale < 0 || t.scale > t.precision) return unsupported();
    return { root: 'DECIMAL', nullable, precision: t.precision, scale: t.scale };
  }
  if (arrow.DataType.isUtf8(t) || arrow.DataType.isLargeUtf8(t) || arrow.DataType.isUtf8View(t)) {
    return { root: 'STRING', nullable };
  }
  if (arrow.DataType.isBinary(t) || arrow.DataType.isLargeBinary(t) || arrow.DataType.isBinaryView(t)) {
    return { root: 'BYTES', nullable };
  }
  if (arrow.DataType.isDate(t)) return { root: 'DATE', nullable };
  if (arrow.DataType.isTimestamp(t)) {
    if (t.unit === arrow.TimeUnit.MILLISECOND) return { root: 'TIMESTAMP', nullable, precision: 3 };
    if (t.unit === arrow.TimeUnit.MICROSECOND) return { root: 'TIMESTAMP', nullable, precision: 6 };
    return unsupported();
  }
  return unsupported();
}

/** The Arrow field of a table column: its name, type, nullability and field id (varve's and Parquet's). */
export function toArrowField(f: DataField): arrow.Field {
  const id = String(f.id);
  return new arrow.Field(
    f.name,
    toArrowType(f.type),
    f.type.nullable,
    new Map([
      [FIELD_ID_KEY, id],
      [PARQUET_FIELD_ID_KEY, id],
    ]),
  );
}

/** The Arrow schema of a table's columns, in schema order (no system columns). */
export function tableArrowSchema(schema: TableSchema): arrow.Schema {
  return new arrow.Schema(schema.fields.map(toArrowField));
}

/** The Arrow schema of a data file of the table: its columns, then `_SEQUENCE_NUMBER`, `_VALUE_KIND`. */
export function physicalArrowSchema(schema: TableSchema): arrow.Schema {
  return physicalArrowSchemaOf(schema.fields);
}

/** `physicalArrowSchema` for a bare field list (the fields of some schema version, or a projection). */
export function physicalArrowSchemaOf(fields: DataField[]): arrow.Schema {
  return new arrow.Schema([...fields.map(toArrowField), toArrowField(SEQUENCE_FIELD), toArrowField(KIND_FIELD)]);
}

/**
 * True when two Arrow types store values identically. Stricter than apache-arrow's `compareTypes`,
 * which ignores a Decimal's precision, scale and bit width.
 */
export function arrowTypesEqual(a: arrow.DataType, b: arrow.DataType): boolean {
  if (a.typeId !== b.typeId) return false;
  if (arrow.DataType.isInt(a) && arrow.DataType.isInt(b)) return a.bitWidth === b.bitWidth && a.isSigned === b.isSigned;
  if (arrow.DataType.isFloat(a) && arrow.DataType.isFloat(b)) return a.precision === b.precision;
  if (arrow.DataType.isDecimal(a) && arrow.DataType.isDecimal(b)) {
    return a.precision === b.precision && a.scale === b.scale && a.bitWidth === b.bitWidth;
  }
  if (arrow.DataType.isDate(a) && arrow.DataType.isDate(b)) return a.unit === b.unit;
  if (arrow.DataType.isTimestamp(a) && arrow.DataType.isTimestamp(b)) {
    return a.unit === b.unit && (a.timezone ?? null) === (b.timezone ?? null);
  }
  return arrow.util.compareTypes(a, b);
}

/** The field id recorded in an Arrow field's metadata, or undefined when it carries none. */
export function arrowFieldId(f: arrow.Field): number | undefined {
  const raw = f.metadata.get(FIELD_ID_KEY);
  return raw !== undefined && /^\d+$/.test(raw) ? Number(raw) : undefined;
}
