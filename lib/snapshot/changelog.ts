/**
 * Long-lived changelogs (Paimon's ChangelogManager, `changelog/changelog-<id>`): when
 * `changelog.*` retention outlives `snapshot.*` retention, expiring snapshot N writes
 * `changelog/changelog-N` first — the snapshot's JSON (what a stream needs to plan N's changes:
 * its commit kind, schema id, delta and changelog manifest lists) plus `retained`, the keys
 * (relative to the table) of every manifest list, manifest and file a stream reads for N. Those
 * objects outlive the snapshot; changelog expiry (lib/maintenance/expire-changelogs.ts) removes
 * them with the changelog file. The base manifest list it names is gone: never read it.
 */
import { CorruptMetadataError, ObjectNotFoundError } from '../errors.js';
import { arrayField, metadataBytes, objectField, parseMetadataObject } from '../manifest/metadata-json.js';
import { tableKey } from '../manifest/table-paths.js';
import { objectLocation } from '../store/json-file.js';
import type { ObjectStore } from '../store/object-store.js';
import { snapshotFromJson } from './snapshot-file.js';
import type { Snapshot } from './snapshot.js';

/** What a long-lived changelog keeps alive, as keys relative to the table folder. */
export interface ChangelogRetained {
  manifestLists: string[];
  manifests: string[];
  /** Data files (changelog-producer none: the level-0 files an APPEND added) and changelog files. */
  files: string[];
}

/** The JSON content of `changelog/changelog-<id>`: the expired snapshot and what it keeps. */
export interface LongLivedChangelog extends Snapshot {
  retained: ChangelogRetained;
}

const CHANGELOG_NAME = /(?:^|\/)changelog\/changelog-(\d+)$/;

/** Folder of a table's long-lived changelogs. */
function changelogDir(tablePath: string): string {
  return tableKey(tablePath, 'changelog/');
}

/** `changelog/changelog-<id>`. */
export function changelogKey(tablePath: string, id: number): string {
  return tableKey(tablePath, `changelog/changelog-${id}`);
}

function strings(o: Record<string, unknown>, field: string, what: string): string[] {
  return arrayField(o, field, what).map((v) => {
    if (typeof v !== 'string')
      throw new CorruptMetadataError(`${what}: retained.${field} holds a non-string; the file is damaged`);
    return v;
  });
}

/** Parses a changelog file's bytes; CorruptMetadataError when they are not one with id `expectedId`. */
function parseChangelog(bytes: Uint8Array, what: string, expectedId?: number): LongLivedChangelog {
  const o = parseMetadataObject(bytes, what);
  const s = snapshotFromJson(o, what);
  if (expectedId !== undefined && s.id !== expectedId) {
    throw new CorruptMetadataError(
      `${what} holds changelog id ${s.id}, expected ${expectedId}; the file was misplaced`,
    );
  }
  const r = objectField(o, 'retained', what);
  return {
    ...s,
    retained: {
      manifestLists: strings(r, 'manifestLists', what),
      manifests: strings(r, 'manifests', what),
      files: strings(r, 'files', what),
    },
  };
}

/** Writes (or rewrites with the same content) changelog `c.id`; written before snapshot `c.id` is deleted. */
export async function writeChangelog(store: ObjectStore, tablePath: string, c: LongLivedChangelog): Promise<void> {
  await store.put(changelogKey(tablePath, c.id), metadataBytes(c));
}

/** Changelog `id`, or undefined when there is none. */
export async function tryReadChangelog(
  store: ObjectStore,
  tablePath: string,
  id: number,
): Promise<LongLivedChangelog | undefined> {
  const key = changelogKey(tablePath, id);
  try {
    return parseChangelog((await store.get(key)).body, `changelog ${objectLocation(store, key)}`, id);
  } catch (e) {
    if (e instanceof ObjectNotFoundError) return undefined;
    throw e;
  }
}

/** Ids of every long-lived changelog present, ascending (by listing). */
export async function listChangelogIds(store: ObjectStore, tablePath: string): Promise<number[]> {
  const ids: number[] = [];
  for await (const o of store.list(changelogDir(tablePath))) {
    const m = CHANGELOG_NAME.exec(o.key);
    if (m) ids.push(Number(m[1]));
  }
  return ids.sort((a, b) => a - b);
}

/** The snapshot `id` if present, else its long-lived changelog (streams plan changes from either), else undefined. */
export async function snapshotOrChangelog(
  snapshots: { tryRead(id: number): Promise<Snapshot | undefined> },
  store: ObjectStore,
  tablePath: string,
  id: number,
): Promise<Snapshot | undefined> {
  return (await snapshots.tryRead(id)) ?? (await tryReadChangelog(store, tablePath, id));
}
