/**
 * Orphan cleanup (Paimon's OrphanFilesClean): deletes files under a table that nothing
 * references — left by a commit that crashed before its snapshot, by a writer that gave up, by
 * an expiry that lost its journal — once they are older than a safety window (commits in flight
 * write their files before the snapshot that references them).
 *
 * Candidates are only the kinds varve writes and knows to be garbage when unreferenced: data and
 * changelog files in `[partition/]bucket-<n>/`, manifests and manifest lists, and the progress
 * and split objects of consumers that no longer exist. Schema, snapshot, hint, tag and journal
 * files, consumer files and everything of a live consumer, and unknown files are never touched.
 * Referenced = reachable from any snapshot file present, any tag, any long-lived changelog, the current Iceberg
 * export, the split lists of a live
 * consumer, an expiry journal (expiry deletes those itself, after its grace period), or a batch
 * registered in the pending area (lib/table/pending-commits.ts: handed to the group commit, its
 * message maybe waiting in a dead-letter queue) less than `orphan-files.pending-time-retained`
 * ago; an older registration is itself an orphan. If any of that cannot be read, nothing is deleted.
 *
 * Three ways to find the candidates, so that what runs often costs nothing that grows with the table:
 * - `journal` (every scheduled expiry run on AWS): only the pending area is listed — the journal of
 *   written-but-uncommitted files. Committed batches release their registrations, so in steady
 *   state this is one LIST of an empty prefix; the references are read only when a registration
 *   has expired (its commit was refused, or its release was lost).
 * - `scan` (the daily safety net on AWS): one slice of at most `orphan-files.scan.max-keys` keys of
 *   a full listing, resumed by the next run from a marker object (`orphan/scan-marker.json`):
 *   it finds what no journal names (a compaction or a direct-mode commit that crashed after
 *   writing, a writer that died before registering, a lost expiry journal).
 * - `full` (the default, and `varve remove-orphans`): the whole table in one run.
 */
import { CorruptMetadataError, InvalidArgumentError, ObjectNotFoundError } from '../errors.js';
import { runLimited } from '../concurrency.js';
import { icebergMetadataOrphans } from '../iceberg/iceberg-orphans.js';
import { icebergReferencedKeys } from '../iceberg/iceberg-references.js';
import { DELETION_INDEX_PREFIX } from '../manifest/deletion-index.js';
import { LruManifestCache } from '../manifest/manifest-file.js';
import { listTags } from '../snapshot/tags.js';
import { compareObjectKeys } from '../store/object-key.js';
import * as v from 'valibot';
import { jsonInt, jsonTime, type JsonSchema } from '../json.js';
import { objectLocation, parseJsonObject } from '../store/json-file.js';
import { listAll, utf8, type ObjectInfo } from '../store/object-store.js';
import { listConsumers, splitFileListSchema } from '../snapshot/consumer.js';
import { splitRefPrefix } from '../snapshot/consumer.js';
import { TableOptions } from '../schema/options.js';
import { latestSchema, readSchema } from '../schema/schema-manager.js';
import type { TableSchema } from '../schema/types.js';
import { dataFileKey } from '../table/paths.js';
import { listPending, PENDING_DIR } from '../table/pending-commits.js';
import type { Table } from '../table/table.js';
import { journalFiles, listJournals } from './expiry-journal.js';
import { addReferences, changelogKeys, snapshotReferences } from './snapshot-references.js';
import { listChangelogIds, tryReadChangelog } from '../snapshot/changelog.js';

/** Options of one orphan cleanup. */
export interface RemoveOrphansOptions {
  /** Only files older than this (ms) are deleted. @default the table's `orphan-files.older-than` (1 day) */
  olderThanMs?: number;
  /** List what would be deleted, delete nothing. */
  dryRun?: boolean;
  /** Epoch ms the run takes as now. @default Date.now() */
  now?: number;
  /** How candidates are found (see the file comment). @default 'full' */
  mode?: OrphanCleanupMode;
  /** `scan`: most keys this run lists. @default the table's `orphan-files.scan.max-keys` */
  maxKeys?: number;
}

