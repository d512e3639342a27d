/**
 * The stream scan (Paimon's DataTableStreamScan): a first plan chosen by `scan.mode` (or a stored
 * consumer position), then one snapshot at a time. With `changelog-producer = none` only APPEND
 * snapshots are read, as the level-0 files they added (COMPACT snapshots only reorganise files);
 * with `input`, `lookup` or `full-compaction` every snapshot that carries changelog files is read
 * from those. beyond Paimon: a start or next snapshot that has expired is a SnapshotExpiredError
 * naming the lost range, unless `scan.on-expired = skip-to-earliest`.
 */
import { SnapshotExpiredError } from '../errors.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import { readChangelogFiles, readDeltaEntries, readLiveFiles } from '../manifest/scan.js';
import { readTag } from '../snapshot/tags.js';
import { listChangelogIds, snapshotOrChangelog, tryReadChangelog } from '../snapshot/changelog.js';
import { followUpSource, streamsOverwrite } from '../table/follow-up.js';
import type { Table } from '../table/table.js';
import { readConsumer } from '../snapshot/consumer.js';
import { splitsOf, type Split } from './split.js';
import { schemaChangeEvent, type SchemaChangeEvent } from './schema-change.js';
import { resolveStreamOptions, type ResolvedStreamOptions, type StreamOptions } from './stream-options.js';

/** Where a stream starts: the full state of `snapshotId` (then its successors), or the changes of `snapshotId` onwards. */
export interface StreamStart {
  snapshotId: number;
  full: boolean;
  /**
   * Set when the asked-for start had expired and `scan.on-expired = skip-to-earliest` moved it on:
   * snapshots `from`..`to − 1` are skipped, and whoever starts the stream must say so.
   */
  skipped?: { from: number; to: number };
}

/** The splits one snapshot contributes to a stream (possibly none). */
export interface StreamPlan {
  snapshot: Snapshot;
  splits: Split[];
  /**
   * Set when this snapshot's schema is newer than the stream's: from here on the stream reads
   * through `schema` (rows in the new columns), and `StreamScan.table` is the table at it.
   */
  schemaChange?: SchemaChangeEvent;
  /**
   * Set for an OVERWRITE snapshot (write --overwrite, truncate, drop-partition): the stream skips
   * it (Paimon's default), so rows it replaced or added are not streamed; a reader should say so.
   */
  overwriteSkipped?: boolean;
  /**
   * Set when the stream skipped snapshots `from`..`to − 1` before this one because they had
   * expired (`scan.on-expired = skip-to-earliest`): their changes are lost to it; a reader must say so.
   */
  skipped?: { from: number; to: number };
}

/** Where a stream with these options starts now, ignoring any consumer position. */
export async function resolveStart(table: Table, opts: ResolvedStreamOptions): Promise<StreamStart> {
  const sm = table.snapshots;
  switch (opts.mode) {
    case 'latest-full': {
      const latest = await sm.latestId();
      return latest === undefined ? { snapshotId: 1, full: false } : { snapshotId: latest, full: true };
    }
    case 'latest': {
      const latest = await sm.latestId();
      return { snapshotId: latest === undefined ? 1 : latest + 1, full: false };
    }
    case 'earliest': {
      // The oldest changes still readable: the first long-lived changelog, else the earliest snapshot.
      const earliest = await sm.earliestId();
      const kept =
        earliest === undefined
          ? undefined
          : (await listChangelogIds(table.store, table.path)).find((c) => c < earliest);
      return { snapshotId: kept ?? earliest ?? 1, full: false };
    }
    case 'compacted-full': {
      // Paimon's CompactedStartingScanner: the latest COMPACT snapshot's full state, then the
      // changes after it; the latest snapshot when no compaction is left.
      const picked = await latestCompacted(table);
      return picked === undefined ? { snapshotId: 1, full: false } : { snapshotId: picked, full: true };
    }
    case 'from-snapshot':
    case 'from-snapshot-full': {
      const full = opts.mode === 'from-snapshot-full';
      // A tag keeps its snapshot's files, but a stream also needs the snapshots after it.
      const wanted = opts.snapshotId ?? (await readTag(table.store, table.path, opts.tag!)).id;
      const id = await checkNotExpired(table, wanted, opts, full ? 'its full state' : 'its changes', full);
      return { snapshotId: id, full, ...(id > wanted ? { skipped: { from: wanted, to: id } } : {}) };
    }
    case 'from-timestamp': {
      const ts = opts.timestampMillis!;
      // The first snapshot committed at or after ts (Paimon: 1 + the last one before ts).
      const before = await sm.snapshotAtOrBefore(ts - 1);
      if (before !== undefined) return { snapshotId: before.id + 1, full: false };
      const earliest = await sm.earliest();
      if (earliest === undefined) return { snapshotId: 1, full: false };
      if (earliest.id > 1 && opts.onExpired === 'fail') {
        // Snapshots before the earliest are gone and nothing says they were older than ts.
        throw new SnapshotExpiredError(
          `${table.name} has no snapshot left from before ${new Date(ts).toISOString()}: snapshots 1..${earliest.id - 1} have expired and ` +
            `may have held changes made after that time; start later, read from snapshot ${earliest.id} knowingly ` +
            '(scan.mode=from-snapshot), or set scan.on-expired=skip-to-earliest',
          { from: 1, to: earliest.id },
        );
      }
      // Accepted (skip-to-earliest), never silently: the expired snapshots may have held changes after ts.
      return {
        snapshotId: earliest.id,
        full: false,
        ...(earliest.id > 1 ? { skipped: { from: 1, to: earliest.id } } : {}),
      };
    }
  }
}

