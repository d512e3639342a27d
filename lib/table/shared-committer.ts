/**
 * The in-process group commit: writers in one process that commit to the same table share one
 * committer, which folds the batches waiting when a round starts into one APPEND snapshot —
 * what the AWS commit queue does across processes (group-commit.ts). Sixteen writers racing for
 * snapshot ids lose most races and retry; sixteen writers handing their batches to one committer
 * never race each other, and a round costs one snapshot however many batches it carries.
 *
 * A round starts as soon as a batch arrives and no round is running, so a lone writer commits
 * exactly as it would alone (same request, same cost); batches that arrive during a round wait
 * for the next one. Identifiers are kept exactly once: each batch's identifier claims its own
 * index object (commit.ts batchIdentifiers), a batch whose identifier landed before is left out
 * and reported to its writer as already committed, and two writers handing in the same identifier
 * in one round commit it once (the second is told it was already committed).
 */
import { randomUUID } from 'node:crypto';
import { VarveError, WriteStallError } from '../errors.js';
import { requestAction, type CommitBatch, type CommitResult as SnapshotCommitResult } from '../snapshot/commit.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import type { ObjectStore } from '../store/object-store.js';
import { commitToTable } from './table-commit.js';
import type { Table } from './table.js';

/** Most batches one round folds into a snapshot (the rest wait for the next round). */
const MAX_BATCHES_PER_ROUND = 64;
/** Commit user of a snapshot holding the batches of writers with different commit users. */
const SHARED_COMMIT_USER = 'writer-group';

/** One writer's batch, handed to the committer. */
export interface PendingAppend {
  batch: CommitBatch;
  /** Given by the user: indexed, lands once table-wide. Undefined: a fresh random identifier. */
  identifier?: string;
  commitUser: string;
  schemaId: number;
}

/** What became of one writer's batch. */
export interface SharedCommitOutcome {
  /** The snapshot holding the batch (undefined: it had landed in a snapshot since expired). */
  snapshot?: Snapshot;
  /** The id of the expired snapshot the batch had landed in (when `snapshot` is undefined). */
  expiredSnapshotId?: number;
  /** The identifier had landed before (an earlier call, or another writer in the same round). */
  alreadyCommitted: boolean;
  /** True for exactly one writer per new snapshot (the first of its batches). */
  announces: boolean;
  /** The table's after-commit hook failed (inline compaction, the export): the batch has landed all the same. */
  hookError?: Error;
  /** Batches in the snapshot this batch went into. */
  roundSize: number;
}

interface Waiting {
  table: Table;
  append: PendingAppend;
  resolve: (o: SharedCommitOutcome) => void;
  reject: (e: unknown) => void;
}

const committers = new WeakMap<ObjectStore, Map<string, SharedCommitter>>();

/** The committer shared by every writer of this process on `table` (same store object and path). */
export function sharedCommitterOf(table: Table): SharedCommitter {
  let byPath = committers.get(table.store);
  if (!byPath) committers.set(table.store, (byPath = new Map()));
  let c = byPath.get(table.path);
  if (!c) byPath.set(table.path, (c = new SharedCommitter()));
  return c;
}

/** See the file comment. */
export class SharedCommitter {
  private readonly queue: Waiting[] = [];
  private running = false;
  /** Snapshots this committer created (for tests and the benchmark). */
  rounds = 0;