/**
 * `full`: list the whole table; `journal`: only the files of expired pending registrations;
 * `scan`: one bounded slice of a full scan that resumes where the previous run stopped.
 */
export type OrphanCleanupMode = 'full' | 'journal' | 'scan';

/** Kinds of files orphan cleanup may delete. */
export type OrphanKind =
  | 'data'
  | 'changelog'
  | 'manifest'
  | 'manifest-list'
  | 'consumer'
  | 'pending'
  | 'iceberg-manifest';

/** An unreferenced file old enough to delete. */
export interface OrphanFile {
  key: string;
  kind: OrphanKind;
  size: number;
  lastModified: number;
}

/** What one orphan cleanup found and did. */
export interface RemoveOrphansResult {
  mode: OrphanCleanupMode;
  dryRun: boolean;
  olderThanMs: number;
  /** Unreferenced files older than the window: deleted, or with `dryRun` the ones that would be. */
  orphans: OrphanFile[];
  /** Files deleted (0 with `dryRun`). */
  deleted: number;
  /** Bytes of the orphans. */
  bytes: number;
  /** Unreferenced files younger than the window, left alone (a commit may be about to reference them). */
  tooRecent: number;
  /** Keys this run looked at (listed, or for `journal` the files of expired registrations). */
  listed: number;
  /** `scan`: the last key listed when the run stopped at its key budget (the next run resumes after it). */
  resumeAfter?: string;
  /** `scan`: the listing reached the end of the table (the next run starts a new cycle). */
  cycleComplete?: boolean;
  /** `scan`: keys listed in this cycle so far, this run included. */
  cycleListed?: number;
  /** `scan`: when this cycle's first run started. */
  cycleStartedAt?: number;
}

// A tombstone (`@expired`) outlives its consumer on purpose: it is what makes resuming it fail
// loudly; so does a lease (`@lease`), whose fencing token must never start again at 1.
const CONSUMER_OBJECT = /^consumer\/consumer-([^/@]+)@(?!expired$|lease$)/;
const BUCKET_DIR = /^bucket-\d+$/;

/** The kind of a candidate file (`rel` is its key relative to the table), or undefined when it is never a candidate. */
function candidateKind(rel: string, liveConsumers: ReadonlySet<string>): OrphanKind | undefined {
  const parts = rel.split('/');
  const top = parts[0];
  if (top === PENDING_DIR) return undefined; // registrations age out by their own lifetime (pendingReferences)
  if (top === 'consumer') {
    const m = CONSUMER_OBJECT.exec(rel);
    return m && !liveConsumers.has(m[1]) ? 'consumer' : undefined;
  }
  if (top === 'manifest' && parts.length === 2) {
    if (parts[1].startsWith('manifest-list-')) return 'manifest-list';
    // A deletion-vector index (lib/manifest/deletion-index.ts) is snapshot metadata like a manifest.
    return parts[1].startsWith('manifest-') || parts[1].startsWith(DELETION_INDEX_PREFIX) ? 'manifest' : undefined;
  }
  // Data and changelog files sit directly in a bucket folder (after any partition folders);
  // schema/, snapshot/, tag/, expiry/ never hold a bucket folder at that depth.
  if (
    parts.length >= 2 &&
    BUCKET_DIR.test(parts[parts.length - 2]) &&
    !['schema', 'snapshot', 'tag', 'expiry'].includes(top)
  ) {
    return parts[parts.length - 1].startsWith('changelog-') ? 'changelog' : 'data';
  }
  return undefined;
}

function aborted(what: string, e: unknown): never {
  if (e instanceof ObjectNotFoundError || e instanceof CorruptMetadataError) {
    throw new CorruptMetadataError(
      `orphan cleanup deleted nothing: ${what} cannot be read (${e.message}); restore it or remove what references it, then run again`,
      { cause: e },
    );
  }
  throw e;
}