/** The newest snapshot a compaction committed, else the latest; undefined for a table without snapshots. */
async function latestCompacted(table: Table): Promise<number | undefined> {
  const ids = await table.snapshots.listIds();
  for (let i = ids.length - 1; i >= 0; i--) {
    const s = await table.snapshots.tryRead(ids[i]);
    if (s?.commitKind === 'COMPACT') return s.id;
  }
  return ids.at(-1);
}

/**
 * `id` when its snapshot can still be read (or is still to come), or for its changes only
 * (`full` false) when its long-lived changelog is kept; for an expired one a
 * SnapshotExpiredError naming the lost range, or the next readable one under `skip-to-earliest`.
 */
async function checkNotExpired(
  table: Table,
  id: number,
  opts: Pick<ResolvedStreamOptions, 'onExpired'>,
  what = 'its changes',
  full = false,
): Promise<number> {
  const earliest = await table.snapshots.earliestId();
  if (earliest !== undefined && id < earliest) {
    if (!full && (await tryReadChangelog(table.store, table.path, id)) !== undefined) return id;
    const next = full ? earliest : await nextReadable(table, id, earliest);
    if (opts.onExpired === 'skip-to-earliest') return next;
    throw expiredError(table, id, next, what);
  }
  // Expiry always keeps the latest snapshot: a table with none has never committed, so a
  // position at or after the earliest (or on an empty table) loses nothing.
  return id;
}

/** The first id after `id` whose changes can still be read: a long-lived changelog, else the earliest snapshot. */
async function nextReadable(table: Table, id: number, earliest: number): Promise<number> {
  const kept = (await listChangelogIds(table.store, table.path)).find((c) => c > id && c < earliest);
  return kept ?? earliest;
}

/**
 * The snapshot to plan `id` from: the snapshot, else (for its changes only) its long-lived
 * changelog; undefined when not committed yet; for an expired one a SnapshotExpiredError naming
 * the lost range, or `{ skipTo }` under `skip-to-earliest`.
 */
export async function readForPlan(
  table: Table,
  id: number,
  opts: Pick<ResolvedStreamOptions, 'onExpired'>,
  full = false,
): Promise<Snapshot | { skipTo: number } | undefined> {
  const snapshot = full
    ? await table.snapshots.tryRead(id)
    : await snapshotOrChangelog(table.snapshots, table.store, table.path, id);
  if (snapshot !== undefined) return snapshot;
  const earliest = await table.snapshots.earliestId();
  if (earliest === undefined || id >= earliest) return undefined; // not visible yet
  const next = full ? earliest : await nextReadable(table, id, earliest);
  if (opts.onExpired === 'skip-to-earliest') return { skipTo: next };
  throw expiredError(table, id, next, full ? 'its full state' : 'its changes');
}

