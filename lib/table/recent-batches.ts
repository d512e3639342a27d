/**
 * The writer batches the group commit folded into recent snapshots, by their commit identifier
 * (snapshot property `varve.batches`). SQS drops a re-sent batch only within its 5-minute
 * deduplication window, and a commit function retried after its commit may get the same batch
 * in a different invocation batch (with a different identifier): checking each batch against
 * the snapshots of the table's `ingest.deduplication-window` (30 minutes by default) keeps every
 * batch to one commit either way. Why this is a window and not the commit identifier index:
 * docs/AWS.md, "Why per-source deduplication has a window".
 *
 * One per table and process (recentBatchesOf): the first use reads back through the window, later
 * uses read only the snapshots committed since.
 */
import { parseJsonText } from '../json.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import type { Table } from './table.js';

/** Snapshot property listing the batch identifiers a group commit folded in, as a JSON array. */
export const BATCHES_PROPERTY = 'varve.batches';
/**
 * Snapshot property listing the sources whose rows the snapshot holds (`sqs:<message id>`,
 * `s3:<key>@<etag>`), as a JSON array: a source redelivered in any batch composition is
 * recognised by its own identifier, never by the batch it came in.
 */
export const SOURCES_PROPERTY = 'varve.sources';
/** The default window: longer than a writer's retries stretch (5 receives × the ingest queue's 6-minute visibility); the table option `ingest.deduplication-window`. */
const RECENT_WINDOW_MS = 30 * 60_000;
/** Snapshots read back at most on a cold start. */
const MAX_SCAN = 2000;
const READ_CHUNK = 16;

/** Batch identifiers of recent snapshots (see the file comment). */
export class RecentBatches {
  private readonly ids = new Map<string, { snapshot: number; time: number }>();
  private scannedUpTo = 0;
  /**
   * Every snapshot committed after this time (epoch ms, its `timeMillis`) up to `scannedUpTo` has
   * been noted: the scans since the first reached back to it without meeting an expired snapshot
   * (Infinity before the first refresh, -Infinity once a scan reached snapshot 1).
   */
  private completeAfter = Number.POSITIVE_INFINITY;
  /** The window's start at the last refresh: older entries are forgotten. */
  private horizon = Number.POSITIVE_INFINITY;

  constructor(
    /** The table object whose caching snapshot manager reads the snapshots (the newest one opened: recentBatchesOf). */
    public table: Table,
    private readonly now: () => number = Date.now,
    /** How far back (ms) snapshots count: the table's `ingest.deduplication-window`. */
    public windowMs: number = deduplicationWindowOf(table),
  ) {}

  /** Reads the snapshots committed since the last call (back to the window's start on the first). */
  async refresh(): Promise<void> {
    // Through the committer's caching manager: the commit that follows starts from the snapshot
    // found here (read once), and a warm container reads only the snapshots committed since.
    const snapshots = this.table.commitSnapshots;
    const latest = await snapshots.latestId();
    const horizon = this.now() - this.windowMs;
    this.horizon = horizon;
    if (latest === undefined) this.completeAfter = Number.NEGATIVE_INFINITY; // no snapshot: nothing committed
    if (latest === undefined || latest <= this.scannedUpTo) return;
    const lowest = Math.max(this.scannedUpTo + 1, latest - MAX_SCAN + 1, 1);
    // The time of the oldest snapshot read, and whether the scan went on down to `lowest`.
    let floor = Number.POSITIVE_INFINITY;
    let reachedLowest = true;
    scan: for (let hi = latest; hi >= lowest; hi -= READ_CHUNK) {
      const ids: number[] = [];
      for (let id = hi; id >= Math.max(lowest, hi - READ_CHUNK + 1); id--) ids.push(id);
      for (const s of await Promise.all(ids.map((id) => snapshots.tryRead(id)))) {
        if (s !== undefined) floor = s.timeMillis;
        // Expired from here down, or older than any retry: nothing further back matters.
        if (s === undefined || s.timeMillis < horizon) {
          reachedLowest = false;
          break scan;
        }
        this.note(s);
      }
    }
    // Snapshot times never decrease with the id, so a snapshot below the oldest one read is no
    // newer than it. Down to `lowest` without a gap: complete as far as the scans before were
    // (or, from snapshot 1, since the table began).
    if (!reachedLowest || (lowest > this.scannedUpTo + 1 && lowest > 1)) this.completeAfter = floor;
    else if (lowest === 1) this.completeAfter = Number.NEGATIVE_INFINITY;
    this.scannedUpTo = latest;
    for (const [id, v] of this.ids) if (v.time < horizon) this.ids.delete(id);
  }

  /**
   * True when, as of the last refresh, every snapshot committed after `time` (epoch ms) was read
   * and is still remembered: none was missing (expired) and none has left the window. A batch
   * written after `time` that snapshotOf does not know was then in no snapshot at all.
   */
  knowsEverySnapshotAfter(time: number): boolean {
    return time >= Math.max(this.completeAfter, this.horizon);
  }

  /** The snapshot that holds batch or source `id`, if a recent one does. */
  snapshotOf(id: string): number | undefined {
    return this.ids.get(id)?.snapshot;
  }

  /** Records a snapshot this container committed. */
  note(s: Snapshot): void {
    if (s.id === this.scannedUpTo + 1) this.scannedUpTo = s.id;
    for (const property of [BATCHES_PROPERTY, SOURCES_PROPERTY]) {
      const list = s.properties?.[property];
      if (!list) continue;
      let ids: unknown;
      try {
        ids = parseJsonText(list);
      } catch {
        continue; // not written by varve's writers
      }
      if (!Array.isArray(ids)) continue;
      for (const id of ids) if (typeof id === 'string') this.ids.set(id, { snapshot: s.id, time: s.timeMillis });
    }
  }
}

const perTable = new Map<string, RecentBatches>();

/** The value of {@link BATCHES_PROPERTY} for a snapshot folding these batches. */
export function batchesProperty(ids: readonly string[]): string {
  return JSON.stringify(ids);
}

/** The table's `ingest.deduplication-window`, in ms. */
function deduplicationWindowOf(table: Table): number {
  return (table.options.get('ingest.deduplication-window') as number | undefined) ?? RECENT_WINDOW_MS;
}

/**
 * The process's RecentBatches of a table (by store and path: a re-opened table shares it), with
 * the window of the table as opened now (an altered window applies from the next refresh on),
 * reading through that table object's snapshot manager.
 */
export function recentBatchesOf(table: Table): RecentBatches {
  const key = `${table.store.uri}\u0000${table.path}`;
  let recent = perTable.get(key);
  if (!recent) perTable.set(key, (recent = new RecentBatches(table)));
  recent.table = table;
  recent.windowMs = deduplicationWindowOf(table);
  return recent;
}
