/**
 * What every CLI command starts from: the warehouse (a folder by default, `s3://…` on AWS) and
 * its catalog, plus the conversions from Arrow results to printable records.
 */
import type * as arrow from 'apache-arrow';
import type { Command } from 'commander';
import type { Catalog } from '../catalog/catalog.js';
import { openCatalog as openCatalogFor } from '../catalog/open-catalog.js';
import { tableToRows } from '../format/columns.js';
import { arrowTypesEqual, fromArrowType, toArrowType } from '../format/arrow-schema.js';
import { toDisplayValue } from '../schema/values.js';
import { KIND_COLUMN, ROW_KIND_NAMES, SEQUENCE_COLUMN, type DataField } from '../schema/types.js';
import type { DisplayValue } from './output.js';

/** Where a command prints: stdout for its output, stderr for status lines. */
export type Out = (text: string) => void;

/** What every command gets when it registers itself with the program. */
export interface CliContext {
  program: Command;
  /** The catalog of the warehouse the global flags name (read when the command runs). */
  catalog(): Catalog;
  /** The command's output (stdout). */
  out: Out;
  /** Status lines (stderr), so that stdout stays the command's output alone. */
  status: Out;
}

/** The warehouse a command uses: the flag, else VARVE_WAREHOUSE, else ./warehouse. */
export function warehouseUri(flag?: string): string {
  return flag ?? process.env.VARVE_WAREHOUSE ?? './warehouse';
}

/** Opens the catalog of a warehouse URI (DynamoDB when VARVE_CATALOG_TABLE is set, else the folder catalog). */
export function openCatalog(uri: string): Catalog {
  return openCatalogFor(uri);
}

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
