/**
 * Column types and the table schema as stored in `schema/schema-<id>`.
 *
 * In-memory (JavaScript) value of each type, used by row-oriented APIs (CLI input, JSON output,
 * min/max key statistics, the merge engines' per-key values):
 *   BOOLEAN → boolean;  TINYINT, SMALLINT, INT → number;  BIGINT → bigint;  FLOAT, DOUBLE → number;
 *   DECIMAL(p,s) → string (canonical decimal text, e.g. "12.50");  STRING → string;
 *   BYTES → Uint8Array;  DATE → number (days since 1970-01-01);
 *   TIMESTAMP(3) → bigint (ms since epoch, UTC);  TIMESTAMP(6) → bigint (µs since epoch, UTC);
 *   NULL → null.
 */

export type TypeRoot =
  | 'BOOLEAN'
  | 'TINYINT'
  | 'SMALLINT'
  | 'INT'
  | 'BIGINT'
  | 'FLOAT'
  | 'DOUBLE'
  | 'DECIMAL'
  | 'STRING'
  | 'BYTES'
  | 'DATE'
  | 'TIMESTAMP';

export interface DataType {
  root: TypeRoot;
  nullable: boolean;
  /** DECIMAL precision (1..38) or TIMESTAMP precision (3 or 6). */
  precision?: number;
  /** DECIMAL scale (0..precision). */
  scale?: number;
}

export interface DataField {
  /** Field id: stable across renames, never reused. */
  id: number;
  name: string;
  type: DataType;
  description?: string;
}

/** The JSON content of `schema/schema-<id>`; never rewritten once created. */
export interface TableSchema {
  version: 1;
  id: number;
  fields: DataField[];
  highestFieldId: number;
  partitionKeys: string[];
  /** Primary key columns, in key order; implicitly NOT NULL. */
  primaryKeys: string[];
  /** Every table option as strings, as given at create time (defaults are not materialised). */
  options: Record<string, string>;
  comment?: string;
  timeMillis: number;
  /**
   * The table's UUID, given at creation and carried by every later schema: a table dropped and
   * created again under the same name has another one. Absent in tables created before UUIDs
   * (their identity is the etag of schema-0; lib/stream/table-identity.ts).
   */
  tableUuid?: string;
}

/** A JavaScript value of some column (see the table above); `null` for SQL NULL. */
export type Value = boolean | number | bigint | string | Uint8Array | null;

/** A row as the row-oriented APIs see it: column name → value. */
export type Row = Record<string, Value>;

/** Row kinds, with Paimon's byte values (stored in `_VALUE_KIND`). */
export const RowKind = { INSERT: 0, UPDATE_BEFORE: 1, UPDATE_AFTER: 2, DELETE: 3 } as const;
export type RowKindByte = 0 | 1 | 2 | 3;
export const ROW_KIND_NAMES = ['+I', '-U', '+U', '-D'] as const;
export type RowKindName = (typeof ROW_KIND_NAMES)[number];

/** True for -U and -D: rows that retract a previous value. */
export function isRetract(kind: number): boolean {
  return kind === RowKind.UPDATE_BEFORE || kind === RowKind.DELETE;
}

/** System column names in data files. */
export const SEQUENCE_COLUMN = '_SEQUENCE_NUMBER';
export const KIND_COLUMN = '_VALUE_KIND';
