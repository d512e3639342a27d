/**
 * Rollback (Paimon's `rollback_to` / RollbackHelper): the table goes back to snapshot N, or to
 * the snapshot of tag T. What happens, in a crash-safe order:
 * 1. plan, read-only: the snapshots above N, the tags above N, the files only they reference
 *    (data and changelog files their deltas ADD, their manifests and manifest lists) minus every
 *    file snapshot N, a remaining tag or the current Iceberg export still needs;
 * 2. write the plan as the journal `rollback/rollback` (put-if-absent: one rollback at a time);
 * 3. delete the removed snapshot files newest first — the snapshots left are always 1..K with
 *    every file they name present — then sweep: a snapshot above N that a writer created during
 *    the rollback on a removed snapshot (its `varve.parent-commit` is not the snapshot below it)
 *    goes too, with everything above it; a commit made on N after the removal stays;
 * 4. the LATEST hint names the new latest, tags above N are deleted, consumers positioned after
 *    N + 1 are reset to N + 1 in a new run (queued splits of removed snapshots are dropped);
 * 5. the planned files are deleted, then the journal. A crash anywhere leaves a readable table
 *    (at worst some removed snapshots still present, complete); the next rollback call (or this
 *    one again) finishes the journal first.
 * Rolling back to a tag whose snapshot has expired writes the tag's snapshot back as
 * `snapshot-<id>` (Paimon does the same) and removes every newer snapshot and long-lived changelog.
 * Writers committing meanwhile: commit.ts checks after creating snapshot K that K − 1 is the
 * snapshot it planned on, and withdraws and retries a commit built on a removed snapshot; commit
 * identifiers of removed snapshots can be committed again (commit-identifier.ts).
 */
import { randomUUID } from 'node:crypto';
import * as v from 'valibot';
import { InvalidArgumentError, ObjectNotFoundError, RollbackInProgressError, SnapshotNotFoundError } from '../errors.js';
import { icebergReferencedKeys } from '../iceberg/iceberg-references.js';
import { LruManifestCache } from '../manifest/manifest-file.js';
import { jsonInt, jsonStringMap, jsonTime, type JsonSchema } from '../json.js';
import { metadataBytes } from '../manifest/metadata-json.js';
import { readEntries } from '../manifest/scan.js';
import { runLimited } from '../concurrency.js';
import { COMMIT_UUID_PROPERTY, PARENT_COMMIT_PROPERTY } from '../snapshot/commit.js';
import { listConsumers, writeConsumer, type ConsumerState } from '../snapshot/consumer.js';
import { snapshotBytes } from '../snapshot/snapshot-file.js';
import { changelogKey, listChangelogIds } from '../snapshot/changelog.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import { listTags, readTag } from '../snapshot/tags.js';
import { earliestHintKey, tagKey } from '../snapshot/paths.js';
import { parseJsonObject } from '../store/json-file.js';
import { fromUtf8, utf8 } from '../store/object-store.js';
import type { Table } from '../table/table.js';
import { addReferences, entryFileKey, readSnapshotManifests, snapshotReferences } from './snapshot-references.js';

/** Where to roll back to: a snapshot id or a tag name. */
export type RollbackTarget = { snapshotId: number; tag?: undefined } | { tag: string; snapshotId?: undefined };

/** The JSON content of `rollback/rollback`, written before a rollback deletes anything. */
export interface RollbackJournal {
  version: 1;
  /** The snapshot the table goes back to. */
  target: number;
  /** Commit uuid of the target snapshot (commits built on it after the removal are kept). */
  targetCommit?: string;
  createdAt: number;
  /** Removed snapshots: id → commit uuid. */
  snapshots: Record<string, string>;
  tags: string[];
  dataFiles: string[];
  changelogFiles: string[];
  manifests: string[];
  manifestLists: string[];
}

const RollbackJournalSchema: JsonSchema<RollbackJournal> = v.looseObject({
  version: v.literal(1),
  target: jsonInt,
  targetCommit: v.optional(v.string()),
  createdAt: jsonTime,
  snapshots: jsonStringMap,
  tags: v.array(v.string()),
  dataFiles: v.array(v.string()),
  changelogFiles: v.array(v.string()),
  manifests: v.array(v.string()),
  manifestLists: v.array(v.string()),
});

