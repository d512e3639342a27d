/**
 * The table registry: maps `database.table` names to table locations in the warehouse. The folder
 * catalog (default) keeps everything in the warehouse itself; the DynamoDB catalog keeps the
 * registry in a DynamoDB table so tables are listed without touching S3.
 */
import { randomUUID } from 'node:crypto';
import type { ObjectStore } from '../store/object-store.js';
import { createTableSchema } from '../schema/parse.js';
import type { DataField, TableSchema } from '../schema/types.js';
import type { Table } from '../table/table.js';

/** What a user gives to create a table. */
export interface CreateTableRequest {
  fields: DataField[];
  /** Primary key columns; none (or empty) makes an append table: rows are kept as written, never merged. */
  primaryKeys?: string[];
  partitionKeys?: string[];
  options?: Record<string, string>;
  comment?: string;
}

export interface Catalog {
  /** The warehouse the catalog's tables live in. */
  readonly store: ObjectStore;
  /** Creates a table; throws TableAlreadyExistsError (unless ignoreIfExists, then returns it). */
  createTable(name: string, req: CreateTableRequest, opts?: { ignoreIfExists?: boolean }): Promise<Table>;
  /** Opens a table at its latest schema; throws TableNotFoundError. */
  getTable(name: string): Promise<Table>;
  tableExists(name: string): Promise<boolean>;
  /** Every table as `database.table`, sorted. */
  listTables(database?: string): Promise<string[]>;
  /** Removes a table and every file under it; throws TableNotFoundError. */
  dropTable(name: string): Promise<void>;
}

/** The first schema (id 0) of a table created from `req`; validates it (SchemaError, OptionError). */
export function initialSchema(req: CreateTableRequest): TableSchema {
  return createTableSchema({
    fields: req.fields,
    primaryKeys: req.primaryKeys ?? [],
    partitionKeys: req.partitionKeys ?? [],
    options: req.options ?? {},
    comment: req.comment,
    // The table's identity for consumers, leases and progress (lib/stream/table-identity.ts).
    tableUuid: randomUUID(),
  });
}
