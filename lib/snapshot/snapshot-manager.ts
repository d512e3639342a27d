/**
 * Finding and reading a table's snapshots. Snapshot files are the truth; the LATEST and EARLIEST
 * hints only save a listing and are checked before being trusted (Paimon's HintFileUtils):
 * LATEST = N is trusted only when snapshot-N exists and snapshot-(N+1) does not, EARLIEST = N only
 * when snapshot-N exists. Hint writes are best effort and never affect correctness.
 * **beyond**: Paimon writes LATEST on every commit; varve's committers write it only when the
 * lookup of their base found it behind (or missing, or did not consult it: a lost warm base), so
 * a commit is three metadata PUTs (manifest, manifest list, snapshot) whenever the hint was
 * current; expiry and rollback write it too. The hint then lags by the commits of the writers
 * that stayed warm since plus one per cold writer that found it current: a cold writer after such
 * a one finds it one behind (one HEAD more) and writes it. A
 * lookup gallops forward from the hint, or from the newest id this manager has seen: HEADs at
 * +1, +2, +4, … until one is missing, then a binary search between the last present and the first
 * missing id (ids are contiguous), so a lag of G costs about 2·log2(G) HEADs and never a listing.
 * It lists only when neither start point exists (an expired hint, a table rolled back below it).
 */
import { ObjectNotFoundError, SnapshotNotFoundError } from '../errors.js';
import type { Snapshot } from './snapshot.js';
import { objectLocation } from '../store/json-file.js';
import { newestNumbered } from '../store/numbered-objects.js';
import type { ObjectStore } from '../store/object-store.js';
import { fromUtf8, utf8 } from '../store/object-store.js';
import { RetryBudget, TryAgain } from '../retry-budget.js';
import { earliestHintKey, latestHintKey, snapshotDir, snapshotKey, displayTableName } from './paths.js';
import { parseSnapshot } from './snapshot-file.js';

const SNAPSHOT_NAME = /\/?snapshot-(\d+)$/;
const CACHE_LIMIT = 1000;
/** How often a lookup restarts when expiry deletes the snapshots it is looking at. */
const EXPIRY_RACE_RETRIES = 4;

/** Options of a SnapshotManager. */
export interface SnapshotManagerOptions {
  /**
   * Keep the content of snapshots read (they are immutable once created), so repeated lookups
   * cost nothing. A cached snapshot may since have expired, or been removed by a rollback and its
   * id reused: use it for commits (which check their parent after creating a snapshot) and
   * duplicate detection (which confirms a match freshly), not for existence checks.
   */
  cacheSnapshots?: boolean;
}

/** The snapshots of one table (the `snapshot/` folder under `tablePath`). */
export class SnapshotManager {
  private readonly cache?: Map<number, Snapshot>;
  /** The highest id seen to exist (ids only grow; it may have expired since). */
  private newestId?: number;
  /** With cacheSnapshots: the content of snapshot `newestId`, when read or committed here. */
  private newest?: Snapshot;
  /**
   * performance.now() before which snapshot `newestId + 1` had not been created: the send time of
   * this process's put that created `newestId` (no id is created before its predecessor), or of a
   * HEAD that found `newestId + 1` missing when a request sent after its answer found `newestId`
   * (expiry deletes oldest first, so `newestId + 1` had not been created and expired before it).
   * The evidence a committer's bet on `newestId` rests on (commit-steps.ts publish).
   */
  private nextAbsentAt?: number;
  /**
   * True once a lookup (latestId) found the LATEST hint behind the newest snapshot, found none, or
   * galloped from a known id to a newer one without reading the hint: the next commit writes the
   * hint (takeHintBehind). A lookup that finds the known id still the newest (a warm committer's
   * check before its next commit) learns nothing of the hint and leaves it to the cold writers.
   */
  private hintBehind = false;

  constructor(
    readonly store: ObjectStore,
    readonly tablePath: string,
    opts: SnapshotManagerOptions = {},
  ) {
    if (opts.cacheSnapshots) this.cache = new Map();
  }

  /** Key of `snapshot-<id>`. */
  snapshotKey(id: number): string {
    return snapshotKey(this.tablePath, id);
  }

