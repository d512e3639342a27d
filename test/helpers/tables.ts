/**
 * Tables for tests: a table in a fresh in-memory catalog (or on a given store) from a schema text,
 * and its merged rows read back as row objects.
 */
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { tableToRows } from '../../lib/format/columns.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import type { DataField, Row } from '../../lib/schema/types.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import type { ObjectStore } from '../../lib/store/object-store.js';
import type { Table } from '../../lib/table/table.js';

/** What testTable creates. */
export interface TestTableSpec {
  /** Columns as `varve create` takes them (`id BIGINT, v STRING`), or as fields. */
  schema: string | DataField[];
  primaryKeys?: string[];
  partitionKeys?: string[];
  options?: Record<string, string>;
  /** Default: a new MemoryStore. */
  store?: ObjectStore;
  /** Default: db.t. */
  name?: string;
}

/** A new table in a folder catalog on `spec.store` (a fresh MemoryStore by default). */
export function testTable(spec: TestTableSpec): Promise<Table> {
  const fields = typeof spec.schema === 'string' ? parseSchemaText(spec.schema) : spec.schema;
  return new FolderCatalog(spec.store ?? new MemoryStore()).createTable(spec.name ?? 'db.t', {
    fields,
    primaryKeys: spec.primaryKeys,
    partitionKeys: spec.partitionKeys,
    options: spec.options,
  });
}

/** The table's merged rows (at the latest snapshot unless `opts` says otherwise) as row objects. */
export async function readRows(table: Table, opts: Parameters<Table['read']>[0] = {}): Promise<Row[]> {
  return tableToRows(await table.read(opts), table.schema.fields);
}

/** The table's merged rows (latest snapshot unless `opts` says otherwise) as sorted texts of `columns` joined by ':' (`1:active`): states compared at a glance. */
export async function rowTexts(
  table: Table,
  columns: string[],
  opts: Parameters<Table['read']>[0] = {},
): Promise<string[]> {
  return (await table.read(opts))
    .toArray()
    .map((r) => columns.map((c) => String(r[c])).join(':'))
    .sort();
}
