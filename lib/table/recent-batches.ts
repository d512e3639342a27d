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
 * uses read only the snapshots committed since. The group commit's snapshots carry a checkpoint of
 * the window (window-checkpoint.ts), so that the first use of a container usually reads only the
 * latest snapshot, which the commit that follows reads anyway.
 */
import { parseJsonText } from '../json.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import type { Table } from './table.js';
import {
  encodeWindowCheckpoint,
  parseWindowCheckpoint,
  WINDOW_PROPERTY,
  type WindowCheckpoint,
  type WindowEntry,
} from './window-checkpoint.js';

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
/** Snapshots read one by one before reading in parallel (scanDown). */
const ONE_BY_ONE = 4;
/**
 * Ids are remembered this much longer than the window (not looked up there: snapshotOf), so that
 * the checkpoint of a committer whose clock is ahead of a reader's (Lambda clocks agree within
 * milliseconds: Amazon Time Sync Service) still reaches back to the reader's window start.
 */
const CLOCK_MARGIN_MS = 5 * 60_000;

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
  /** The window's start at the last refresh: older entries are not looked up, and forgotten past CLOCK_MARGIN_MS. */
  private horizon = Number.POSITIVE_INFINITY;
  /** The window (ms) of the last refresh: a longer one may need snapshots the scans stopped above. */
  private readBackFor = 0;

  constructor(
    /** The table object whose caching snapshot manager reads the snapshots (the newest one opened: recentBatchesOf). */
    public table: Table,
    private readonly now: () => number = Date.now,
    /** How far back (ms) snapshots count: the table's `ingest.deduplication-window`. */
    public windowMs: number = deduplicationWindowOf(table),
  ) {}

  /**
   * Reads the snapshots committed since the last call (back to the window's start on the first),
   * up to the latest one, or up to `through.latest` when the caller has just found that latest
   * (its id, undefined for a table with none).
   */
  async refresh(through?: { latest: number | undefined }): Promise<void> {
    // Through the committer's caching manager: the commit that follows starts from the snapshot
    // found here (read once), and a warm container reads only the snapshots committed since.
    const latest = through ? through.latest : await this.table.commitSnapshots.latestId();
    this.horizon = this.now() - this.windowMs;
    if (latest === undefined) {
      this.completeAfter = Number.NEGATIVE_INFINITY; // no snapshot: nothing committed
    } else {
      if (this.windowMs > this.readBackFor && this.completeAfter > this.horizon) {
        // The window grew past what the scans so far read back for (the table's option was
        // raised): read it again from the top (the snapshots read before come from the cache).
        this.scannedUpTo = 0;
        this.completeAfter = Number.POSITIVE_INFINITY;
      }
      await this.scanUpTo(latest);
    }
    this.readBackFor = this.windowMs;
    const keep = this.horizon - CLOCK_MARGIN_MS;
    for (const [id, v] of this.ids) if (v.time < keep) this.ids.delete(id);
    // What is forgotten is no longer known: a longer window later reads it again.
    this.completeAfter = Math.max(this.completeAfter, keep);
  }

  /**
   * Notes the snapshots up to `latest` (a commit's base: its loop has just found it the latest, or
   * undefined for a table with none): read back through the window as refresh() does on this
   * process's first read, else those after the last one read (readUpTo).
   */
  async readThrough(latest: number | undefined): Promise<void> {
    if (this.horizon === Number.POSITIVE_INFINITY) await this.refresh({ latest });
    else await this.readUpTo(latest ?? 0);
  }

  /**
   * Notes the snapshots after the last one read, up to `id` (a commit's base after it lost a race:
   * the commit loop read them on its way, so they come from its snapshot manager's cache); nothing
   * before the first refresh.
   */
  async readUpTo(id: number): Promise<void> {
    // Before the first refresh nothing is read here: the first refresh reads the window.
    if (this.horizon !== Number.POSITIVE_INFINITY) await this.scanUpTo(id);
  }

  private async scanUpTo(id: number): Promise<void> {
    if (id <= this.scannedUpTo) return;
    // Every snapshot in [bottom, id] committed after `after` is now noted.
    const bottom = this.scannedUpTo + 1;
    const after = await this.scanDown(id, bottom);
    // Down to snapshot 1: complete since the table began; down to the last scan's newest:
    // complete as far as the scans before were; stopped on the way: complete after `after`.
    this.completeAfter = after ?? (bottom === 1 ? Number.NEGATIVE_INFINITY : this.completeAfter);
    this.scannedUpTo = id;
  }

  /**
   * Notes the snapshots from `top` down to `bottom`, newest first, until one is older than the
   * window, is missing (expired), or MAX_SCAN were read; a checkpoint met on the
   * way stands for the snapshots it lists. Returns undefined when every snapshot in [bottom, top]
   * was noted, else the time after which every one was (times never decrease with the id, so a
   * snapshot below the last one read is no newer than it).
   */
  private async scanDown(top: number, bottom: number): Promise<number | undefined> {
    const snapshots = this.table.commitSnapshots;
    let pending: WindowCheckpoint | undefined; // the checkpoint met reaching furthest down
    let read = 0;
    // One at a time at first: the latest usually carries a checkpoint of everything below, or
    // one of the next few does (above it, a compaction's or another writer's); then in parallel.
    let chunk = 1;
    let sinceCheckpoint = 0;
    let floor = Number.POSITIVE_INFINITY;
    for (let pos = top; pos >= bottom; ) {
      if (pending && pending.to >= pos) {
        // Everything in (pending.to, top] is noted: the checkpoint adds the rest it knows.
        for (const [snapshot, time, ids] of pending.snapshots) for (const id of ids) this.remember(id, snapshot, time);
        if (pending.from <= bottom) return undefined; // (a): all of [bottom, pos]
        if (pending.after <= this.horizon) return pending.after; // (b): all the window needs
        pos = pending.from - 1; // a longer window than the committer's: read on below
        pending = undefined;
        [chunk, sinceCheckpoint] = [1, 0];
        continue;
      }
      if (read >= MAX_SCAN) return floor;
      const ids: number[] = [];
      for (let id = pos; id >= Math.max(bottom, pos - chunk + 1); id--) ids.push(id);
      read += ids.length;
      sinceCheckpoint += ids.length;
      if (sinceCheckpoint >= ONE_BY_ONE) chunk = Math.min(chunk * 2, READ_CHUNK);
      for (const s of await Promise.all(ids.map((id) => snapshots.tryRead(id)))) {
        if (s !== undefined) floor = s.timeMillis;
        // Expired from here down, or older than any retry: nothing further back matters.
        if (s === undefined || s.timeMillis < this.horizon) return floor;
        this.note(s);
        const c = parseWindowCheckpoint(s.id, s.properties);
        if (c && c.to >= bottom && (!pending || c.to > pending.to)) pending = c;
        pos = s.id - 1;
      }
    }
    return undefined;
  }

  /**
   * The properties of the next snapshot this container commits holding `sources`: those sources,
   * and the window's checkpoint, for the next cold container to start from (checkpoint()).
   */
  commitProperties(sources: readonly string[]): Record<string, string> {
    const window = this.checkpoint();
    return {
      ...(sources.length > 0 ? { [SOURCES_PROPERTY]: JSON.stringify(sources) } : {}),
      ...(window !== undefined ? { [WINDOW_PROPERTY]: window } : {}),
    };
  }

  /**
   * The value of the window checkpoint property for the next snapshot this container commits
   * (window-checkpoint.ts), or undefined before the first refresh.
   */
  private checkpoint(): string | undefined {
    if (this.scannedUpTo === 0 || this.completeAfter === Number.POSITIVE_INFINITY) return undefined;
    // Known: every snapshot up to scannedUpTo committed after `after`, and its ids (none forgotten:
    // entries go only when older than the window's start less the margin).
    const after = Math.max(this.completeAfter, this.horizon - CLOCK_MARGIN_MS);
    const bySnapshot = new Map<number, WindowEntry>();
    for (const [id, { snapshot, time }] of this.ids) {
      if (snapshot > this.scannedUpTo || time <= after) continue;
      let entry = bySnapshot.get(snapshot);
      if (!entry) bySnapshot.set(snapshot, (entry = [snapshot, time, []]));
      entry[2].push(id);
    }
    const known = [...bySnapshot.values()].sort((a, b) => b[0] - a[0]);
    return encodeWindowCheckpoint(this.scannedUpTo, after, known);
  }

  /**
   * True when, as of the last refresh, every snapshot committed after `time` (epoch ms) was read
   * and is still remembered: none was missing (expired) and none has left the window. A batch
   * written after `time` that snapshotOf does not know was then in no snapshot at all.
   */
  knowsEverySnapshotAfter(time: number): boolean {
    return time >= Math.max(this.completeAfter, this.horizon);
  }

  /** The newest snapshot noted (0 before the first refresh, or while the table has none): what the answers above are as of. */
  get notedThrough(): number {
    return this.scannedUpTo;
  }

  /** The snapshot that holds batch or source `id`, if one within the window does. */
  snapshotOf(id: string): number | undefined {
    const found = this.ids.get(id);
    return found && found.time >= this.horizon ? found.snapshot : undefined;
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
      for (const id of ids) if (typeof id === 'string') this.remember(id, s.id, s.timeMillis);
    }
  }

  private remember(id: string, snapshot: number, time: number): void {
    this.ids.set(id, { snapshot, time });
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