  /** True when `snapshot-<id>` exists now (never answered from the cache). */
  async exists(id: number): Promise<boolean> {
    const found = (await this.store.head(this.snapshotKey(id))) !== undefined;
    if (found) this.seen(id);
    return found;
  }

  private seen(id: number, s?: Snapshot): void {
    if (this.newestId === undefined || id > this.newestId) {
      this.newestId = id;
      this.newest = undefined;
      this.nextAbsentAt = undefined;
    }
    if (s !== undefined && id === this.newestId && this.cache) this.newest = s;
  }

  /**
   * performance.now() before which snapshot `id + 1` had not been created, when this manager has
   * such evidence for `id`, its newest known id (see nextAbsentAt); else undefined.
   */
  nextAbsentSince(id: number): number | undefined {
    return id === this.newestId ? this.nextAbsentAt : undefined;
  }

  /** Records snapshot `s` as created by this process's put-if-absent, sent at `sent`. */
  created(s: Snapshot, sent: number): void {
    this.remember(s);
    if (s.id === this.newestId && (this.nextAbsentAt === undefined || sent > this.nextAbsentAt))
      this.nextAbsentAt = sent;
  }

  /**
   * With cacheSnapshots: the newest snapshot this manager read or was told of (`remember`), which
   * may since have been followed by others or have expired. A warm committer's optimistic base.
   */
  newestKnown(): Snapshot | undefined {
    return this.newest;
  }

  /** Records a snapshot known to exist (e.g. one this process just committed). */
  remember(s: Snapshot): void {
    if (this.cache) {
      if (this.cache.size >= CACHE_LIMIT) this.cache.delete(this.cache.keys().next().value as number);
      this.cache.set(s.id, s);
    }
    this.seen(s.id, s);
  }

  /** Snapshot `id`, or undefined when it does not exist (never created, or expired). */
  async tryRead(id: number): Promise<Snapshot | undefined> {
    const cached = this.cache?.get(id);
    if (cached !== undefined) return cached;
    const key = this.snapshotKey(id);
    let body: Uint8Array;
    try {
      body = (await this.store.get(key)).body;
    } catch (e) {
      if (e instanceof ObjectNotFoundError) return undefined;
      throw e;
    }
    const s = parseSnapshot(body, `snapshot file ${objectLocation(this.store, key)}`, id);
    this.remember(s);
    return s;
  }

  /** Snapshot `id` as stored now (never from the cache: after a rollback an id may hold another snapshot). */
  async tryReadFresh(id: number): Promise<Snapshot | undefined> {
    this.cache?.delete(id);
    return this.tryRead(id);
  }

  /**
   * Forgets what this manager knows of snapshots above `id` (after a rollback removed them, or a
   * commit withdrew one): their ids may be created again with other content.
   */
  forgetFrom(id: number): void {
    if (this.cache) for (const k of [...this.cache.keys()]) if (k > id) this.cache.delete(k);
    if (this.newestId !== undefined && this.newestId > id) {
      this.newestId = undefined;
      this.newest = undefined;
      this.nextAbsentAt = undefined;
    }
  }

  /** Snapshot `id`; SnapshotNotFoundError naming the available range when it does not exist. */
  async read(id: number): Promise<Snapshot> {
    const s = await this.tryRead(id);
    if (s !== undefined) return s;
    const [earliest, latest] = await Promise.all([this.earliestId(), this.latestId()]);
    if (earliest === undefined || latest === undefined) {
      throw new SnapshotNotFoundError(
        `snapshot ${id} does not exist: table ${displayTableName(this.tablePath)} has no snapshot yet; commit data first`,
      );
    }
    const why = id < earliest ? 'it has expired' : 'it has not been committed';
    throw new SnapshotNotFoundError(
      `snapshot ${id} does not exist (${why}); available snapshots of ${this.tablePath} are ${earliest}..${latest}`,
      { earliest, latest },
    );
  }

  /** Every snapshot id present, ascending (by listing). */
  async listIds(): Promise<number[]> {
    const ids: number[] = [];
    for await (const o of this.store.list(snapshotDir(this.tablePath))) {
      // Non-numeric names (hints, temp files) are not snapshots.
      const m = SNAPSHOT_NAME.exec(o.key);
      if (m) ids.push(Number(m[1]));
    }
    return ids.sort((a, b) => a - b);
  }