/** What a rollback did. */
export interface RollbackResult {
  /** The snapshot the table is at now. */
  target: number;
  /** Snapshot ids removed, newest first (including commits made during the rollback on removed snapshots). */
  removedSnapshots: number[];
  removedTags: string[];
  /** Consumers moved back: their old and new `nextSnapshot`. */
  resetConsumers: Array<{ id: string; from: number; to: number }>;
  deleted: { dataFiles: number; changelogFiles: number; manifests: number; manifestLists: number };
  /** True when the target was a tag whose snapshot had expired and was written back. */
  restoredFromTag: boolean;
}

const DELETE_PARALLELISM = 16;

/** Key of a table's rollback journal. */
function rollbackJournalKey(tablePath: string): string {
  return `${tablePath}/rollback/rollback`;
}

function uuidOf(s: Snapshot): string {
  return s.properties?.[COMMIT_UUID_PROPERTY] ?? `${s.id}@${s.timeMillis}`;
}

async function readJournal(table: Table): Promise<{ journal: RollbackJournal; etag: string } | undefined> {
  const key = rollbackJournalKey(table.path);
  try {
    const obj = await table.store.get(key);
    return { journal: parseJsonObject(table.store, key, obj.body, RollbackJournalSchema, { what: 'rollback journal' }), etag: obj.etag };
  } catch (e) {
    if (e instanceof ObjectNotFoundError) return undefined;
    throw e;
  }
}

/** Resolves the target to a snapshot that exists, writing a tag's expired snapshot back. */
async function resolveTarget(table: Table, target: RollbackTarget): Promise<{ snapshot: Snapshot; restored: boolean }> {
  const sm = table.snapshots;
  if (target.tag === undefined) {
    if (!Number.isInteger(target.snapshotId) || target.snapshotId < 1) {
      throw new InvalidArgumentError(`rollback needs a snapshot id of 1 or more, got ${target.snapshotId}`);
    }
    const s = await sm.tryReadFresh(target.snapshotId);
    if (s !== undefined) return { snapshot: s, restored: false };
    await sm.read(target.snapshotId); // throws SnapshotNotFoundError naming the available range
    throw new SnapshotNotFoundError(`snapshot ${target.snapshotId} of ${table.name} does not exist`);
  }
  const tag = await readTag(table.store, table.path, target.tag);
  const { tagCreateTime: _created, ...tagged } = tag;
  const s = await sm.tryReadFresh(tag.id);
  if (s !== undefined) return { snapshot: s, restored: false };
  const earliest = await sm.earliestId();
  if (earliest !== undefined && tag.id > earliest) {
    throw new SnapshotNotFoundError(`tag '${target.tag}' names snapshot ${tag.id}, which is missing although snapshot ${earliest} exists; run varve verify ${table.name}`);
  }
  // The tagged snapshot expired: the tag holds its JSON and keeps its files, so write it back.
  await table.store.putIfAbsent(sm.snapshotKey(tag.id), snapshotBytes(tagged));
  return { snapshot: (await sm.tryReadFresh(tag.id)) ?? tagged, restored: true };
}

/** Every file the target, the tags at or below it and the Iceberg export still need. */
async function keptFiles(table: Table, target: Snapshot, cache: LruManifestCache): Promise<Set<string>> {
  const keep = new Set<string>();
  addReferences(keep, await snapshotReferences(table, target, cache));
  for (const { tag } of await listTags(table.store, table.path)) {
    if (tag.id <= target.id) addReferences(keep, await snapshotReferences(table, tag, cache));
  }
  for (const k of await icebergReferencedKeys(table)) keep.add(k);
  return keep;
}