/** Every key referenced by the table's snapshots, tags, long-lived changelogs, live consumers' split lists and expiry journals. */
async function referencedKeys(table: Table, liveConsumers: readonly string[]): Promise<Set<string>> {
  const used = new Set<string>();
  // Consecutive snapshots share most manifests: read each once per run.
  const cache = new LruManifestCache();
  for (const id of await table.snapshots.listIds()) {
    const snapshot = await table.snapshots.tryRead(id);
    if (snapshot === undefined) continue; // expired since the listing: its journal (read below) has its files
    try {
      addReferences(used, await snapshotReferences(table, snapshot, cache));
    } catch (e) {
      // Expiry deletes a snapshot file before its files, so a gap under a snapshot that is gone is expected.
      if (e instanceof ObjectNotFoundError && !(await table.snapshots.exists(id))) continue;
      aborted(`snapshot ${id}`, e);
    }
  }
  for (const { name, tag } of await listTags(table.store, table.path)) {
    try {
      addReferences(used, await snapshotReferences(table, tag, cache));
    } catch (e) {
      aborted(`tag ${name}`, e);
    }
  }
  for (const id of liveConsumers) {
    const prefix = splitRefPrefix(table.path, id);
    for (const o of await listAll(table.store, prefix)) {
      // `<snapshot>/[<partition>/]bucket-<n>.json` holding the split's DataFileMeta[].
      const rel = o.key.slice(prefix.length).split('/').slice(1);
      const bucket = Number(/^bucket-(\d+)\.json$/.exec(rel[rel.length - 1] ?? '')?.[1]);
      if (!Number.isInteger(bucket)) continue;
      const partition = rel.slice(0, -1).join('/');
      try {
        const listed = parseJsonObject(table.store, o.key, (await table.store.get(o.key)).body, SPLIT_FILE_NAMES, {
          what: 'split file list',
        });
        // An overwrite split's list also names the files it replaced (its before-image): both are still to be read.
        const files = Array.isArray(listed) ? listed : [...listed.files, ...(listed.beforeFiles ?? [])];
        for (const f of files) used.add(dataFileKey(table.path, partition, bucket, f.fileName));
      } catch (e) {
        // Delivered and deleted by discovery since the listing: it references nothing any more.
        if (e instanceof ObjectNotFoundError) continue;
        aborted(`split list ${o.key} of consumer ${id}`, e);
      }
    }
  }
  // What long-lived changelogs keep after their snapshots expired (lib/snapshot/changelog.ts).
  for (const id of await listChangelogIds(table.store, table.path)) {
    try {
      const c = await tryReadChangelog(table.store, table.path, id);
      if (c !== undefined) for (const k of changelogKeys(table, c)) used.add(k);
    } catch (e) {
      aborted(`changelog ${id}`, e);
    }
  }
  // The current Iceberg snapshot's files, which may lag behind varve's (lib/iceberg/iceberg-references.ts).
  for (const k of await icebergReferencedKeys(table)) used.add(k);
  // Read after the snapshots: a snapshot expired meanwhile has its journal written before it went.
  for (const { journal } of await listJournals(table)) for (const k of journalFiles(journal)) used.add(k);
  return used;
}

/** Adds the files of live pending registrations to `used`; returns the expired registrations (their keys and files). */
async function pendingReferences(table: Table, used: Set<string>, now: number): Promise<Map<string, string[]>> {
  const pending = await listPending(table);
  let retainedMs = table.options.orphanFilesPendingTimeRetained;
  // Read from the table only when this view would expire one: a quiet table still costs one LIST.
  if (pending.some((p) => p.lastModified < now - retainedMs)) retainedMs = await pendingTimeRetained(table);
  const expired = new Map<string, string[]>();
  for (const p of pending) {
    if (p.lastModified < now - retainedMs) expired.set(p.key, p.batch?.files ?? []);
    else for (const f of p.batch?.files ?? []) used.add(f);
  }
  return expired;
}

/**
 * `orphan-files.pending-time-retained` at its longest among this table object's schema, the
 * newest schema and the schema the latest snapshot names. An ALTER creates its schema file, then
 * its snapshot, and a batch in flight may have been registered under either value: a cleanup
 * running between the two, or with a view opened before the ALTER, keeps registrations as long as
 * any of them asks (a shorter value takes effect once every view has it).
 */
