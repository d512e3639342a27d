/**
 * ALTER TABLE: applies schema changes as a new schema file (`schema/schema-<id+1>`, created with
 * put-if-absent, the commit point of the change) and then commits an empty snapshot recording the
 * new schema id, so streams, time travel and concurrent writers see where the schema changed.
 */
import { SchemaChangedError } from '../errors.js';
import { applySchemaChanges, type SchemaChange } from '../schema/schema-evolution.js';
import { createSchemaFile } from '../schema/schema-manager.js';
import type { TableSchema } from '../schema/types.js';
import { commit } from '../snapshot/commit.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import { publishCommit } from './commit-events.js';
import { commitOptionsFor } from './commit-options.js';
import type { Table } from './table.js';

/** Snapshot property naming the schema a schema-change snapshot introduced. */
const SCHEMA_CHANGE_PROPERTY = 'varve.schema-change';

/** What an alter did. */
export interface AlterResult {
  /** The new schema. */
  schema: TableSchema;
  /** The table seen through the new schema. */
  table: Table;
  /** The snapshot recording the schema change (undefined when a later alter already recorded a newer one). */
  snapshot?: Snapshot;
}

/**
 * Applies `changes` to the table's newest schema. A concurrent alter that took the next schema id
 * first makes this one re-apply its changes on top of it (or fail when they no longer apply).
 */
export async function alterTable(table: Table, changes: readonly SchemaChange[], opts: { now?: number } = {}): Promise<AlterResult> {
  for (let attempt = 0; ; attempt++) {
    const current = await table.latest();
    const next = applySchemaChanges(current.schema, changes, opts.now ?? Date.now());
    // Creating schema-<id+1> if absent is the commit point of the change; losing means another
    // alter took the id, and the changes are checked again against what it made.
    if (!(await createSchemaFile(table.store, table.path, next))) {
      if (attempt >= 20) throw new SchemaChangedError(`${table.name}: gave up altering after ${attempt + 1} concurrent schema changes; retry`, current.schema.id, next.id);
      continue;
    }
    const view = table.withSchema(next);
    try {
      const result = await commit(
        table.store,
        table.path,
        {
          commitUser: 'varve-alter',
          commitIdentifier: `schema-${next.id}`,
          kind: 'APPEND',
          schemaId: next.id,
          batches: [],
          allowEmpty: true,
          properties: { [SCHEMA_CHANGE_PROPERTY]: String(next.id) },
        },
        commitOptionsFor(view),
      );
      if (result.committed) publishCommit({ warehouse: table.store.uri, table: table.name, snapshot: result.snapshot });
      return { schema: next, table: view, snapshot: result.snapshot };
    } catch (e) {
      // A later alter's snapshot landed first: it records a schema that includes this change.
      if (e instanceof SchemaChangedError) return { schema: next, table: view };
      throw e;
    }
  }
}
