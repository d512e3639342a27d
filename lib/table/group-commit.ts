/**
 * The group commit: the commit messages of many writers, taken in order from the table's commit
 * queue, folded into one APPEND snapshot per run of messages written with the same schema — one
 * commit per second per table is S3's practical ceiling, so batching, not racing, is how
 * ingestion scales.
 *
 * Idempotent twice over: a run's commit identifier is the hash of its messages' ids (a retried
 * run finds its snapshot), and each batch's own identifier is recorded in the snapshot
 * (`varve.batches`), so a batch seen again in another run is not committed again (RecentBatches;
 * each snapshot also carries a checkpoint of that window, `varve.window`, for cold containers).
 *
 * What is guaranteed for sources (`varve.sources`): each lands once. A batch whose every source
 * landed is skipped like a re-sent one. A batch only some of whose sources landed — the same input
 * delivered twice at once in two batch compositions (an SQS standard queue's duplicate delivery, a
 * redelivery while the first invocation still runs: the ingest's check, ingested-sources.ts, sees
 * neither) — cannot land without them: its files keep no record of which row came from which
 * source (the writer merges a key's rows across sources, and numbers rows per bucket), so its
 * copy of the landed sources' rows would land again: rows twice on an append table, on a
 * primary-key table an older row winning over a newer update of its key. It is refused whole
 * (PartiallyLandedError, naming the sources to ingest again), its files deleted: loud, and
 * nothing committed is touched. Paimon and Flink avoid the case with checkpoint-aligned
 * exactly-once sources, which SQS is not; a direct-mode ingest, which still holds its input,
 * lands the other messages again instead (ingest-messages.ts).
 *
 * A bad batch never takes good ones down with it: a batch whose files are gone is refused before
 * the commit (CommitFilesMissingError; only a batch old enough to have lost them is checked:
 * filesMayBeGone), and when a run fails for a reason retrying cannot help,
 * its batches are committed one by one so that only the one that fails alone is refused. Refused
 * messages are the caller's to set aside (on AWS: the rejects queue); the others go on.
 */
import { CommitFilesMissingError, PartiallyLandedError, VarveError } from '../errors.js';
import type { CommitBatch, CommitOptions } from '../snapshot/commit.js';
import { commitAppendOnBase, deleteBatchFiles, type AfterAppend, type AppendCommitted } from './append-commit.js';
import { messagesCommitIdentifier } from './commit-identifiers.js';
import { wrongTableInstance, type CommitMessage } from './commit-message.js';
import { missingFiles, releasePending } from './pending-commits.js';
import { BATCHES_PROPERTY, batchesProperty, recentBatchesOf, type RecentBatches } from './recent-batches.js';
import type { Table } from './table.js';

/** The commit user of the group commit: one per table, stable across invocations. */
export const GROUP_COMMIT_USER = 'group-commit';

/** A commit message as taken from its queue: `id` is the queue's message id (stable across redeliveries). */
export interface QueuedCommit {
  id: string;
  message: CommitMessage;
}

/** What committing one run did. */
export interface RunOutcome {
  /** The messages of the run. */
  ids: string[];
  /** The commit, unless every batch of the run had been committed before. */
  committed?: AppendCommitted;
  /** Batches skipped because an earlier snapshot holds them (a retry, a re-send). */
  skipped: number;
  /** Messages refused, by id, with why: they can never be committed. */
  refused: Map<string, Error>;
}

export interface GroupCommitOptions {
  afterCommit?: AfterAppend;
  commitOptions?: Partial<CommitOptions>;
  /** The clock that tells a batch's age (filesMayBeGone). @default Date.now */
  now?: () => number;
}

/**
 * How far apart two clocks that wrote the table may be (a writer's, which stamps its files'
 * `creationTime`; a committer's, which stamps `timeMillis`; S3's `LastModified`, which orphan
 * cleanup ages registrations by). Lambda and S3 clocks are kept within milliseconds by the Amazon
 * Time Sync Service; the deduplication window compares committer clocks with this one the same way.
 */
const CLOCK_SKEW_MS = 5 * 60_000;

/**
 * Whether the files of a queued batch may be gone, so that the commit must check them (a HEAD
 * each) before a snapshot references them. Only orphan cleanup and expiry delete data files.
 * Neither can have deleted those of a young batch, written (its newest file's `creationTime`)
 * after the oldest snapshot `recent` still knows every successor of:
 * - no snapshot holds it (the window, which knows every snapshot since before it was written,
 *   found none; its commit would be newer than its files), so no snapshot ever referenced its
 *   files and expiry, which deletes only files of expired snapshots, never saw them;
 * - its pending registration, written after its files (land-rows.ts) and released only after its
 *   commit, is younger than `orphan-files.pending-time-retained`, and orphan cleanup keeps every
 *   file such a registration lists, whatever its own age window (remove-orphans.ts).
 * An older batch (a commit redriven from the dead-letter queue days later), or one written before
 * an expired snapshot the window met, is checked. So is every batch when the latest snapshot (which
 * the window has just read) names a newer schema than this table object's: the retention read here
 * may be a minute old (a warm container keeps its table that long), and an ALTER lowering it, then
 * orphan cleanup under the new value, may have deleted files this view still takes for protected.
 */
