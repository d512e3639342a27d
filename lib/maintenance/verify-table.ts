/**
 * Table verification: every snapshot file present, every tag and every long-lived changelog can be read completely — its
 * manifest lists, manifests, live data files and changelog files all exist — and the snapshot
 * ids present are contiguous. Expiry, compaction and commit tests use it as their invariant.
 */
import { VarveError } from '../errors.js';
import { LruManifestCache } from '../manifest/manifest-file.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import { listTags } from '../snapshot/tags.js';
import { listAll } from '../store/object-store.js';
import type { Table } from '../table/table.js';
import { changelogKeys, snapshotReferences, type SnapshotReferences } from './snapshot-references.js';
import { listChangelogIds, tryReadChangelog } from '../snapshot/changelog.js';

/** One thing wrong with a table. */
export interface TableProblem {
  /** `snapshot 5` or `tag nightly`. */
  owner: string;
  /** The missing or unreadable object, when there is one. */
  key?: string;
  problem: string;
}

/** What verifyTable found. */
export interface TableVerification {
  ok: boolean;
  /** Snapshot ids present, ascending. */
  snapshots: number[];
  tags: string[];
  /** References checked (an object referenced twice counts twice). */
  checkedReferences: number;
  problems: TableProblem[];
}

const KINDS: Array<[keyof SnapshotReferences, string]> = [
  ['manifestLists', 'manifest list'],
  ['manifests', 'manifest'],
  ['dataFiles', 'data file'],
  ['changelogFiles', 'changelog file'],
];

/** Checks that every snapshot present and every tag of `table` references only objects that exist. */
export async function verifyTable(table: Table): Promise<TableVerification> {
  const problems: TableProblem[] = [];
  const ids = await table.snapshots.listIds();
  for (let i = 1; i < ids.length; i++) {
    if (ids[i] !== ids[i - 1] + 1) {
      problems.push({ owner: `snapshot ${ids[i - 1] + 1}`, problem: `snapshot ids present are not contiguous: ${ids[i - 1]} is followed by ${ids[i]}` });
    }
  }
  // One listing answers every existence question: far fewer requests than a HEAD per file.
  const existing = new Set((await listAll(table.store, `${table.path}/`)).map((o) => o.key));
  const cache = new LruManifestCache();
  let checked = 0;
  const check = async (owner: string, snapshot: Snapshot) => {
    let refs: SnapshotReferences;
    try {
      refs = await snapshotReferences(table, snapshot, cache);
    } catch (e) {
      const key = (e as { key?: string }).key;
      problems.push({ owner, key, problem: `cannot be read: ${e instanceof VarveError ? e.message : String(e)}` });
      return;
    }
    for (const [field, what] of KINDS) {
      for (const key of refs[field]) {
        checked++;
        if (!existing.has(key)) problems.push({ owner, key, problem: `${what} ${key} is missing` });
      }
    }
  };
  for (const id of ids) {
    const snapshot = await table.snapshots.tryRead(id);
    if (snapshot === undefined) continue; // expired since the listing
    await check(`snapshot ${id}`, snapshot);
  }
  const tags = await listTags(table.store, table.path);
  for (const { name, tag } of tags) await check(`tag ${name}`, tag);
  // A long-lived changelog must still hold everything a stream reads for it.
  for (const id of await listChangelogIds(table.store, table.path)) {
    const c = await tryReadChangelog(table.store, table.path, id);
    if (c === undefined) continue; // expired since the listing
    for (const key of changelogKeys(table, c)) {
      checked++;
      if (!existing.has(key)) problems.push({ owner: `changelog ${id}`, key, problem: `${key}, kept for the changelog of snapshot ${id}, is missing` });
    }
  }
  return { ok: problems.length === 0, snapshots: ids, tags: tags.map((t) => t.name), checkedReferences: checked, problems };
}
