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
 * Referenced = reachable from any snapshot file present, any tag, the current Iceberg
 * export, the split lists of a live
 * consumer, an expiry journal (expiry deletes those itself, after its grace period), or a batch
 * registered in the pending area (lib/table/pending-commits.ts: handed to the group commit, its
 * message maybe waiting in a dead-letter queue) less than `orphan-files.pending-time-retained`
 * ago; an older registration is itself an orphan. If any of that cannot be read, nothing is deleted.
 */
import { CorruptMetadataError, InvalidArgumentError, ObjectNotFoundError } from '../errors.js';
import { runLimited } from '../concurrency.js';
import { icebergReferencedKeys } from '../iceberg/iceberg-references.js';
import { LruManifestCache } from '../manifest/manifest-file.js';
import type { DataFileMeta } from '../manifest/types.js';
import { listTags } from '../snapshot/tags.js';
import { fromUtf8, listAll, type ObjectInfo } from '../store/object-store.js';
import { listConsumers } from '../snapshot/consumer.js';
import { splitRefPrefix } from '../snapshot/consumer.js';
import { dataFileKey } from '../table/paths.js';
import { listPending, PENDING_DIR } from '../table/pending-commits.js';
import type { Table } from '../table/table.js';
import { journalFiles, listJournals } from './expiry-journal.js';
import { addReferences, snapshotReferences } from './snapshot-references.js';

/** Options of one orphan cleanup. */
export interface RemoveOrphansOptions {
  /** Only files older than this (ms) are deleted. @default the table's `orphan-files.older-than` (1 day) */
  olderThanMs?: number;
  /** List what would be deleted, delete nothing. */
  dryRun?: boolean;
  /** Epoch ms the run takes as now. @default Date.now() */
  now?: number;
}

/** Kinds of files orphan cleanup may delete. */
export type OrphanKind = 'data' | 'changelog' | 'manifest' | 'manifest-list' | 'consumer' | 'pending';

/** An unreferenced file old enough to delete. */
export interface OrphanFile {
  key: string;
  kind: OrphanKind;
  size: number;
  lastModified: number;
}

/** What one orphan cleanup found and did. */
export interface RemoveOrphansResult {
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
    return parts[1].startsWith('manifest-') ? 'manifest' : undefined;
  }
  // Data and changelog files sit directly in a bucket folder (after any partition folders);
  // schema/, snapshot/, tag/, expiry/ never hold a bucket folder at that depth.
  if (parts.length >= 2 && BUCKET_DIR.test(parts[parts.length - 2]) && !['schema', 'snapshot', 'tag', 'expiry'].includes(top)) {
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

/** Every key referenced by the table's snapshots, tags, live consumers' split lists and expiry journals. */
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
        const files = JSON.parse(fromUtf8((await table.store.get(o.key)).body)) as DataFileMeta[];
        for (const f of files) used.add(dataFileKey(table.path, partition, bucket, f.fileName));
      } catch (e) {
        // Delivered and deleted by discovery since the listing: it references nothing any more.
        if (e instanceof ObjectNotFoundError) continue;
        aborted(`split list ${o.key} of consumer ${id}`, e instanceof SyntaxError ? new CorruptMetadataError(e.message) : e);
      }
    }
  }
  // The current Iceberg snapshot's files, which may lag behind varve's (lib/iceberg/iceberg-references.ts).
  for (const k of await icebergReferencedKeys(table)) used.add(k);
  // Read after the snapshots: a snapshot expired meanwhile has its journal written before it went.
  for (const { journal } of await listJournals(table)) for (const k of journalFiles(journal)) used.add(k);
  return used;
}

/** Adds the files of live pending registrations to `used`; returns the keys of the expired registrations. */
async function pendingReferences(table: Table, used: Set<string>, now: number): Promise<Set<string>> {
  const retainedMs = table.options.orphanFilesPendingTimeRetained;
  const expired = new Set<string>();
  for (const p of await listPending(table)) {
    if (p.lastModified < now - retainedMs) expired.add(p.key);
    else for (const f of p.batch?.files ?? []) used.add(f);
  }
  return expired;
}

/** Finds (and unless `dryRun`, deletes) the unreferenced files of `table` older than the window. */
export async function removeOrphanFiles(table: Table, opts: RemoveOrphansOptions = {}): Promise<RemoveOrphansResult> {
  const olderThanMs = opts.olderThanMs ?? table.options.orphanFilesOlderThan;
  if (!Number.isFinite(olderThanMs) || olderThanMs < 0) {
    throw new InvalidArgumentError(`the orphan file age must be a duration of 0 or more, got ${olderThanMs}`);
  }
  const now = opts.now ?? Date.now();
  // Listed first: a file written after this point is never a candidate, whatever its age.
  const objects: ObjectInfo[] = await listAll(table.store, `${table.path}/`);
  const consumers = (await listConsumers(table.store, table.path)).map((c) => c.id);
  const used = await referencedKeys(table, consumers);
  const expiredPending = await pendingReferences(table, used, now);
  const live = new Set(consumers);
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
    if (o.lastModified >= now - olderThanMs) tooRecent++;
    else orphans.push({ key: o.key, kind, size: o.size, lastModified: o.lastModified });
  }
  if (!opts.dryRun) await runLimited(orphans.map((o) => () => table.store.delete(o.key)), 16);
  return {
    dryRun: Boolean(opts.dryRun),
    olderThanMs,
    orphans,
    deleted: opts.dryRun ? 0 : orphans.length,
    bytes: orphans.reduce((n, o) => n + o.size, 0),
    tooRecent,
  };
}