  private async readHint(key: string): Promise<number | undefined> {
    try {
      const text = fromUtf8((await this.store.get(key)).body).trim();
      return /^\d+$/.test(text) ? Number(text) : undefined;
    } catch {
      // A hint that cannot be read is no hint: fall back to listing.
      return undefined;
    }
  }

  /**
   * Calls `onChange` soon after the snapshot folder changes (a commit, a hint, an expiry), when the
   * store can notify (a local folder); returns the function that stops it. A hint to look, never
   * a substitute for reading: callers keep a polling backstop (S3 cannot notify).
   */
  watch(onChange: () => void): () => void {
    return this.store.watch?.(snapshotDir(this.tablePath), onChange) ?? (() => {});
  }

  /** Id of the newest snapshot, or undefined for a table with none. */
  async latestId(): Promise<number | undefined> {
    const known = this.newestId;
    if (known !== undefined) {
      const id = await this.gallopFrom(known);
      if (id !== undefined) {
        if (id !== known) this.hintBehind = true;
        return id;
      }
    }
    const hint = await this.readHint(latestHintKey(this.tablePath));
    if (hint !== undefined && hint > 0 && hint !== known) {
      const id = await this.gallopFrom(hint);
      if (id !== undefined) {
        if (id !== hint) this.hintBehind = true;
        return id;
      }
    }
    this.hintBehind = true;
    const ids = await this.listIds();
    if (ids.length === 0) return undefined;
    // The newest id whose predecessor is listed too (or the only one): above a gap is a snapshot
    // created on a base an earlier varve's rollback removed (see gallopFrom). A commit may have
    // landed after the listing was taken: gallop on from there.
    let top = ids.length - 1;
    while (top > 0 && ids[top - 1] !== ids[top] - 1) top--;
    return this.gallopFrom(ids[top]);
  }

  /**
   * The newest id at or after `start` (ids are contiguous: expiry removes the oldest, rollback the
   * newest), found by HEADs at start+1, start+2, start+4, … and then a binary search between the
   * last present and the first missing id; undefined when `start` does not exist.
   * The answer N was seen to exist and N + 1 seen missing (Paimon's check of a LATEST hint).
   * `start + 1` is looked at first and `start` only after its answer: found missing and then
   * `start` found present, `start + 1` had not been created by then (expiry deletes oldest first),
   * which a committer's bet on `start` needs (nextAbsentSince). Asked at once, both may have
   * expired between the two answers, and `start` be taken for the latest when it is long gone.
   */
  private async gallopFrom(start: number): Promise<number | undefined> {
    const sent = performance.now();
    const next = (await this.store.head(this.snapshotKey(start + 1))) !== undefined;
    // A caching manager reads `start` (its content is what the caller asks for next) rather than
    // checking that it exists: one GET instead of a HEAD and then a GET.
    const here =
      this.cache !== undefined && !this.cache.has(start)
        ? (await this.tryRead(start)) !== undefined
        : await this.exists(start);
    if (!next) {
      if (!here) return undefined;
      if (start === this.newestId && (this.nextAbsentAt === undefined || sent > this.nextAbsentAt))
        this.nextAbsentAt = sent;
      return start;
    }
    // `start` gone but `start + 1` there: either `start` expired (then the caller's slower path
    // finds the same answer) or a rollback of an earlier varve (which deleted snapshots) removed
    // it and `start + 1` was created on a removed base. Galloping on (or remembering `start + 1`
    // as seen) would hand a reader that snapshot: removed rows, or a missing manifest.
    if (!here) return undefined;
    this.seen(start + 1);
    return newestNumbered(
      start + 1,
      (step) => start + step,
      (id) => this.exists(id),
    );
  }

  /** Id of the oldest snapshot still present, or undefined for a table with none. */
  async earliestId(): Promise<number | undefined> {
    const hint = await this.readHint(earliestHintKey(this.tablePath));
    if (hint !== undefined && hint > 0 && (await this.exists(hint))) return hint;
    const ids = await this.listIds();
    return ids.length === 0 ? undefined : ids[0];
  }