function filesMayBeGone(table: Table, batch: CommitBatch, recent: RecentBatches, now: number): boolean {
  const files = [...batch.newFiles, ...batch.changelogFiles];
  if (files.length === 0) return false;
  const newest = table.commitSnapshots.newestKnown();
  if (newest !== undefined && newest.schemaId > table.schema.id) return true;
  const written = Math.max(...files.map((f) => f.file.creationTime));
  const registrationLive = now - written + CLOCK_SKEW_MS < table.options.orphanFilesPendingTimeRetained;
  return !(registrationLive && recent.knowsEverySnapshotAfter(written - CLOCK_SKEW_MS));
}

/**
 * The snapshot through which no snapshot holds a file of `batches` (CommitOptions.addsUnseenThrough:
 * the commit on it then does not look for them among the live files), or undefined. The first
 * point of filesMayBeGone, for each batch: written (its newest file) after the oldest snapshot
 * `recent` knows every successor of, and found in none (the batches here are fresh), it is in no
 * snapshot up to the newest one `recent` noted — one committed before its files were written
 * cannot hold them, and a batch's files are committed only with its identifier in `varve.batches`.
 */
function addsUnseenThrough(batches: readonly CommitBatch[], recent: RecentBatches): number | undefined {
  for (const batch of batches) {
    if (batch.newFiles.length === 0) continue;
    const written = Math.max(...batch.newFiles.map((f) => f.file.creationTime));
    if (!recent.knowsEverySnapshotAfter(written - CLOCK_SKEW_MS)) return undefined;
  }
  return recent.notedThrough;
}

/** Consecutive messages written with the same schema: each run is one snapshot (almost always one run). */
function schemaRuns(queued: readonly QueuedCommit[]): QueuedCommit[][] {
  const runs: QueuedCommit[][] = [];
  for (const q of queued) {
    const last = runs[runs.length - 1];
    if (last && last[0].message.schemaId === q.message.schemaId) last.push(q);
    else runs.push([q]);
  }
  return runs;
}

/**
 * The group commit of a batch of queued messages. `settle(id)` commits the run holding `id` (once;
 * later calls share the outcome) and throws its error: settle in queue order and stop at the first
 * failure (what a FIFO batch processor does), so that no run commits ahead of a failed one.
 */
export class GroupCommit {
  private readonly runs: QueuedCommit[][];
  private readonly runOf = new Map<string, number>();
  private readonly outcomes: Array<Promise<RunOutcome> | undefined> = [];

  constructor(
    private readonly table: Table,
    queued: readonly QueuedCommit[],
    private readonly opts: GroupCommitOptions = {},
  ) {
    this.runs = schemaRuns(queued);
    this.runs.forEach((run, i) => run.forEach((q) => this.runOf.set(q.id, i)));
  }

  /** Commits the run of message `id` (see the class comment). */
  settle(id: string): Promise<RunOutcome> {
    const i = this.runOf.get(id);
    if (i === undefined) throw new RangeError(`message ${id} is not part of this group commit`);
    return (this.outcomes[i] ??= this.commitRun(this.runs[i]));
  }