/** The error for a stream position whose snapshot and changelog are gone; `next` is the first readable id after it. */
function expiredError(table: Table, id: number, next: number, what = 'its changes'): SnapshotExpiredError {
  return new SnapshotExpiredError(
    `snapshot ${id} of ${table.name} has expired, so ${what} can no longer be read: snapshots ${id}..${next - 1} are lost ` +
      `(the next one left is ${next}). Use a consumer id (--consumer-id) so that expiry keeps what a stream still needs, ` +
      'keep changelogs longer than snapshots (changelog.num-retained.min / changelog.time-retained), ' +
      'start again (scan.mode=latest-full), or accept the gap with scan.on-expired=skip-to-earliest (varve tail: --on-expired skip-to-earliest)',
    { from: id, to: next },
  );
}

/** The splits of a snapshot's full state, for a stream's first plan. */
export async function planFull(table: Table, snapshot: Snapshot): Promise<Split[]> {
  let entries = await readLiveFiles(table.store, table.path, snapshot);
  const producer = table.options.changelogProducer;
  // Level-0 files will still yield changelog when compaction picks them up (Paimon
  // DataTableStreamScan.tryFirstPlan): reading them now would deliver their changes twice.
  if (producer === 'lookup') entries = entries.filter((e) => e.file.level > 0);
  if (producer === 'full-compaction') {
    const max = maxLevelOf(table);
    entries = entries.filter((e) => e.file.level >= max);
  }
  return withSchemaId(splitsOf(snapshot.id, 'full', entries), snapshot);
}

/** The splits a snapshot (or its long-lived changelog) contributes to a stream that follows the table (possibly none). */
export async function planFollowUp(table: Table, snapshot: Snapshot): Promise<Split[]> {
  switch (followUpSource(table, snapshot)) {
    case 'overwrite':
      // Paimon: streamed only with streaming-read-overwrite (as before/after diffs), else skipped.
      return planOverwrite(table, snapshot);
    case 'delta': {
      // Paimon's DeltaFollowUpScanner (changelog-producer none): only APPEND snapshots; a COMPACT
      // one rewrites files without changing a row.
      const delta = await readDeltaEntries(table.store, table.path, snapshot);
      return withSchemaId(
        splitsOf(
          snapshot.id,
          'delta',
          delta.filter((e) => e.kind === 'ADD' && e.file.level === 0),
        ),
        snapshot,
      );
    }
    case 'changelog':
      // Paimon's ChangelogFollowUpScanner: any snapshot with changelog files, APPEND or COMPACT.
      return withSchemaId(
        splitsOf(snapshot.id, 'changelog', await readChangelogFiles(table.store, table.path, snapshot)),
        snapshot,
      );
    case 'none':
      return [];
  }
}

/** The splits with the schema id of their snapshot: a reader reads them through that schema (or a newer one). */
function withSchemaId(splits: Split[], snapshot: Snapshot): Split[] {
  for (const s of splits) s.schemaId = snapshot.schemaId;
  return splits;
}

/**
 * The splits of an OVERWRITE snapshot read as changes: per (partition, bucket) it touched, the
 * files it removed (the state before) and the files it added (the state after).
 */
async function planOverwrite(table: Table, snapshot: Snapshot): Promise<Split[]> {
  const delta = await readDeltaEntries(table.store, table.path, snapshot);
  const removed = delta.filter((e) => e.kind === 'DELETE').map((e) => ({ ...e, kind: 'ADD' as const }));
  const after = splitsOf(snapshot.id, 'overwrite', delta);
  const before = splitsOf(snapshot.id, 'overwrite', removed);
  const byBucket = new Map(after.map((s) => [`${s.partition}\u0000${s.bucket}`, s]));
  for (const b of before) {
    const key = `${b.partition}\u0000${b.bucket}`;
    const s = byBucket.get(key);
    if (s) s.beforeFiles = b.files;
    else byBucket.set(key, { ...b, files: [], beforeFiles: b.files });
  }
  const splits = [...byBucket.values()].sort((a, b) =>
    a.partition < b.partition ? -1 : a.partition > b.partition ? 1 : a.bucket - b.bucket,
  );
  return withSchemaId(splits, snapshot);
}