/** The files snapshots `removed` reference that `keep` does not, added to the journal's lists. */
async function addRemovedFiles(table: Table, j: RollbackJournal, removed: readonly Snapshot[], keep: Set<string>, cache: LruManifestCache): Promise<void> {
  const sets = {
    dataFiles: new Set(j.dataFiles),
    changelogFiles: new Set(j.changelogFiles),
    manifests: new Set(j.manifests),
    manifestLists: new Set(j.manifestLists),
  };
  for (const s of removed) {
    const m = await readSnapshotManifests(table, s);
    // Only files ADDed above the target can be the removed snapshots' own; every other file they
    // name was live at the target (a DELETE above it removed a file the target holds).
    for (const e of await readEntries(table.store, table.path, m.delta, {}, cache)) if (e.kind === 'ADD') sets.dataFiles.add(entryFileKey(table, e));
    for (const e of await readEntries(table.store, table.path, m.changelog, {}, cache)) if (e.kind === 'ADD') sets.changelogFiles.add(entryFileKey(table, e));
    for (const k of m.manifestKeys) sets.manifests.add(k);
    for (const k of m.listKeys) sets.manifestLists.add(k);
  }
  for (const [field, set] of Object.entries(sets)) j[field as keyof typeof sets] = [...set].filter((k) => !keep.has(k));
}

/** Rolls `table` back to a snapshot or tag (see the file comment). */
export async function rollbackTo(table: Table, target: RollbackTarget, opts: { now?: number } = {}): Promise<RollbackResult> {
  const now = opts.now ?? Date.now();
  const pending = await readJournal(table);
  if (pending !== undefined) {
    // A rollback that crashed (or runs right now: then both finish the same idempotent steps).
    const done = await applyJournal(table, pending.journal, pending.etag);
    const sameTarget = target.tag === undefined ? target.snapshotId === pending.journal.target : false;
    if (sameTarget) return done;
  }
  const { snapshot, restored } = await resolveTarget(table, target);
  const sm = table.snapshots;
  const latest = (await sm.latestId()) ?? snapshot.id;
  const removed: Snapshot[] = [];
  for (let id = latest; id > snapshot.id; id--) {
    const s = await sm.tryReadFresh(id);
    if (s !== undefined) removed.push(s);
  }
  const tags = (await listTags(table.store, table.path)).filter(({ tag }) => tag.id > snapshot.id).map(({ name }) => name);
  const journal: RollbackJournal = {
    version: 1,
    target: snapshot.id,
    targetCommit: snapshot.properties?.[COMMIT_UUID_PROPERTY],
    createdAt: now,
    snapshots: Object.fromEntries(removed.map((s) => [String(s.id), uuidOf(s)])),
    tags,
    dataFiles: [],
    changelogFiles: [],
    manifests: [],
    manifestLists: [],
  };
  const cache = new LruManifestCache();
  if (removed.length > 0) await addRemovedFiles(table, journal, removed, await keptFiles(table, snapshot, cache), cache);
  const written = await table.store.putIfAbsent(rollbackJournalKey(table.path), metadataBytes(journal));
  if (written === undefined) {
    throw new RollbackInProgressError(`another rollback of ${table.name} started meanwhile; wait for it, then run this one again`);
  }
  const result = await applyJournal(table, journal, written.etag, now);
  return { ...result, restoredFromTag: restored };
}

/**
 * Carries out a rollback journal; every step is idempotent, so a crashed rollback is finished by
 * calling this again with the journal.
 */