  private async commitRun(run: QueuedCommit[]): Promise<RunOutcome> {
    const refused = new Map<string, Error>();
    // Written for a table dropped since at this location: its files went with it.
    for (const q of run) {
      const wrong = wrongTableInstance(this.table, q.message);
      if (wrong) refused.set(q.id, wrong);
    }
    const recent = recentBatchesOf(this.table);
    await recent.refresh();
    const seen = new Set<string>();
    let skipped = 0;
    const fresh = run.filter((q) => {
      const m = q.message;
      if (refused.has(q.id)) return false;
      // Committed before (a retry) or twice in this run (a re-send SQS did not deduplicate), or
      // every source it holds is (the same input redelivered in another batch composition); some
      // of its sources only: refused (see the file comment).
      const was = landing(m, (id) => (seen.has(id) ? null : recent.snapshotOf(id)));
      if (was instanceof Error) refused.set(q.id, was);
      else if (was) skipped++;
      else for (const id of [m.commitIdentifier, ...(m.sources ?? [])]) seen.add(id);
      return was === false;
    });
    const ids = run.map((q) => q.id);
    // Checked before the commit: a snapshot must never reference a file that is gone.
    const now = (this.opts.now ?? Date.now)();
    const missing = await Promise.all(
      fresh.map((q) =>
        filesMayBeGone(this.table, q.message.batch, recent, now) ? missingFiles(this.table, q.message.batch) : [],
      ),
    );
    fresh.forEach(
      (q, i) =>
        missing[i].length > 0 && refused.set(q.id, new CommitFilesMissingError(q.message.commitIdentifier, missing[i])),
    );
    const ready = fresh.filter((q) => !refused.has(q.id));
    const outcome: RunOutcome = { ids, skipped, refused };
    if (ready.length === 0) return outcome;
    const commit = async (batches: QueuedCommit[], identifier: string) => {
      const { committed, leftOut, partial } = await this.commitBatches(batches, identifier);
      outcome.skipped += leftOut;
      for (const [id, e] of partial) refused.set(id, e);
      if (committed) outcome.committed = committed;
    };
    try {
      await commit(ready, messagesCommitIdentifier('commit', ids));
    } catch (e) {
      if (ready.length === 1 || !(e instanceof VarveError) || e.retryable) throw e;
      // One bad batch (or more) in the run: each alone, in order; the ones failing alone are refused.
      for (const q of ready) {
        try {
          await commit([q], messagesCommitIdentifier('commit', [q.id]));
        } catch (one) {
          if (!(one instanceof VarveError) || one.retryable) throw one;
          refused.set(q.id, one);
        }
      }
    }
    // Committed (now or before): their files are referenced by a snapshot, the registrations can
    // go. So can those of batches refused for their landed sources, and their files: no commit can
    // take them any more (every later base holds those sources), and a registration kept would
    // make a re-sent source look queued (ingested-sources.ts).
    const partial = run.filter((q) => refused.get(q.id) instanceof PartiallyLandedError).map((q) => q.message);
    const done = run.filter((q) => !refused.has(q.id)).map((q) => q.message.commitIdentifier);
    await Promise.all([
      releasePending(this.table, [...done, ...partial.map((m) => m.commitIdentifier)]),
      deleteBatchFiles(
        this.table,
        partial.map((m) => m.batch),
      ),
    ]).catch(() => undefined); // best effort: orphan cleanup ages them out
    return outcome;
  }

  /**
   * Commits `batches` as one snapshot, less the ones a snapshot landed before it holds: checked on
   * every base the commit tries, since another committer (a second deployment, the CLI, a
   * direct-mode ingest) may land the same batches or sources at the same moment, and the commit
   * that loses the race for the snapshot id then finds them in the winner's snapshot. Returns the
   * commit (undefined when every batch had landed) and how many batches were left out.
   */
  private async commitBatches(
    batches: QueuedCommit[],
    commitIdentifier: string,
  ): Promise<{ committed?: AppendCommitted; leftOut: number; partial: Map<string, PartiallyLandedError> }> {
    const recent = recentBatchesOf(this.table);
    let kept = batches;
    let partial = new Map<string, PartiallyLandedError>();
    // Vouched for the base the window read before the first plan; a lost race's newer base is
    // checked as before (addsUnseenThrough).
    const unseenThrough = addsUnseenThrough(
      batches.map((q) => q.message.batch),
      recent,
    );
    const committed = await commitAppendOnBase(
      this.table,
      async (base) => {
        await recent.readUpTo(base?.id ?? 0);
        partial = new Map();
        kept = batches.filter((q) => {
          const was = landing(q.message, (id) => recent.snapshotOf(id));
          if (was instanceof PartiallyLandedError) partial.set(q.id, was);
          return was === false;
        });
        return {
          batches: kept.map((q) => q.message.batch),
          properties: {
            [BATCHES_PROPERTY]: batchesProperty(kept.map((q) => q.message.commitIdentifier)),
            ...recent.commitProperties(kept.flatMap((q) => q.message.sources ?? [])),
          },
        };
      },
      {
        commitUser: GROUP_COMMIT_USER,
        commitIdentifier,
        schemaId: batches[0].message.schemaId,
        commitOptions:
          unseenThrough === undefined
            ? this.opts.commitOptions
            : { ...this.opts.commitOptions, addsUnseenThrough: unseenThrough },
      },
    );
    if (committed.nothingLeft) return { leftOut: batches.length - partial.size, partial };
    recent.note(committed.snapshot);
    await this.opts.afterCommit?.(committed);
    return { committed, leftOut: batches.length - kept.length - partial.size, partial };
  }
}

/**
 * Whether batch `m` landed already, by `landedIn` (the snapshot that holds an id, null for an
 * earlier batch of this run, undefined when none does): true when its identifier did (a retry) or
 * every source it holds did (the same input redelivered in another batch composition), false when
 * none of them did, and the refusal to give it when some of its sources did and others did not.
 */
function landing(
  m: CommitMessage,
  landedIn: (id: string) => number | null | undefined,
): boolean | PartiallyLandedError {
  if (landedIn(m.commitIdentifier) !== undefined) return true;
  const sources = m.sources ?? [];
  const landed = new Map<string, number | undefined>();
  for (const s of sources) {
    const at = landedIn(s);
    if (at !== undefined) landed.set(s, at ?? undefined);
  }
  if (landed.size === 0) return false;
  if (landed.size === sources.length) return true;
  return new PartiallyLandedError(
    m.commitIdentifier,
    landed,
    sources.filter((s) => !landed.has(s)),
  );
}
