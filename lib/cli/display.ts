/**
 * Records of Arrow results for printing (`read`, `audit-log`): loaded by those commands' actions,
 * not by the command declarations (lib/cli/main.ts), so `varve --help` loads no Arrow.
 */
import type * as arrow from 'apache-arrow';
import { tableToRows } from '../format/columns.js';
import { arrowTypesEqual, fromArrowType, toArrowType } from '../format/arrow-schema.js';
import { toDisplayValue } from '../schema/values.js';
import { KIND_COLUMN, ROW_KIND_NAMES, SEQUENCE_COLUMN, type DataField } from '../schema/types.js';
import type { DisplayValue } from './output.js';

/** Records of an Arrow result for printing; `_VALUE_KIND` becomes `rowkind`, sequence numbers stay numbers. */
export function displayRecords(
  table: arrow.Table,
  fields: DataField[],
): { columns: string[]; records: Array<Record<string, DisplayValue>> } {
  const names = table.schema.fields.map((f) => f.name);
  // The result's own columns and types: a snapshot read through an older schema (time travel) has
  // other names, or narrower types under the same names (before a widening), than `fields`.
  const used = table.schema.fields
    .filter((a) => a.name !== KIND_COLUMN && a.name !== SEQUENCE_COLUMN)
    .map(
      (a, i): DataField =>
        fields.find((f) => f.name === a.name && arrowTypesEqual(toArrowType(f.type), a.type)) ?? {
          id: -1 - i,
          name: a.name,
          type: fromArrowType(a.type, a.nullable, a.name),
        },
    );
  const rows = tableToRows(table.select(used.map((f) => f.name)), used);
  const hasKind = names.includes(KIND_COLUMN);
  const kinds = hasKind ? (table.getChild(KIND_COLUMN)!.toArray() as Int8Array) : undefined;
  const seqs = names.includes(SEQUENCE_COLUMN) ? table.getChild(SEQUENCE_COLUMN)!.toArray() : undefined;
  const columns = [...(hasKind ? ['rowkind'] : []), ...used.map((f) => f.name)];
  const records = rows.map((row, i) => {
    const rec: Record<string, DisplayValue> = {};
    if (kinds) rec.rowkind = ROW_KIND_NAMES[kinds[i]];
    for (const f of used)
      rec[f.name] = row[f.name] === null ? null : (toDisplayValue(f.type, row[f.name]) as DisplayValue);
    if (seqs) rec[SEQUENCE_COLUMN] = Number(seqs[i]);
    return rec;
  });
  return { columns, records };
}