async function pendingTimeRetained(table: Table): Promise<number> {
  const [newest, latest] = await Promise.all([latestSchema(table.store, table.path), table.snapshots.latest()]);
  const schemas: TableSchema[] = [table.schema];
  if (newest !== undefined) schemas.push(newest);
  const named = latest?.schemaId;
  if (named !== undefined && !schemas.some((s) => s.id === named))
    schemas.push(await readSchema(table.store, table.path, named));
  return Math.max(...schemas.map((s) => new TableOptions(s.options, s.fields).orphanFilesPendingTimeRetained));
}

/** The marker of a bounded scan that stopped at its key budget: the next run lists the keys after `startAfter`. */
export interface OrphanScanMarker {
  v: 1;
  /** The last key the previous run listed. */
  startAfter: string;
  /** When the scan cycle this run continues started (epoch ms). */
  cycleStartedAt: number;
  /** Keys listed in this cycle so far. */
  listed: number;
}

/** What orphan cleanup reads of a by-reference split file list: the names of its files. */
const SPLIT_FILE_NAMES = splitFileListSchema(v.looseObject({ fileName: v.string() }));

/** A marker as saved; `cycleStartedAt` and `listed` were read as 0 when absent. */
const OrphanScanMarkerSchema: JsonSchema<Pick<OrphanScanMarker, 'v' | 'startAfter'> & Partial<OrphanScanMarker>> =
  v.looseObject({
    v: v.literal(1),
    startAfter: v.string(),
    cycleStartedAt: v.optional(jsonTime),
    listed: v.optional(jsonInt),
  });

/** The folder of the marker under a table; never an orphan candidate. */
const ORPHAN_SCAN_DIR = 'orphan';

/** The key of `table`'s scan marker. */
export function orphanScanMarkerKey(table: Table): string {
  return `${table.path}/${ORPHAN_SCAN_DIR}/scan-marker.json`;
}

/** The marker of an unfinished scan cycle, or undefined when the next scan starts at the beginning. */
export async function readOrphanScanMarker(table: Table): Promise<OrphanScanMarker | undefined> {
  const key = orphanScanMarkerKey(table);
  const fix = 'delete it and the next scan starts from the beginning';
  let m: v.InferOutput<typeof OrphanScanMarkerSchema>;
  try {
    m = parseJsonObject(table.store, key, (await table.store.get(key)).body, OrphanScanMarkerSchema, {
      what: 'the orphan scan marker',
      fix,
    });
  } catch (e) {
    if (e instanceof ObjectNotFoundError) return undefined;
    throw e;
  }
  if (!m.startAfter.startsWith(`${table.path}/`)) {
    throw new CorruptMetadataError(
      `the orphan scan marker ${objectLocation(table.store, key)} names a key outside the table; ${fix}`,
    );
  }
  return {
    v: 1,
    startAfter: m.startAfter,
    cycleStartedAt: Number(m.cycleStartedAt ?? 0),
    listed: Number(m.listed ?? 0),
  };
}

/** Classifies `objects` (listed before `used` was read) into orphans and too-recent files. */
function classify(
  table: Table,
  objects: readonly ObjectInfo[],
  used: ReadonlySet<string>,
  expiredPending: ReadonlyMap<string, string[]>,
  live: ReadonlySet<string>,
  cutoff: number,
): { orphans: OrphanFile[]; tooRecent: number } {
  const orphans: OrphanFile[] = [];
  let tooRecent = 0;
  for (const o of objects) {
    if (used.has(o.key)) continue;
    if (expiredPending.has(o.key)) {
      orphans.push({ key: o.key, kind: 'pending', size: o.size, lastModified: o.lastModified });
      continue;
    }
    const kind = candidateKind(o.key.slice(table.path.length + 1), live);
    if (kind === undefined) continue;
    if (o.lastModified >= cutoff) tooRecent++;
    else orphans.push({ key: o.key, kind, size: o.size, lastModified: o.lastModified });
  }
  return { orphans, tooRecent };
}