async function applyJournal(table: Table, j: RollbackJournal, etag: string, now = Date.now()): Promise<RollbackResult> {
  const sm = table.snapshots;
  const removedSnapshots: number[] = [];
  // Newest first: the snapshots left are always a contiguous range whose files all exist.
  const ids = Object.keys(j.snapshots).map(Number).sort((a, b) => b - a);
  for (const id of ids) {
    const s = await sm.tryReadFresh(id);
    if (s === undefined || uuidOf(s) !== j.snapshots[String(id)]) continue;
    await table.store.delete(sm.snapshotKey(id));
    removedSnapshots.push(id);
  }
  removedSnapshots.push(...(await sweepLateCommits(table, j, etag)));
  // Long-lived changelogs above the target (a tag's expired snapshot written back) describe
  // removed history; what they kept is unreferenced from here on (orphan cleanup removes it).
  for (const id of await listChangelogIds(table.store, table.path)) if (id > j.target) await table.store.delete(changelogKey(table.path, id));
  sm.forgetFrom(j.target);
  table.commitSnapshots.forgetFrom(j.target);
  const latest = (await sm.latestId()) ?? j.target;
  await sm.writeLatestHint(latest);
  // A tag's snapshot written back lies below the old EARLIEST: the hint must not name an id
  // that a later commit creates again (it would hide the snapshots below it).
  const earliestHint = await table.store.get(earliestHintKey(table.path)).then((o) => Number(fromUtf8(o.body).trim()), () => undefined);
  if (earliestHint !== undefined && earliestHint > j.target) await table.store.put(earliestHintKey(table.path), utf8(String((await sm.listIds())[0] ?? j.target)));

  const removedTags: string[] = [];
  for (const name of j.tags) {
    const key = tagKey(table.path, name);
    if ((await table.store.head(key)) === undefined) continue;
    await table.store.delete(key);
    removedTags.push(name);
  }

  const resetConsumers: RollbackResult['resetConsumers'] = [];
  for (const c of await listConsumers(table.store, table.path)) {
    if (c.nextSnapshot <= j.target + 1 && (c.plannedSnapshot ?? 0) <= j.target) continue;
    const next = Math.min(c.nextSnapshot, j.target + 1);
    const { id: _id, etag: consumerEtag, ...state } = c;
    const { fullSnapshot, ...rest } = state;
    // A new run: readers drop queued splits of removed snapshots and the old per-bucket progress.
    const reset: ConsumerState = { ...rest, nextSnapshot: next, plannedSnapshot: next - 1, buckets: {}, run: randomUUID(), lastUpdated: now };
    if (fullSnapshot !== undefined && fullSnapshot <= j.target) reset.fullSnapshot = fullSnapshot;
    // Moved meanwhile (a reader's progress): the next rollback call resets it from the new state.
    if (await writeConsumer(table.store, table.path, c.id, reset, consumerEtag)) resetConsumers.push({ id: c.id, from: c.nextSnapshot, to: next });
  }

  const del = async (keys: string[]) => {
    await runLimited(keys.map((k) => () => table.store.delete(k)), DELETE_PARALLELISM);
    return keys.length;
  };
  const deleted = {
    dataFiles: await del(j.dataFiles),
    changelogFiles: await del(j.changelogFiles),
    manifests: await del(j.manifests),
    manifestLists: await del(j.manifestLists),
  };
  await table.store.delete(rollbackJournalKey(table.path));
  return { target: j.target, removedSnapshots, removedTags, resetConsumers, deleted, restoredFromTag: false };
}

/**
 * Removes snapshots above the target that are not on its chain: created during the rollback by
 * a writer that planned on a removed snapshot, or above a gap. Their files join the journal
 * (rewritten first, so a crash here still deletes them later).
 */
async function sweepLateCommits(table: Table, j: RollbackJournal, etag: string): Promise<number[]> {
  const sm = table.snapshots;
  const above = (await sm.listIds()).filter((id) => id > j.target);
  if (above.length === 0) return [];
  let parent = j.targetCommit;
  let firstOff: number | undefined;
  for (let id = j.target + 1; id <= above[above.length - 1]; id++) {
    const s = await sm.tryReadFresh(id);
    if (s === undefined || parent === undefined || s.properties?.[PARENT_COMMIT_PROPERTY] !== parent) {
      firstOff = id;
      break;
    }
    parent = s.properties?.[COMMIT_UUID_PROPERTY];
  }
  if (firstOff === undefined) return [];
  const late: Snapshot[] = [];
  for (const id of above.filter((i) => i >= firstOff!).reverse()) {
    const s = await sm.tryReadFresh(id);
    if (s !== undefined) late.push(s);
  }
  if (late.length > 0) {
    const target = await sm.read(j.target);
    const cache = new LruManifestCache();
    const updated: RollbackJournal = { ...j, snapshots: { ...j.snapshots } };
    for (const s of late) updated.snapshots[String(s.id)] = uuidOf(s);
    await addRemovedFiles(table, updated, late, await keptFiles(table, target, cache), cache);
    await table.store.putIfMatch(rollbackJournalKey(table.path), metadataBytes(updated), etag);
    Object.assign(j, updated);
  }
  const removed: number[] = [];
  for (const s of late) {
    await table.store.delete(sm.snapshotKey(s.id));
    removed.push(s.id);
  }
  return removed;
}
