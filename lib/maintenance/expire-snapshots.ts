/**
 * Snapshot expiry (Paimon's ExpireSnapshotsImpl, reordered for safety). One run:
 * 1. expires idle consumers (`consumer.expiration-time`), so that they stop holding snapshots;
 * 2. finishes the journals of earlier runs that crashed or wait for their grace period;
 * 3. picks the range [earliest, end) by the retention rules (expiry-range.ts), never reaching
 *    the smallest `nextSnapshot` of a live consumer, at most `snapshot.expire.limit` snapshots;
 * 4. plans, read-only, the files only that range references (expiry-plan.ts);
 * 5. writes the plan as a journal, then moves EARLIEST to `end`, then deletes the snapshot files
 *    oldest first, and only then their data files, changelog files, manifests and manifest lists;
 * 6. expires long-lived changelogs past their own retention (expire-changelogs.ts).
 * With `changelog.*` retention longer than `snapshot.*` (Paimon's decoupled changelog), the
 * snapshots of the range still within the changelog retention each leave a long-lived changelog
 * (lib/snapshot/changelog.ts), written before the snapshot file goes, and nothing any changelog
 * keeps is deleted with the snapshots.
 *
 * beyond Paimon (its bug #6978): Paimon deletes data files first and the snapshot file last, so a
 * reader starting from the earliest snapshot can open one whose files are already gone. Here the
 * marker moves before anything is deleted and every snapshot file is deleted before any file it
 * names, so a snapshot a reader can open is always complete, and a crash anywhere leaves every
 * retained snapshot intact; the journal lets the next run finish the deletions. `graceMs` keeps
 * the files of just-expired snapshots for readers that opened them before they expired.
 */
import { icebergReferencedKeys } from '../iceberg/iceberg-references.js';
import { listConsumers, type Consumer } from '../snapshot/consumer.js';
import { listTags, type NamedTag } from '../snapshot/tags.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import type { Table } from '../table/table.js';
import { advanceEarliestMarker, validEarliestMarker } from './earliest-marker.js';
import { expireConsumers } from './expire-consumers.js';
import { expireIdentifierIndexes } from './expire-identifiers.js';
import {
  applyJournal,
  listJournals,
  writeJournal,
  journalKey,
  type ExpiryJournal,
  type JournalOutcome,
} from './expiry-journal.js';
import { ExpiryRaceSignal, planDeletions, type DeletionPlan } from './expiry-plan.js';
import {
  expiryBound,
  resolveChangelogRetention,
  resolveRetention,
  type ChangelogRetention,
  type ExpiryHold,
  type RetentionOverrides,
} from './expiry-range.js';
import { changelogBound, expireChangelogs } from './expire-changelogs.js';
import { changelogKeys, changelogRetained } from './snapshot-references.js';
import { indexedIdentifiersOf } from '../snapshot/commit-identifier.js';
import {
  listChangelogIds,
  tryReadChangelog,
  type ChangelogRetained,
  type LongLivedChangelog,
} from '../snapshot/changelog.js';

/** Options of one expiry run; unset ones come from the table options. */
export interface ExpireSnapshotsOptions extends RetentionOverrides {
  /** Epoch ms the run takes as now. @default Date.now() */
  now?: number;
  /** Delay between expiring a snapshot and deleting its files (for readers already inside it). @default 0 */
  graceMs?: number;
  /** Expire idle consumers first (`consumer.expiration-time`). @default true */
  expireConsumers?: boolean;
  /** Delete commit identifier indexes past `commit.identifier-retention` whose snapshot expired. @default true */
  expireIdentifiers?: boolean;
}

