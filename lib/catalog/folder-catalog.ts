/**
 * The default catalog: tables are folders of the warehouse (`<db>.db/<table>/`), and a small
 * registry object per table (`_catalog/<db>.<table>`) lets `listTables` avoid listing data files.
 */
import { TableAlreadyExistsError, TableNotFoundError } from '../errors.js';
import { listAll, utf8, type ObjectStore } from '../store/object-store.js';
import { parseTableIdentifier } from '../schema/parse.js';
import { createSchemaFile, latestSchema } from '../schema/schema-manager.js';
import { tableLocation } from '../table/paths.js';
import { withIcebergExport } from '../iceberg/export-trigger.js';
import { INLINE_COMPACTION } from '../maintenance/compact-trigger.js';
import { Table } from '../table/table.js';
import { runLimited } from '../concurrency.js';
import { initialSchema, type Catalog, type CreateTableRequest } from './catalog.js';

const REGISTRY = '_catalog/';

/** Catalog over the warehouse folder itself; works on every ObjectStore. */
export class FolderCatalog implements Catalog {
  constructor(readonly store: ObjectStore) {}

  async createTable(name: string, req: CreateTableRequest, opts: { ignoreIfExists?: boolean } = {}): Promise<Table> {
    const id = parseTableIdentifier(name);
    const full = `${id.database}.${id.table}`;
    const path = tableLocation(id.database, id.table);
    const schema = initialSchema(req);
    // Creating schema-0 with put-if-absent is the commit point of the table: of two concurrent
    // creates exactly one wins, and the loser is told the table exists.
    if (!(await createSchemaFile(this.store, path, schema))) {
      if (opts.ignoreIfExists) return this.getTable(full);
      throw new TableAlreadyExistsError(full);
    }
    // The registry entry is only an index for listing; a crash before it leaves a table that
    // getTable still opens and the next create/list repairs.
    await this.store.put(`${REGISTRY}${full}`, utf8(path));
    return new Table(this.store, full, path, schema, withIcebergExport(INLINE_COMPACTION));
  }

  async getTable(name: string): Promise<Table> {
    const id = parseTableIdentifier(name);
    const full = `${id.database}.${id.table}`;
    const path = tableLocation(id.database, id.table);
    const schema = await latestSchema(this.store, path);
    if (!schema) throw new TableNotFoundError(full);
    return new Table(this.store, full, path, schema, withIcebergExport(INLINE_COMPACTION));
  }

  async tableExists(name: string): Promise<boolean> {
    const id = parseTableIdentifier(name);
    return (await latestSchema(this.store, tableLocation(id.database, id.table))) !== undefined;
  }

  async listTables(database?: string): Promise<string[]> {
    const names: string[] = [];
    for (const o of await listAll(this.store, REGISTRY)) {
      const name = o.key.slice(REGISTRY.length);
      if (database && !name.startsWith(`${database}.`)) continue;
      // A registry entry whose table was dropped half-way is not listed.
      if (await this.tableExists(name)) names.push(name);
    }
    return names.sort();
  }

  async dropTable(name: string): Promise<void> {
    const id = parseTableIdentifier(name);
    const full = `${id.database}.${id.table}`;
    const path = tableLocation(id.database, id.table);
    const schemaFiles = await listAll(this.store, `${path}/schema/`);
    if (schemaFiles.length === 0) throw new TableNotFoundError(full);
    // Schema files go first: from then on the table no longer exists for anyone, and what is
    // left below it is unreachable garbage that the rest of this call removes.
    for (const o of schemaFiles) await this.store.delete(o.key);
    await this.store.delete(`${REGISTRY}${full}`);
    const rest = await listAll(this.store, `${path}/`);
    await runLimited(
      rest.map((o) => () => this.store.delete(o.key)),
      16,
    );
  }
}