  /** Commits `append` in the next round; resolves when the snapshot holding it exists. */
  submit(table: Table, append: PendingAppend): Promise<SharedCommitOutcome> {
    return new Promise((resolve, reject) => {
      this.queue.push({ table, append, resolve, reject });
      if (!this.running) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.running = true;
    try {
      while (this.queue.length > 0) await this.commitRound(this.takeRound());
    } finally {
      this.running = false;
    }
  }

  /** The waiting batches written with the first one's schema, in arrival order, up to the round limit. */
  private takeRound(): Waiting[] {
    const schemaId = this.queue[0].append.schemaId;
    const round: Waiting[] = [];
    for (let i = 0; i < this.queue.length && round.length < MAX_BATCHES_PER_ROUND; ) {
      if (this.queue[i].append.schemaId === schemaId) round.push(...this.queue.splice(i, 1));
      else i++;
    }
    return round;
  }

  private async commitRound(round: Waiting[]): Promise<void> {
    // Two writers handing in one identifier: the first commits it, the second is told it landed.
    const leaders: Waiting[] = [];
    const followers = new Map<Waiting, Waiting[]>();
    const byIdentifier = new Map<string, Waiting>();
    for (const w of round) {
      const id = w.append.identifier;
      const leader = id === undefined ? undefined : byIdentifier.get(id);
      if (leader) followers.get(leader)!.push(w);
      else {
        if (id !== undefined) byIdentifier.set(id, w);
        leaders.push(w);
        followers.set(w, []);
      }
    }
    let outcomes: Array<SharedCommitOutcome | { error: unknown }>;
    try {
      outcomes = await this.commitTogether(leaders);
    } catch (e) {
      // A write stall names buckets some batches do not write to: alone, only those batches wait.
      if (leaders.length === 1 || !(e instanceof VarveError) || (e.retryable && !(e instanceof WriteStallError)))
        outcomes = leaders.map(() => ({ error: e }));
      else {
        // One batch the others cannot land with (a schema changed under it, …): each alone, so
        // only the ones that fail alone fail.
        outcomes = [];
        for (const w of leaders)
          outcomes.push(
            await this.commitTogether([w]).then(
              (o) => o[0],
              (error: unknown) => ({ error }),
            ),
          );
      }
    }
    leaders.forEach((w, i) => {
      const o = outcomes[i];
      if ('error' in o) {
        for (const x of [w, ...followers.get(w)!]) x.reject(o.error);
        return;
      }
      w.resolve(o);
      for (const f of followers.get(w)!) f.resolve({ ...o, alreadyCommitted: true, announces: false });
    });
  }

  /** One snapshot holding every batch of `members` that has not landed before. */
  private async commitTogether(members: Waiting[]): Promise<SharedCommitOutcome[]> {
    const { table } = members[0];
    const appends = members.map((w) => w.append);
    const users = new Set(appends.map((a) => a.commitUser));
    const alone = appends.length === 1;
    const fresh = alone && appends[0].identifier === undefined;
    // One `append` action of the one loop: the table's hooks run around it once per snapshot.
    const action = requestAction(
      {
        commitUser: users.size === 1 ? appends[0].commitUser : SHARED_COMMIT_USER,
        // Alone: the request a writer makes by itself. Together: a fresh identifier for the
        // snapshot, and each batch's own identifier claimed in the index.
        commitIdentifier: alone ? (appends[0].identifier ?? randomUUID()) : randomUUID(),
        identifierIndex: alone && !fresh,
        batchIdentifiers: alone ? undefined : appends.map((a) => a.identifier),
        kind: 'APPEND',
        schemaId: appends[0].schemaId,
        batches: appends.map((a) => a.batch),
      },
      'append',
    );
    // A fresh identifier cannot have landed before: no need to search recent snapshots.
    const result: SnapshotCommitResult = await commitToTable(
      table,
      action,
      alone && !fresh ? {} : { dedupLookback: 0 },
    );
    if (result.committed) this.rounds++;
    let announced = !result.committed;
    return appends.map((_, i) => {
      const landed = result.landedBefore?.get(i);
      if (landed !== undefined) {
        const where =
          landed.snapshot !== undefined ? { snapshot: landed.snapshot } : { expiredSnapshotId: landed.snapshotId };
        return { ...where, alreadyCommitted: true, announces: false, roundSize: appends.length };
      }
      if (result.expiredSnapshotId !== undefined)
        return {
          expiredSnapshotId: result.expiredSnapshotId,
          alreadyCommitted: true,
          announces: false,
          roundSize: appends.length,
        };
      const announces = !announced;
      announced = true;
      const hookError = result.hookError !== undefined ? { hookError: result.hookError } : {};
      return {
        snapshot: result.snapshot,
        alreadyCommitted: result.alreadyCommitted,
        announces,
        roundSize: appends.length,
        ...hookError,
      };
    });
  }
}
