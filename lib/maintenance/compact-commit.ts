/**
 * The commit of a compaction run: every bucket the run compacted goes into ONE COMPACT snapshot
 * (Paimon makes one COMPACT commit per compaction run), so a run over 18 buckets costs one
 * discovery round, one metadata write set and one snapshot to expire, not 18.
 *
 * Conflicts stay per bucket. The commit's checks name the files they tripped over
 * (CommitConflictError.details.files); the buckets owning them are dropped from the commit, their
 * outputs deleted (nothing references them), and the rest is committed again at once. The caller
 * re-plans the dropped buckets from the latest snapshot in its next round (compact.ts). A conflict
 * that names no file of the run (or a schema change) drops every bucket.
 */
import { createHash } from 'node:crypto';
import { CommitConflictError, SchemaChangedError } from '../errors.js';
import type { ManifestCache } from '../manifest/manifest-file.js';
import type { ActionPlan, CommitAction, CommitRequest } from '../snapshot/commit.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import { commitToTable } from '../table/table-commit.js';
import type { Table } from '../table/table.js';
import { COMPACT_COMMIT_USER, FULL_COMPACTION_PROPERTY, type PreparedBucket } from './compact-run.js';

/** What committing a run's prepared buckets did. */
export interface RunCommitResult {
  /** The COMPACT snapshot holding `committed` (or the one an earlier attempt of the same run made). */
  snapshot?: Snapshot;
  /** True when an earlier attempt of the same run had committed these buckets already. */
  alreadyCommitted: boolean;
  /** Buckets in the snapshot. */
  committed: PreparedBucket[];
  /** Buckets dropped because another commit changed them; their outputs are deleted. */
  conflicted: PreparedBucket[];
  /** The conflict that dropped the last bucket(s), for a caller that must report it. */
  lastConflict?: CommitConflictError;
  /** The after-commit work (the Iceberg export) failed; the commit has landed. */
  hookError?: Error;
}

/**
 * Identifies a run's commit from what it compacts (every bucket's inputs), so that a retried
 * commit of the same run is recognised and not made twice.
 */
function runCommitIdentifier(buckets: readonly PreparedBucket[]): string {
  if (buckets.length === 1) return buckets[0].identifier;
  const ids = buckets.map((b) => b.identifier).sort();
  return `compact-${createHash('sha256').update(JSON.stringify(ids)).digest('hex').slice(0, 32)}`;
}

/** The buckets whose files a conflict names (by file name: data file names are unique uuids). */
function bucketsNamedBy(e: CommitConflictError, buckets: readonly PreparedBucket[]): Set<PreparedBucket> {
  const files = new Set(e.details.files ?? []);
  const hit = new Set<PreparedBucket>();
  if (files.size === 0) return hit;
  for (const b of buckets) {
    const { before, after, changelog } = b.changes;
    if ([...before, ...after, ...changelog].some((c) => files.has(c.file.fileName))) hit.add(b);
  }
  return hit;
}

/**
 * The `compact` action: the prepared buckets still in the run, as one COMPACT request; a conflict
 * drops the buckets it names (their outputs deleted) and plans the rest again (see the file comment).
 */
class CompactAction implements CommitAction {
  readonly name = 'compact';
  remaining: PreparedBucket[];
  readonly conflicted: PreparedBucket[] = [];
  lastConflict?: CommitConflictError;

  constructor(
    private readonly table: Table,
    prepared: readonly PreparedBucket[],
  ) {
    this.remaining = [...prepared];
  }

  async plan(): Promise<ActionPlan> {
    const remaining = this.remaining;
    const changes: CommitRequest = {
      commitUser: COMPACT_COMMIT_USER,
      commitIdentifier: runCommitIdentifier(remaining),
      kind: 'COMPACT',
      schemaId: this.table.schema.id,
      compactBefore: remaining.flatMap((b) => b.changes.before),
      compactAfter: remaining.flatMap((b) => b.changes.after),
      compactChangelog: remaining.flatMap((b) => b.changes.changelog),
      properties: remaining.some((b) => b.full) ? { [FULL_COMPACTION_PROPERTY]: 'true' } : undefined,
    };
    return { changes, requirements: { schemaId: this.table.schema.id } };
  }

  async onConflict(e: CommitConflictError): Promise<boolean> {
    this.lastConflict = e;
    await this.drop(e);
    return this.remaining.length > 0;
  }

  /** Drops the buckets `e` names (every bucket when it names none of the run's files, or the schema changed). */
  async drop(e: CommitConflictError): Promise<void> {
    // A conflict means the snapshot was not created: what the dropped buckets wrote is unreferenced.
    const named = e instanceof SchemaChangedError ? new Set<PreparedBucket>() : bucketsNamedBy(e, this.remaining);
    const dropped = named.size > 0 ? this.remaining.filter((b) => named.has(b)) : this.remaining;
    await Promise.all(dropped.map((b) => b.discard()));
    this.conflicted.push(...dropped);
    this.remaining = this.remaining.filter((b) => !dropped.includes(b));
  }

  async settle(outcome: { alreadyCommitted: boolean }): Promise<void> {
    // An earlier attempt of this run committed other files for the same plans: ours are not referenced.
    if (outcome.alreadyCommitted) await Promise.all(this.remaining.map((b) => b.discard()));
  }
}

/**
 * Commits `prepared` as one COMPACT snapshot (a `compact` action of the one commit loop, hooks
 * included), dropping the buckets a conflict names until the rest commits (or nothing is left).
 * Errors other than conflicts are thrown as they come: the commit may then have landed or not,
 * so no output is deleted (orphan cleanup removes what no snapshot references) and a re-run plans
 * again from the latest snapshot.
 */
export async function commitCompactionRun(
  table: Table,
  prepared: readonly PreparedBucket[],
  cache: ManifestCache,
): Promise<RunCommitResult> {
  const action = new CompactAction(table, prepared);
  try {
    const committed = await commitToTable(table, action, { manifestCache: cache });
    return {
      snapshot: committed.snapshot,
      alreadyCommitted: committed.alreadyCommitted,
      committed: action.remaining,
      conflicted: action.conflicted,
      lastConflict: action.lastConflict,
      hookError: committed.hookError,
    };
  } catch (e) {
    if (!(e instanceof CommitConflictError)) throw e;
    // Every bucket dropped (or a schema change): the caller re-plans them from the latest snapshot.
    if (action.remaining.length > 0) {
      action.lastConflict = e;
      await action.drop(e instanceof SchemaChangedError ? e : new CommitConflictError(e.message));
    }
    return { alreadyCommitted: false, committed: [], conflicted: action.conflicted, lastConflict: action.lastConflict };
  }
}