/** Checks the age window of a run. */
function windowOf(table: Table, opts: RemoveOrphansOptions): number {
  const olderThanMs = opts.olderThanMs ?? table.options.orphanFilesOlderThan;
  if (!Number.isFinite(olderThanMs) || olderThanMs < 0) {
    throw new InvalidArgumentError(`the orphan file age must be a duration of 0 or more, got ${olderThanMs}`);
  }
  return olderThanMs;
}

/** Deletes `orphans` (files first, registrations last: a registration gone means its files are handled). */
async function deleteOrphans(table: Table, orphans: readonly OrphanFile[], dryRun: boolean | undefined): Promise<void> {
  if (dryRun) return;
  await runLimited(
    orphans.filter((o) => o.kind !== 'pending').map((o) => () => table.store.delete(o.key)),
    16,
  );
  await runLimited(
    orphans.filter((o) => o.kind === 'pending').map((o) => () => table.store.delete(o.key)),
    16,
  );
}

function resultOf(
  opts: RemoveOrphansOptions,
  mode: OrphanCleanupMode,
  olderThanMs: number,
  orphans: OrphanFile[],
  tooRecent: number,
  listed: number,
  extra: Partial<RemoveOrphansResult> = {},
): RemoveOrphansResult {
  return {
    mode,
    dryRun: Boolean(opts.dryRun),
    olderThanMs,
    orphans,
    deleted: opts.dryRun ? 0 : orphans.length,
    bytes: orphans.reduce((n, o) => n + o.size, 0),
    tooRecent,
    listed,
    ...extra,
  };
}

/**
 * Finds (and unless `dryRun`, deletes) the unreferenced files of `table` older than the window:
 * by listing the whole table (`mode: 'full'`, the default), from the pending journal only
 * (`'journal'`), or in one bounded slice of a resumable scan (`'scan'`); see the file comment.
 */
export async function removeOrphanFiles(table: Table, opts: RemoveOrphansOptions = {}): Promise<RemoveOrphansResult> {
  const mode = opts.mode ?? 'full';
  if (mode === 'journal') return removeJournalOrphans(table, opts);
  if (mode === 'scan') return removeScannedOrphans(table, opts);
  const olderThanMs = windowOf(table, opts);
  const now = opts.now ?? Date.now();
  // Listed first: a file written after this point is never a candidate, whatever its age.
  const objects: ObjectInfo[] = await listAll(table.store, `${table.path}/`);
  const consumers = (await listConsumers(table.store, table.path)).map((c) => c.id);
  const used = await referencedKeys(table, consumers);
  const expiredPending = await pendingReferences(table, used, now);
  const { orphans, tooRecent } = classify(table, objects, used, expiredPending, new Set(consumers), now - olderThanMs);
  // The Iceberg export's manifests that no exported snapshot lists (lib/iceberg/iceberg-orphans.ts).
  const iceberg = await icebergMetadataOrphans(table, now - olderThanMs);
  for (const o of iceberg.orphans)
    orphans.push({ key: o.key, kind: 'iceberg-manifest', size: o.size, lastModified: o.lastModified });
  await deleteOrphans(table, orphans, opts.dryRun);
  return resultOf(opts, mode, olderThanMs, orphans, tooRecent + iceberg.tooRecent, objects.length);
}

/**
 * The journal-driven cleanup: lists only the pending area. A registration younger than
 * `orphan-files.pending-time-retained` protects its files (its commit may still be queued or in a
 * dead-letter queue); the files of an older one that no snapshot, tag, consumer, Iceberg export,
 * expiry journal or live registration references, and that are older than the window, are
 * deleted, then the registration. The references are read only when some registration expired,
 * so a table whose commits all landed costs one LIST of `pending/` per run.
 */