/** What one expiry run did. */
export interface ExpireSnapshotsResult {
  /** Snapshot ids whose snapshot files this run deleted (including those of earlier, unfinished runs). */
  expired: number[];
  /** Objects deleted: data files, changelog files, manifests and manifest lists. */
  deletedFiles: number;
  deleted: { dataFiles: number; changelogFiles: number; manifests: number; manifestLists: number };
  /** Files of expired snapshots kept until the grace period ends (a later run deletes them). */
  pendingFiles: number;
  /** Oldest and newest snapshot after the run (undefined for a table with none). */
  earliest?: number;
  latest?: number;
  /** What stopped the run from expiring more. */
  heldBy?: ExpiryHold;
  /** The consumer whose position held expiry back, when `heldBy` is 'consumer'. */
  heldByConsumer?: { id: string; nextSnapshot: number };
  /** Consumers removed by consumer expiration in this run. */
  expiredConsumers: string[];
  /** Expired consumer ids whose tombstone passed `consumer.tombstone-retention` and was removed. */
  removedTombstones: string[];
  /** True when the table has consumers and no `consumer.expiration-time`: they hold snapshots forever. */
  consumersNeverExpire: boolean;
  /** True when `changelog.*` retention outlives snapshots: expired snapshots leave long-lived changelogs. */
  changelogDecoupled: boolean;
  /** Long-lived changelogs written for the snapshots this run expired (`changelog/changelog-<id>`). */
  changelogsWritten: number[];
  /** Long-lived changelogs this run expired (with the files only they kept). */
  changelogsExpired: number[];
  /** True when another expiry run or a new consumer changed the table under this run: run again. */
  raced: boolean;
  /** Commit identifier index objects deleted (expire-identifiers.ts). */
  expiredIdentifiers: number;
}

function emptyResult(): ExpireSnapshotsResult {
  return {
    expired: [],
    deletedFiles: 0,
    deleted: { dataFiles: 0, changelogFiles: 0, manifests: 0, manifestLists: 0 },
    pendingFiles: 0,
    expiredConsumers: [],
    removedTombstones: [],
    consumersNeverExpire: false,
    changelogDecoupled: false,
    changelogsWritten: [],
    changelogsExpired: [],
    raced: false,
    expiredIdentifiers: 0,
  };
}

function record(result: ExpireSnapshotsResult, o: JournalOutcome, kind?: 'changelog'): void {
  if (kind === 'changelog') result.changelogsExpired.push(...o.changelogs);
  else result.changelogsWritten.push(...o.changelogs);
  result.expired.push(...o.snapshots);
  result.deleted.dataFiles += o.dataFiles;
  result.deleted.changelogFiles += o.changelogFiles;
  result.deleted.manifests += o.manifests;
  result.deleted.manifestLists += o.manifestLists;
  result.deletedFiles += o.dataFiles + o.changelogFiles + o.manifests + o.manifestLists;
  result.pendingFiles += o.pendingFiles;
}

/**
 * Expires old snapshots of `table` and deletes the files only they referenced (see the file
 * comment), then the commit identifier indexes past their lifetime (expire-identifiers.ts).
 */
export async function expireSnapshots(table: Table, opts: ExpireSnapshotsOptions = {}): Promise<ExpireSnapshotsResult> {
  const result = await expireSnapshotRange(table, opts);
  if (!result.raced) {
    // Then the long-lived changelogs past their own retention (expire-changelogs.ts).
    const now = opts.now ?? Date.now();
    const retention = resolveChangelogRetention(table, resolveRetention(table, opts));
    const c = await expireChangelogs(table, retention, { now, graceMs: opts.graceMs ?? 0 });
    if (c.outcome) record(result, c.outcome, 'changelog');
    result.raced = c.raced;
  }
  if (opts.expireIdentifiers !== false)
    result.expiredIdentifiers = (await expireIdentifierIndexes(table, { now: opts.now })).deleted;
  return result;
}

