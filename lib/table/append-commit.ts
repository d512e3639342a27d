/**
 * The APPEND commit of one or more writer batches: one snapshot however many batches (the group
 * commit folds many writers' batches this way), with the table's commit settings, and the table's
 * commit hooks around it as a writer's commit runs them (commit-hooks.ts: the catalogs pass
 * inline compaction and the Iceberg export). What follows a commit on a deployment (events,
 * metrics, compaction jobs) is the caller's `AfterAppend`.
 */
import type { Snapshot } from '../snapshot/snapshot.js';
import {
  requestAction,
  type CommitAction,
  type CommitBatch,
  type CommitOptions,
  type CommitRequest,
} from '../snapshot/commit.js';
import type { TouchedBucket } from './commit-hooks.js';
import { commitToTable, touchedBy as touchedByChanges } from './table-commit.js';
import { dataFileKey } from './paths.js';
import type { Table } from './table.js';

/** Who commits and how the commit recognises itself when retried. */
export interface AppendSpec {
  /** Stable per table and role (`ingest`, `group-commit`, a stream sink): idempotence is per user. */
  commitUser: string;
  /** Derived from the input, never from a random value: a retry finds its own commit. */
  commitIdentifier: string;
  /** The schema the batches were written with. @default the table's current schema */
  schemaId?: number;
  properties?: Record<string, string>;
  /** Overrides of the table's commit settings (caches kept across calls, a retry counter). */
  commitOptions?: Partial<CommitOptions>;
}

/** An APPEND commit that landed (now, or by an earlier attempt with the same identifier). */
export interface AppendCommitted {
  snapshot: Snapshot;
  batches: readonly CommitBatch[];
  /** An earlier attempt had committed these batches; nothing was committed now. */
  alreadyCommitted: boolean;
  /** With alreadyCommitted: the id of the snapshot they had landed in, when it has expired since (`snapshot` is then the latest). */
  expiredSnapshotId?: number;
  /** Snapshot ids lost to other committers on the way. */
  conflicts: number;
  /** Milliseconds from the start of the call to the snapshot, when this call created it. */
  latencyMs?: number;
  /** The table's after-commit hook failed (inline compaction, export): the commit has landed all the same. */
  hookError?: Error;
  /** commitAppendOnBase: the plan on the last base held no batch, so nothing was committed (`snapshot` is that base). */
  nothingLeft?: boolean;
}

/** Work after an APPEND commit landed: announcing it, metrics, compaction jobs (never makes the commit look failed). */
export type AfterAppend = (committed: AppendCommitted) => Promise<void>;

/** Commits `batches` as one APPEND snapshot of `table` (an `append` action of the one loop, hooks included). */
export async function commitAppend(
  table: Table,
  batches: readonly CommitBatch[],
  spec: AppendSpec,
): Promise<AppendCommitted> {
  const plan = { batches, properties: spec.properties };
  return runAppend(table, spec, requestAction(appendRequest(table, plan, spec), 'append'), () => batches);
}

/** What an APPEND commit holds on a given base (commitAppendOnBase). */
export interface AppendPlan {
  batches: readonly CommitBatch[];
  properties?: Record<string, string>;
}

/**
 * Commits, as one APPEND snapshot, what `planOn` says on the base the commit lands on: called on
 * the first base, and again on each base a lost race moves the commit to (a group commit leaves
 * out the batches another committer landed meanwhile). A plan without batches commits nothing:
 * the result is then the base, with `nothingLeft` set. `spec.properties` is unused.
 */
export async function commitAppendOnBase(
  table: Table,
  planOn: (base: Snapshot | undefined) => Promise<AppendPlan>,
  spec: AppendSpec,
): Promise<AppendCommitted> {
  let last: AppendPlan = { batches: [] };
  const action: CommitAction = {
    name: 'append',
    plan: async (base) => {
      last = await planOn(base);
      return { changes: appendRequest(table, last, spec), requirements: { baseSnapshotId: base?.id ?? 0 } };
    },
  };
  const committed = await runAppend(table, spec, action, () => last.batches);
  return last.batches.length === 0 ? { ...committed, nothingLeft: true } : committed;
}

function appendRequest(table: Table, plan: AppendPlan, spec: AppendSpec): CommitRequest {
  return {
    commitUser: spec.commitUser,
    commitIdentifier: spec.commitIdentifier,
    // Derived from durable input (message ids, object key + etag): deduplicated without a window.
    identifierIndex: true,
    kind: 'APPEND',
    schemaId: spec.schemaId ?? table.schema.id,
    batches: [...plan.batches],
    properties: plan.properties,
    // Files queued before an alter are already written: they land and are read by field id.
    acceptOlderSchema: true,
  };
}

async function runAppend(
  table: Table,
  spec: AppendSpec,
  action: CommitAction,
  batches: () => readonly CommitBatch[],
): Promise<AppendCommitted> {
  const started = performance.now();
  const result = await commitToTable(table, action, spec.commitOptions);
  return {
    ...(result.hookError ? { hookError: result.hookError } : {}),
    snapshot: result.snapshot,
    batches: batches(),
    alreadyCommitted: result.alreadyCommitted,
    ...(result.expiredSnapshotId !== undefined ? { expiredSnapshotId: result.expiredSnapshotId } : {}),
    // Every attempt after the first followed a lost race for the snapshot id.
    conflicts: Math.max(0, result.attempts - 1),
    latencyMs: result.committed ? Math.round(performance.now() - started) : undefined,
  };
}

/** The (partition, bucket) pairs the batches write to. */
export function touchedBy(batches: readonly CommitBatch[]): TouchedBucket[] {
  return touchedByChanges({ batches: [...batches] });
}

/** The object keys of the batches' data and changelog files. */
export function batchFileKeys(table: Table, batches: readonly CommitBatch[]): string[] {
  return batches.flatMap((b) =>
    [...b.newFiles, ...b.changelogFiles].map((c) => dataFileKey(table.path, c.partition, c.bucket, c.file.fileName)),
  );
}

/** Deletes the files of batches that no snapshot references (a retry whose commit had already landed). */
export async function deleteBatchFiles(table: Table, batches: readonly CommitBatch[]): Promise<void> {
  for (const key of batchFileKeys(table, batches)) await table.store.delete(key);
}