/** The highest LSM level, where full compaction writes (`num-levels` − 1). */
function maxLevelOf(table: Table): number {
  return Math.max(1, table.options.numLevels - 1);
}

/**
 * A pull-based stream over a table (no queue): `plan()` returns the next snapshot's splits, or
 * undefined when the stream is caught up. With a consumer id, a stored position is where it
 * starts (unless `consumer.ignore-progress`); the scan itself never writes the consumer.
 */
export class StreamScan {
  private next?: number;
  private full = false;
  private readonly consumerId?: string;
  readonly options: ResolvedStreamOptions;

  private current: Table;
  /** Whether a snapshot was planned yet (the first one sets the schema without an event). */
  private planned = false;
  /** Expired snapshots skipped and not yet reported with a plan. */
  private skipped?: { from: number; to: number };

  constructor(table: Table, opts: StreamOptions & { consumerId?: string } = {}) {
    this.current = table;
    this.options = resolveStreamOptions(table, opts);
    this.consumerId = opts.consumerId;
  }

  /** The table at the schema of the last snapshot planned: read its splits through this. */
  get table(): Table {
    return this.current;
  }

  /** The next snapshot the stream will read (undefined before the first plan). */
  get nextSnapshot(): number | undefined {
    return this.next;
  }

  /** Continues from `nextSnapshot` (a checkpointed position) instead of the first plan. */
  restore(nextSnapshot: number): void {
    this.next = nextSnapshot;
    this.full = false;
  }

  /** The splits of the next snapshot that has any, or undefined when no such snapshot exists yet. */
  async plan(): Promise<StreamPlan | undefined> {
    if (this.next === undefined) {
      const start = await this.start();
      this.next = start.snapshotId;
      this.full = start.full;
    }
    for (;;) {
      const id: number = this.next;
      // A snapshot that expired is read from its long-lived changelog, when kept (changes only).
      const found = await readForPlan(this.table, id, this.options, this.full);
      if (found === undefined) return undefined;
      if ('skipTo' in found) {
        // Never silently: the next plan names what was skipped.
        this.skipped = { from: this.skipped?.from ?? id, to: found.skipTo };
        this.next = found.skipTo;
        continue;
      }
      const snapshot = found;
      // Each snapshot is read through its own schema; after the first one, a change is reported.
      let schemaChange: StreamPlan['schemaChange'];
      if (snapshot.schemaId !== this.current.schema.id) {
        const schema = await this.current.schemaById(snapshot.schemaId);
        if (this.planned) schemaChange = schemaChangeEvent(snapshot.id, this.current.schema, schema);
        this.current = this.current.withSchema(schema);
      }
      this.planned = true;
      const overwriteSkipped =
        !this.full && snapshot.commitKind === 'OVERWRITE' && !streamsOverwrite(this.table, snapshot);
      const splits = this.full ? await planFull(this.table, snapshot) : await planFollowUp(this.table, snapshot);
      this.full = false;
      this.next = id + 1;
      const skipped = this.skipped;
      if (splits.length > 0 || schemaChange || overwriteSkipped || skipped) {
        this.skipped = undefined;
        return {
          snapshot,
          splits,
          ...(schemaChange ? { schemaChange } : {}),
          ...(overwriteSkipped ? { overwriteSkipped } : {}),
          ...(skipped ? { skipped } : {}),
        };
      }
    }
  }

  private async start(): Promise<StreamStart> {
    if (this.consumerId !== undefined && !this.options.ignoreProgress) {
      const c = await readConsumer(this.table.store, this.table.path, this.consumerId);
      if (c) {
        const full = c.fullSnapshot === c.nextSnapshot;
        const snapshotId = await checkNotExpired(
          this.table,
          c.nextSnapshot,
          this.options,
          full ? 'its full state' : 'its changes',
          full,
        );
        if (snapshotId > c.nextSnapshot) this.skipped = { from: c.nextSnapshot, to: snapshotId };
        return { snapshotId, full };
      }
    }
    const start = await resolveStart(this.table, this.options);
    // An expired start skipped under skip-to-earliest: the first plan names it.
    if (start.skipped) this.skipped = start.skipped;
    return start;
  }
}