async function expireSnapshotRange(table: Table, opts: ExpireSnapshotsOptions): Promise<ExpireSnapshotsResult> {
  const now = opts.now ?? Date.now();
  const retention = resolveRetention(table, opts);
  const changelogRetention = resolveChangelogRetention(table, retention);
  const result = emptyResult();
  result.changelogDecoupled = changelogRetention.decoupled;
  if (opts.expireConsumers !== false) {
    const c = await expireConsumers(table, { now });
    result.expiredConsumers = c.expired;
    result.removedTombstones = c.removedTombstones;
    result.consumersNeverExpire = c.neverExpire && c.remaining.length > 0;
  }
  for (const { key, journal } of await listJournals(table))
    record(result, await applyJournal(table, key, journal, now), journal.kind);

  const sm = table.snapshots;
  const ids = await sm.listIds();
  const latest = await sm.latestId();
  if (ids.length === 0 || latest === undefined) return result;
  const lowest = ids[0];
  const marker = await validEarliestMarker(table);
  const earliest = Math.max(lowest, marker ?? lowest);
  result.latest = latest;
  result.earliest = earliest;
  // Warm committers leave the LATEST hint behind (snapshot-manager.ts): each run brings it up to
  // date, so a reader's gallop from it stays short on a table that is expired regularly.
  await sm.writeLatestHint(latest);

  const seen = new Map<number, Snapshot | undefined>();
  const read = async (id: number) => {
    if (!seen.has(id)) seen.set(id, await sm.tryRead(id));
    return seen.get(id);
  };
  const consumers = await listConsumers(table.store, table.path);
  const bound = await expiryBound({ earliest, latest, retention, consumers, now, read });
  result.heldBy = bound.heldBy;
  result.heldByConsumer = bound.consumer;
  const end = bound.end;
  if (end <= lowest) {
    // Nothing to expire; still give readers a valid marker to start from (as Paimon does).
    if (marker === undefined) await advanceEarliestMarker(table, lowest);
    return result;
  }
  const range: ExpiryRange = { lowest, end, latest, now, consumers, changelogRetention, read };
  const planned = await planJournal(table, range, opts.graceMs ?? 0);
  // undefined: another run or a new consumer changed the table under this one (see each step).
  if (planned === undefined || !(await writeJournal(table, planned.journal))) {
    result.raced = true;
    return result;
  }
  record(result, await applyJournal(table, journalKey(table.path, end), planned.journal, now, planned.retained));
  result.earliest = end;
  return result;
}

/** The snapshots [lowest, end) one run expires, and what it read to choose them. */
interface ExpiryRange {
  lowest: number;
  end: number;
  latest: number;
  now: number;
  consumers: readonly Consumer[];
  changelogRetention: ChangelogRetention;
  /** Reads a snapshot once per run (undefined once it is gone). */
  read: (id: number) => Promise<Snapshot | undefined>;
}

/**
 * The journal of `range`'s expiry: the files only it references, less those a long-lived
 * changelog or the current Iceberg export still reads, and the identifiers it indexed. Undefined
 * when the table changed under the plan (the run reports `raced`).
 */
async function planJournal(
  table: Table,
  range: ExpiryRange,
  graceMs: number,
): Promise<{ journal: ExpiryJournal; retained: Map<number, ChangelogRetained> } | undefined> {
  const { lowest, end, now } = range;
  const tags = await listTags(table.store, table.path);
  const deletions = await planRangeDeletions(table, range, tags);
  if (deletions === undefined) return undefined;
  const kept = await keepChangelogFiles(table, range, deletions);
  if (kept === undefined) return undefined;
  let plan = kept.plan;
  // Files the current Iceberg snapshot reads stay until the export moves on (orphan cleanup then removes them).
  const exported = await icebergReferencedKeys(table);
  if (exported.size > 0) plan = { ...plan, dataFiles: plan.dataFiles.filter((k) => !exported.has(k)) };
  // The indexed identifiers of the snapshots that go (read by the plan already: no request).
  const marks: Array<[number, string]> = [];
  for (let id = lowest; id < end; id++) {
    const snapshot = await range.read(id);
    if (snapshot === undefined) return undefined;
    for (const identifier of indexedIdentifiersOf(snapshot)) marks.push([id, identifier]);
  }
  const journal: ExpiryJournal = {
    version: 1,
    from: lowest,
    end,
    createdAt: now,
    deleteAfter: now + Math.max(0, graceMs),
    tags: Object.fromEntries(tags.map(({ name, tag }) => [name, tag.id])),
    ...(kept.changelogFrom === undefined ? {} : { changelogFrom: kept.changelogFrom }),
    ...plan,
    ...(marks.length === 0 ? {} : { marks }),
  };
  return { journal, retained: kept.retained };
}

