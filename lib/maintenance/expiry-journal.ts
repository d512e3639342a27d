/**
 * The expiry journal: `expiry/expiry-<end>`, written before an expiry run deletes anything, names
 * the snapshots it expires ([from, end)) and every file it will delete. With it, expiry can delete
 * the snapshot files *first* — so that no snapshot file ever names a file that is gone — and a
 * run that crashes half-way is finished by the next one, which reads the journal.
 */
import { CorruptMetadataError, ObjectNotFoundError } from '../errors.js';
import { runLimited } from '../concurrency.js';
import {
  arrayField,
  intField,
  metadataBytes,
  objectField,
  optionalIntField,
  parseMetadataObject,
} from '../manifest/metadata-json.js';
import { changelogKey, writeChangelog, type ChangelogRetained } from '../snapshot/changelog.js';
import { markIdentifierLanded } from '../snapshot/commit-identifier.js';
import { listTags } from '../snapshot/tags.js';
import { objectLocation } from '../store/json-file.js';
import { listAll } from '../store/object-store.js';
import type { Table } from '../table/table.js';
import { advanceEarliestMarker } from './earliest-marker.js';
import { addReferences, changelogRetained, snapshotReferences } from './snapshot-references.js';

/** The JSON content of an expiry journal. */
export interface ExpiryJournal {
  version: 1;
  /**
   * What `from` … `end − 1` name: snapshots (the default; `end` is the earliest one kept), or
   * long-lived changelogs (`changelog`: changelog expiry, expire-changelogs.ts).
   */
  kind?: 'changelog';
  from: number;
  end: number;
  /** Snapshots `changelogFrom` … `end − 1` leave a long-lived changelog, written before each is deleted. */
  changelogFrom?: number;
  createdAt: number;
  /** Files are deleted from this time on: readers that opened an expired snapshot before get this long to finish. */
  deleteAfter: number;
  /** Tags (name → snapshot id) whose files the lists below already leave out. */
  tags: Record<string, number>;
  dataFiles: string[];
  changelogFiles: string[];
  manifests: string[];
  manifestLists: string[];
  /**
   * [snapshot id, commit identifier]: the indexed identifiers the expired snapshots carry. Each
   * index is marked as landed in its snapshot before any snapshot file is deleted, so a retry
   * still tells a landed identifier from one that never landed (snapshot/commit-identifier.ts).
   */
  marks?: Array<[number, string]>;
}

/** What applying a journal did. */
export interface JournalOutcome {
  /** Snapshot ids whose files were deleted (the journal's range). */
  snapshots: number[];
  /** Snapshot journal: long-lived changelogs written; changelog journal: changelogs deleted. */
  changelogs: number[];
  dataFiles: number;
  changelogFiles: number;
  manifests: number;
  manifestLists: number;
  /** Files left for a later run because the grace period has not passed. */
  pendingFiles: number;
}

const DELETE_PARALLELISM = 16;

/** Folder of the journals of a table. */
export function journalDir(tablePath: string): string {
  return `${tablePath}/expiry/`;
}

/** Key of the journal of a run expiring snapshots (or with `changelog`, long-lived changelogs) up to `end` (exclusive). */
export function journalKey(tablePath: string, end: number, kind?: 'changelog'): string {
  return `${journalDir(tablePath)}${kind === 'changelog' ? 'changelog-expiry' : 'expiry'}-${end}`;
}

function strings(o: Record<string, unknown>, field: string, what: string): string[] {
  return arrayField(o, field, what).map((v) => {
    if (typeof v !== 'string')
      throw new CorruptMetadataError(`${what}: ${field} holds a non-string; the journal is damaged`);
    return v;
  });
}

/** Parses a journal's bytes; CorruptMetadataError when they are not one. */
function parseJournal(bytes: Uint8Array, what: string): ExpiryJournal {
  const o = parseMetadataObject(bytes, what);
  if (intField(o, 'version', what) !== 1)
    throw new CorruptMetadataError(`${what} has an unknown version; upgrade varve`);
  const tags: Record<string, number> = {};
  for (const [name, id] of Object.entries(objectField(o, 'tags', what))) {
    if (!Number.isInteger(id))
      throw new CorruptMetadataError(`${what}: tag ${name} has no snapshot id; the journal is damaged`);
    tags[name] = id as number;
  }
  const kind = o.kind;
  if (kind !== undefined && kind !== 'changelog')
    throw new CorruptMetadataError(`${what} has an unknown kind; upgrade varve`);
  const changelogFrom = optionalIntField(o, 'changelogFrom', what);
  const marks =
    o.marks === undefined
      ? undefined
      : arrayField(o, 'marks', what).map((m) => {
          if (!Array.isArray(m) || m.length !== 2 || !Number.isInteger(m[0]) || typeof m[1] !== 'string') {
            throw new CorruptMetadataError(
              `${what}: marks holds an entry that is not [snapshot id, identifier]; the journal is damaged`,
            );
          }
          return [m[0], m[1]] as [number, string];
        });
  return {
    ...(marks === undefined ? {} : { marks }),
    version: 1,
    ...(kind === 'changelog' ? { kind } : {}),
    ...(changelogFrom === undefined ? {} : { changelogFrom }),
    from: intField(o, 'from', what),
    end: intField(o, 'end', what),
    createdAt: intField(o, 'createdAt', what),
    deleteAfter: intField(o, 'deleteAfter', what),
    tags,
    dataFiles: strings(o, 'dataFiles', what),
    changelogFiles: strings(o, 'changelogFiles', what),
    manifests: strings(o, 'manifests', what),
    manifestLists: strings(o, 'manifestLists', what),
  };
}

