/**
 * The schema-change event of a stream: when a stream reaches a snapshot written under a newer
 * schema (after `varve alter`), its rows from there on come in the new schema, and the event says
 * so first — old and new schema ids and what changed, column by column (matched by field id).
 */
import { formatType } from '../schema/type-text.js';
import type { TableSchema } from '../schema/types.js';

/** A stream crossed from schema `from` to schema `to` at `snapshot`. */
export interface SchemaChangeEvent {
  snapshot: number;
  from: number;
  to: number;
  /** What changed, one readable line each: "add column note STRING", "rename column a to b", … */
  changes: string[];
  /** The new schema: the rows that follow have its columns. */
  schema: TableSchema;
}

/** What changed from `from` to `to`, matched by field id, one readable line each. */
function describeSchemaChange(from: TableSchema, to: TableSchema): string[] {
  const out: string[] = [];
  const before = new Map(from.fields.map((f) => [f.id, f]));
  const after = new Map(to.fields.map((f) => [f.id, f]));
  for (const f of from.fields) if (!after.has(f.id)) out.push(`drop column ${f.name}`);
  for (const f of to.fields) {
    const old = before.get(f.id);
    if (!old) {
      out.push(`add column ${f.name} ${formatType(f.type)}`);
      continue;
    }
    if (old.name !== f.name) out.push(`rename column ${old.name} to ${f.name}`);
    if (formatType(old.type) !== formatType(f.type))
      out.push(`change column ${f.name} from ${formatType(old.type)} to ${formatType(f.type)}`);
    if ((old.description ?? '') !== (f.description ?? '')) out.push(`set the comment of column ${f.name}`);
  }
  const kept = (s: TableSchema) =>
    s.fields
      .filter((f) => before.has(f.id) && after.has(f.id))
      .map((f) => f.id)
      .join(',');
  if (kept(from) !== kept(to)) out.push('reorder columns');
  for (const [k, v] of Object.entries(to.options)) if (from.options[k] !== v) out.push(`set option ${k}=${v}`);
  for (const k of Object.keys(from.options)) if (!(k in to.options)) out.push(`reset option ${k}`);
  if ((from.comment ?? '') !== (to.comment ?? '')) out.push('set the table comment');
  return out;
}

/** The event of crossing from schema `from` to `to` at `snapshot`. */
export function schemaChangeEvent(snapshot: number, from: TableSchema, to: TableSchema): SchemaChangeEvent {
  return { snapshot, from: from.id, to: to.id, changes: describeSchemaChange(from, to), schema: to };
}

/** The event as a JSON line, as `varve tail` prints it among the changes. */
export function schemaChangeJsonLine(e: SchemaChangeEvent): string {
  return `${JSON.stringify({
    snapshot: e.snapshot,
    event: 'schema-change',
    from: e.from,
    to: e.to,
    schemaId: e.to,
    changes: e.changes,
    columns: e.schema.fields.map((f) => `${f.name} ${formatType(f.type)}`),
  })}\n`;
}

/** The event as one line for a person (stderr). */
export function schemaChangeText(e: SchemaChangeEvent): string {
  return `schema changed at snapshot ${e.snapshot}: schema ${e.from} -> ${e.to}${e.changes.length ? ` (${e.changes.join('; ')})` : ''}; the changes from here on have the new columns\n`;
}