/** The files only `range` references (read-only); undefined when another run or a new consumer got there first. */
async function planRangeDeletions(
  table: Table,
  range: ExpiryRange,
  tags: readonly NamedTag[],
): Promise<DeletionPlan | undefined> {
  const { lowest, end } = range;
  let plan: DeletionPlan;
  try {
    plan = await planDeletions(table, lowest, end, tags, range.read);
  } catch (e) {
    if (!(e instanceof ExpiryRaceSignal)) {
      // A snapshot expired under the plan means another run is at work; anything else is real.
      if (await table.snapshots.exists(lowest)) throw e;
    }
    return undefined;
  }
  // A consumer registered since the bound was computed may need part of the range: leave it.
  const before = new Map(range.consumers.map((c) => [c.id, c.nextSnapshot]));
  const latecomer = (await listConsumers(table.store, table.path)).find(
    (c) => c.nextSnapshot < end && c.nextSnapshot < (before.get(c.id) ?? Infinity),
  );
  return latecomer ? undefined : plan;
}

/**
 * Long-lived changelogs: snapshots [changelogFrom, end) leave one (written before each snapshot
 * goes), and nothing any changelog keeps is deleted with the snapshots. Returns `plan` less those
 * files, with what each leaving snapshot's changelog keeps; undefined when a snapshot is gone.
 */
async function keepChangelogFiles(
  table: Table,
  range: ExpiryRange,
  plan: DeletionPlan,
): Promise<{ plan: DeletionPlan; retained: Map<number, ChangelogRetained>; changelogFrom?: number } | undefined> {
  const { lowest, end, latest, now, consumers, changelogRetention } = range;
  let changelogFrom: number | undefined;
  const existing = await readExistingChangelogs(table, lowest);
  if (changelogRetention.decoupled) {
    const cEnd = await changelogBound(table, {
      changelogs: existing.map((c) => c.id),
      earliestSnapshot: lowest,
      latest,
      retention: changelogRetention,
      now,
      consumers,
    });
    if (cEnd < end) changelogFrom = Math.max(lowest, cEnd);
  }
  const retained = new Map<number, ChangelogRetained>();
  if (changelogFrom === undefined && existing.length === 0) return { plan, retained };
  const held = new Set<string>();
  for (const c of existing) for (const k of changelogKeys(table, c)) held.add(k);
  for (let id = changelogFrom ?? end; id < end; id++) {
    const snapshot = await range.read(id);
    if (snapshot === undefined) return undefined;
    const r = await changelogRetained(table, snapshot);
    retained.set(id, r);
    for (const k of changelogKeys(table, { ...snapshot, retained: r })) held.add(k);
  }
  const free = (keys: string[]) => keys.filter((k) => !held.has(k));
  return {
    plan: {
      dataFiles: free(plan.dataFiles),
      changelogFiles: free(plan.changelogFiles),
      manifests: free(plan.manifests),
      manifestLists: free(plan.manifestLists),
    },
    retained,
    changelogFrom,
  };
}

/** The long-lived changelogs below snapshot `lowest` (others are being written by a running expiry). */
async function readExistingChangelogs(table: Table, lowest: number): Promise<LongLivedChangelog[]> {
  const out: LongLivedChangelog[] = [];
  for (const id of await listChangelogIds(table.store, table.path)) {
    if (id >= lowest) continue;
    const c = await tryReadChangelog(table.store, table.path, id);
    if (c !== undefined) out.push(c);
  }
  return out;
}