async function removeJournalOrphans(table: Table, opts: RemoveOrphansOptions): Promise<RemoveOrphansResult> {
  const olderThanMs = windowOf(table, opts);
  const now = opts.now ?? Date.now();
  const used = new Set<string>();
  const expiredPending = await pendingReferences(table, used, now);
  if (expiredPending.size === 0) return resultOf(opts, 'journal', olderThanMs, [], 0, 0);
  const consumers = (await listConsumers(table.store, table.path)).map((c) => c.id);
  for (const k of await referencedKeys(table, consumers)) used.add(k);
  const cutoff = now - olderThanMs;
  const live = new Set(consumers);
  const orphans: OrphanFile[] = [];
  let tooRecent = 0;
  let listed = 0;
  for (const [registration, files] of expiredPending) {
    const heads = await runLimited(
      files.map((k) => async () => ({ key: k, head: used.has(k) ? undefined : await table.store.head(k) })),
      16,
    );
    listed += files.length;
    let keep = false;
    for (const { key, head } of heads) {
      if (head === undefined) continue; // referenced, or gone already
      const kind = key.startsWith(`${table.path}/`) ? candidateKind(key.slice(table.path.length + 1), live) : undefined;
      if (kind === undefined) continue; // not a file of this table orphan cleanup may delete
      if (head.lastModified >= cutoff) {
        tooRecent++;
        keep = true; // the registration stays until its files are old enough
      } else orphans.push({ key, kind, size: head.size, lastModified: head.lastModified });
    }
    if (!keep) orphans.push({ key: registration, kind: 'pending', size: 0, lastModified: 0 });
  }
  await deleteOrphans(table, orphans, opts.dryRun);
  return resultOf(opts, 'journal', olderThanMs, orphans, tooRecent, listed);
}

/**
 * One bounded slice of the resumable full scan: lists at most `maxKeys` keys after the marker's
 * `startAfter`, reads the references after the listing (as the full scan does), deletes the
 * orphans among them, then moves the marker past the slice (or deletes it when the listing
 * reached the end: the next run starts a new cycle). A run that dies before moving the marker is
 * repeated by the next one, which finds what it deleted gone.
 */
async function removeScannedOrphans(table: Table, opts: RemoveOrphansOptions): Promise<RemoveOrphansResult> {
  const olderThanMs = windowOf(table, opts);
  const now = opts.now ?? Date.now();
  const maxKeys = opts.maxKeys ?? table.options.orphanFilesScanMaxKeys;
  if (!Number.isInteger(maxKeys) || maxKeys < 1)
    throw new InvalidArgumentError(`the orphan scan key budget must be an integer of 1 or more, got ${maxKeys}`);
  const marker = await readOrphanScanMarker(table);
  const objects: ObjectInfo[] = [];
  let complete = true;
  const markerKey = orphanScanMarkerKey(table);
  for await (const o of table.store.list(`${table.path}/`, { startAfter: marker?.startAfter })) {
    if (marker && compareObjectKeys(o.key, marker.startAfter) <= 0) continue; // a store that ignores startAfter
    if (o.key === markerKey) continue;
    if (objects.length === maxKeys) {
      complete = false;
      break;
    }
    objects.push(o);
  }
  const consumers = (await listConsumers(table.store, table.path)).map((c) => c.id);
  const used = await referencedKeys(table, consumers);
  const expiredPending = await pendingReferences(table, used, now);
  const { orphans, tooRecent } = classify(table, objects, used, expiredPending, new Set(consumers), now - olderThanMs);
  await deleteOrphans(table, orphans, opts.dryRun);
  const listed = (marker?.listed ?? 0) + objects.length;
  const cycleStartedAt = marker?.cycleStartedAt ?? now;
  let next: OrphanScanMarker | undefined;
  if (!opts.dryRun) {
    if (complete) await table.store.delete(markerKey);
    else {
      next = { v: 1, startAfter: objects[objects.length - 1].key, cycleStartedAt, listed };
      await table.store.put(markerKey, utf8(JSON.stringify(next)));
    }
  }
  return resultOf(opts, 'scan', olderThanMs, orphans, tooRecent, objects.length, {
    resumeAfter: complete ? undefined : objects[objects.length - 1].key,
    cycleComplete: complete,
    cycleListed: listed,
    cycleStartedAt,
  });
}
