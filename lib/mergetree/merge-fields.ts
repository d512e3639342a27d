/** How the merge engines see a schema's columns: keys, NOT NULL columns, option column references. */
import { OptionError } from '../errors.js';
import type { TableSchema } from '../schema/types.js';

/** Position of each named column, or an OptionError naming the option that referenced it. */
export function columnPositions(schema: TableSchema, names: string[], option: string): number[] {
  return names.map((n) => {
    const i = schema.fields.findIndex((f) => f.name === n);
    if (i < 0) {
      throw new OptionError(
        `${option} names column ${n}, which ${schema.fields.length ? `is not one of ${schema.fields.map((f) => f.name).join(', ')}` : 'does not exist'}`,
        option,
      );
    }
    return i;
  });
}

/** Per column: true when it can never be NULL (declared NOT NULL, or part of the primary key). */
export function notNullColumns(schema: TableSchema): boolean[] {
  return schema.fields.map((f) => !f.type.nullable || schema.primaryKeys.includes(f.name));
}

/** Checks that every per-column option of `record` names an existing column. */
export function checkColumnOptions(
  schema: TableSchema,
  record: Record<string, unknown> | string[],
  optionOf: (col: string) => string,
): void {
  const names = Array.isArray(record) ? record : Object.keys(record);
  for (const n of names) columnPositions(schema, [n], optionOf(n));
}