/** Writes a new journal with put-if-absent; false when one for the same `end` exists (another run has it). */
export async function writeJournal(table: Table, journal: ExpiryJournal): Promise<boolean> {
  return (
    (await table.store.putIfAbsent(journalKey(table.path, journal.end, journal.kind), metadataBytes(journal))) !==
    undefined
  );
}

/** Every journal of the table, oldest range first. */
export async function listJournals(table: Table): Promise<Array<{ key: string; journal: ExpiryJournal }>> {
  const out: Array<{ key: string; journal: ExpiryJournal }> = [];
  for (const o of await listAll(table.store, journalDir(table.path))) {
    try {
      out.push({
        key: o.key,
        journal: parseJournal(
          (await table.store.get(o.key)).body,
          `expiry journal ${objectLocation(table.store, o.key)}`,
        ),
      });
    } catch (e) {
      // Finished and deleted by a concurrent run between the listing and the read.
      if (!(e instanceof ObjectNotFoundError)) throw e;
    }
  }
  return out.sort((a, b) => a.journal.end - b.journal.end);
}

/** Every file key a journal will delete (what orphan cleanup must leave to expiry). */
export function journalFiles(j: ExpiryJournal): string[] {
  return [...j.dataFiles, ...j.changelogFiles, ...j.manifests, ...j.manifestLists];
}

async function deleteAll(table: Table, keys: readonly string[]): Promise<number> {
  await runLimited(
    keys.map((k) => () => table.store.delete(k)),
    DELETE_PARALLELISM,
  );
  return keys.length;
}

/**
 * Files of tags created after the journal was planned on a snapshot it expires: they must stay.
 * A tag is created from a snapshot file that exists, and the journal's snapshot files are gone
 * before this check, so only a tag whose creation read its snapshot just before the delete and
 * lands just after this check can still lose files (the same narrow race as in Paimon).
 */
async function newlyTaggedFiles(table: Table, j: ExpiryJournal): Promise<Set<string>> {
  const keep = new Set<string>();
  for (const { name, tag } of await listTags(table.store, table.path)) {
    if (tag.id >= j.end || j.tags[name] === tag.id) continue;
    addReferences(keep, await snapshotReferences(table, tag));
  }
  return keep;
}

/**
 * Carries out a journal; every step is idempotent, so a crashed run is finished by running this
 * again: the EARLIEST marker moves to `end` (never back), the snapshot files go oldest first —
 * each from `changelogFrom` on after its long-lived changelog is written — then, once
 * `deleteAfter` has passed, data files, changelog files, manifests and manifest lists, and last
 * the journal itself. A changelog journal deletes changelog files `changelog-<from>` …
 * `changelog-<end − 1>` oldest first instead of snapshots, then the same kinds of files.
 * `retained` may carry the changelogs' contents the planning run already computed.
 */
export async function applyJournal(
  table: Table,
  key: string,
  j: ExpiryJournal,
  now: number,
  retained?: ReadonlyMap<number, ChangelogRetained>,
): Promise<JournalOutcome> {
  const snapshots: number[] = [];
  const changelogs: number[] = [];
  if (j.kind === 'changelog') {
    for (let id = j.from; id < j.end; id++) {
      await table.store.delete(changelogKey(table.path, id));
      changelogs.push(id);
    }
  } else {
    await advanceEarliestMarker(table, j.end);
    // Deleted oldest first, so the newest of the range tells whether any is left (a journal
    // waiting for its grace period is applied again by every run until then).
    if (await table.snapshots.exists(j.end - 1)) {
      // Every mark before the first snapshot goes: a retry that finds an unmarked index whose
      // snapshot is gone concludes that the identifier never landed. Idempotent, so a crashed
      // run marks again.
      await runLimited(
        (j.marks ?? []).map(
          ([id, identifier]) =>
            () =>
              markIdentifierLanded(table.store, table.path, identifier, id),
        ),
        DELETE_PARALLELISM,
      );
      // Oldest first: the snapshot files left at any moment are a contiguous range ending at the
      // latest, so a reader that lists them never sees a hole.
      for (let id = j.from; id < j.end; id++) {
        if (j.changelogFrom !== undefined && id >= j.changelogFrom) {
          // The changelog is written before its snapshot goes: a stream always finds one of them.
          // A snapshot already gone had its changelog written before it was deleted.
          const snapshot = await table.snapshots.tryRead(id);
          if (snapshot !== undefined) {
            const kept = retained?.get(id) ?? (await changelogRetained(table, snapshot));
            await writeChangelog(table.store, table.path, { ...snapshot, retained: kept });
            changelogs.push(id);
          }
        }
        await table.store.delete(table.snapshots.snapshotKey(id));
        snapshots.push(id);
      }
    }
  }
  const outcome: JournalOutcome = {
    snapshots,
    changelogs,
    dataFiles: 0,
    changelogFiles: 0,
    manifests: 0,
    manifestLists: 0,
    pendingFiles: 0,
  };
  if (now < j.deleteAfter) {
    outcome.pendingFiles = journalFiles(j).length;
    return outcome;
  }
  const keep = await newlyTaggedFiles(table, j);
  const kept = (keys: string[]) => (keep.size === 0 ? keys : keys.filter((k) => !keep.has(k)));
  outcome.dataFiles = await deleteAll(table, kept(j.dataFiles));
  outcome.changelogFiles = await deleteAll(table, kept(j.changelogFiles));
  outcome.manifests = await deleteAll(table, kept(j.manifests));
  outcome.manifestLists = await deleteAll(table, kept(j.manifestLists));
  await table.store.delete(key);
  return outcome;
}