  /**
   * The newest snapshot, or undefined for a table with none. With `fresh`, its content is read
   * from the store, never from the cache (a decision that must see what the id holds now).
   */
  async latest(opts: { fresh?: boolean } = {}): Promise<Snapshot | undefined> {
    return this.acrossExpiry('reading the latest snapshot', async () => {
      const id = await this.latestId();
      if (id === undefined) return undefined;
      // latestId checked that id+1 did not exist; a commit landing since makes this answer
      // stale, never wrong (a commit on it loses the race and reloads).
      const s = opts.fresh ? await this.tryReadFresh(id) : await this.tryRead(id);
      return s ?? new TryAgain(`snapshot ${id}, the latest, disappeared while being read`);
    });
  }

  /** The oldest snapshot still present, or undefined; retried when expiry deletes it meanwhile. */
  async earliest(): Promise<Snapshot | undefined> {
    return this.acrossExpiry('reading the earliest snapshot', async () => {
      const id = await this.earliestId();
      if (id === undefined) return undefined;
      return (await this.tryRead(id)) ?? new TryAgain(`snapshot ${id}, the earliest, expired while being read`);
    });
  }

  /** A lookup that starts again, at once, when expiry deletes the snapshots it is looking at; RetriesExhaustedError after EXPIRY_RACE_RETRIES. */
  private acrossExpiry<T>(what: string, attempt: () => Promise<T | TryAgain>): Promise<T> {
    const budget = new RetryBudget({
      what: `${what} of ${displayTableName(this.tablePath)}`,
      maxRetries: EXPIRY_RACE_RETRIES,
      minWaitMs: 0,
      maxWaitMs: 0,
      advice: 'expiry kept deleting the snapshots being read; retry',
    });
    return budget.run(attempt);
  }

  /**
   * The newest snapshot at or after `fromId` that exists, reading forward while the next exists;
   * SnapshotNotFoundError when `fromId` itself is absent.
   */
  async walkForward(fromId: number): Promise<Snapshot> {
    let current = await this.read(fromId);
    for (;;) {
      const next = await this.tryRead(current.id + 1);
      if (next === undefined) return current;
      current = next;
    }
  }

  /**
   * The newest snapshot committed at or before `timeMillis`, or undefined when every present
   * snapshot is newer. Binary search on timeMillis (non-decreasing with the id, which the commit
   * guarantees); restarts when expiry removes the snapshots under it.
   */
  async snapshotAtOrBefore(timeMillis: number): Promise<Snapshot | undefined> {
    return this.acrossExpiry('a time lookup', async () => {
      const earliest = await this.earliest();
      if (earliest === undefined || earliest.timeMillis > timeMillis) return undefined;
      const latest = await this.latest();
      if (latest === undefined) return undefined;
      if (latest.timeMillis <= timeMillis) return latest;
      // Invariant: time(lo) <= timeMillis < time(hi).
      let lo = earliest;
      let hi = latest.id;
      while (hi - lo.id > 1) {
        const at = Math.floor((lo.id + hi) / 2);
        const mid = await this.tryRead(at);
        // Expired under us: the range moved, start again.
        if (mid === undefined) return new TryAgain(`snapshot ${at} expired during the search`);
        if (mid.timeMillis <= timeMillis) lo = mid;
        else hi = mid.id;
      }
      return lo;
    });
  }

  private async writeHint(key: string, id: number): Promise<void> {
    try {
      await this.store.put(key, utf8(String(id)));
    } catch {
      // Hints are best effort: a missing or stale hint only costs the next reader a listing.
    }
  }

  /**
   * Whether a lookup since the last call found the LATEST hint behind (or missing, or did not read
   * it): a committer then writes it after its commit. Resets the answer.
   */
  takeHintBehind(): boolean {
    const behind = this.hintBehind;
    this.hintBehind = false;
    return behind;
  }

  /** Records `id` as the LATEST hint (best effort, errors swallowed). */
  writeLatestHint(id: number): Promise<void> {
    return this.writeHint(latestHintKey(this.tablePath), id);
  }

  /** Records `id` as the EARLIEST hint (best effort, errors swallowed). */
  writeEarliestHint(id: number): Promise<void> {
    return this.writeHint(earliestHintKey(this.tablePath), id);
  }
}
