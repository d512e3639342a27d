/**
 * ALTER TABLE: applies schema changes as a new schema file (`schema/schema-<id+1>`, created with
 * put-if-absent, the commit point of the change) and then commits an empty snapshot recording the
 * new schema id, so streams, time travel and concurrent writers see where the schema changed.
 */
import { CommitConflictError, SchemaChangedError } from '../errors.js';
import { applySchemaChanges, type SchemaChange } from '../schema/schema-evolution.js';
import { createSchemaFile } from '../schema/schema-manager.js';
import type { TableSchema } from '../schema/types.js';
import type { ActionPlan, CommitAction, CommitRequest } from '../snapshot/commit.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import { commitToTable } from './table-commit.js';
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
 * The `alter` action: its plan applies the changes to the newest schema and creates the next
 * schema file (put-if-absent: the commit point of the change); another alter that took that id
 * first is a conflict it plans again from. Once its schema file exists the plan is the empty
 * snapshot recording it, whatever the base.
 */
class AlterAction implements CommitAction {
  readonly name = 'alter';
  planned?: { schema: TableSchema; view: Table; plan: ActionPlan };

  constructor(
    private readonly table: Table,
    private readonly changes: readonly SchemaChange[],
    private readonly now: number | undefined,
  ) {}

  async plan(): Promise<ActionPlan> {
    if (this.planned) return this.planned.plan;
    const current = await this.table.latest();
    const next = applySchemaChanges(current.schema, this.changes, this.now ?? Date.now());
    if (!(await createSchemaFile(this.table.store, this.table.path, next))) {
      throw new CommitConflictError(
        `${this.table.name}: another alter created schema ${next.id} first; the changes are applied again on top of it`,
      );
    }
    const changes: CommitRequest = {
      commitUser: 'varve-alter',
      commitIdentifier: `schema-${next.id}`,
      kind: 'APPEND',
      schemaId: next.id,
      batches: [],
      allowEmpty: true,
      properties: { [SCHEMA_CHANGE_PROPERTY]: String(next.id) },
    };
    this.planned = {
      schema: next,
      view: this.table.withSchema(next),
      plan: { changes, requirements: { schemaId: next.id } },
    };
    return this.planned.plan;
  }

  /** Lost the schema id to another alter: apply the changes again on what it made (or fail when they no longer apply). */
  async onConflict(): Promise<boolean> {
    return this.planned === undefined;
  }
}

/**
 * Applies `changes` to the table's newest schema and records it in a snapshot (through the one
 * commit loop, hooks included). A concurrent alter that took the next schema id first makes this
 * one re-apply its changes on top of it (or fail when they no longer apply).
 */
export async function alterTable(
  table: Table,
  changes: readonly SchemaChange[],
  opts: { now?: number } = {},
): Promise<AlterResult> {
  const action = new AlterAction(table, changes, opts.now);
  try {
    // The hooks after the alter's commit see the table it made: the Iceberg export of that commit
    // already follows the new schema and options (metadata.iceberg.*).
    const result = await commitToTable(table, action, {}, () => action.planned?.view ?? table);
    const { schema, view } = action.planned!;
    return { schema, table: view, snapshot: result.snapshot };
  } catch (e) {
    // A later alter's snapshot landed first: it records a schema that includes this change.
    if (e instanceof SchemaChangedError && action.planned)
      return { schema: action.planned.schema, table: action.planned.view };
    throw e;
  }
}
