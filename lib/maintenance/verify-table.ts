/**
 * Table verification: every snapshot file present, every tag and every long-lived changelog can be read completely — its
 * manifest lists, manifests, live data files and changelog files all exist — the snapshot ids
 * present are contiguous, and every schema a snapshot or a file was written under reads. Unless
 * `quick`, every live data and changelog file is then read back whole and checked against its
 * checksums (size, file CRC, footer CRC, each column chunk's CRC: data-file-verify.ts); files
 * written before checksums are listed as unchecked. Expiry, compaction and commit tests use it as
 * their invariant.
 */
import { VarveError } from '../errors.js';
import { verifyDataFileBytes } from '../format/data-file-verify.js';
import type { DataFileMeta } from '../manifest/types.js';
import { parallelMap } from '../concurrency.js';
import { LruManifestCache } from '../manifest/manifest-file.js';
import { loadDeletionVector, readDeletionIndex, type DeletionVectorRef } from '../manifest/deletion-index.js';
import { tableKey } from '../manifest/table-paths.js';
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
  /** Data and changelog files read back and checked (0 with `quick`). */
  readBack: number;
  /** Files read back that carry no checksums (written before them): intact as far as size and footer tell. */
  unchecked: string[];
}

/** How verifyTable checks. */
export interface VerifyOptions {
  /** Only that every referenced object exists (no file is read back). */
  quick?: boolean;
}

/** Files read back at a time. */
const READ_BACK_PARALLELISM = 4;

const KINDS: Array<[Exclude<keyof SnapshotReferences, 'files'>, string]> = [
  ['manifestLists', 'manifest list'],
  ['manifests', 'manifest'],
  ['dataFiles', 'data file'],
  ['changelogFiles', 'changelog file'],
  ['deletionVectorFiles', 'deletion-vector file'],
];

/** What verifyTable has found so far, and the listing it checks existence against. */
interface Findings {
  problems: TableProblem[];
  /** Each live file once, with the first snapshot or tag that references it. */
  files: Map<string, { owner: string; meta: DataFileMeta }>;
  /** Each schema id a snapshot or file was written under, with the first that was. */
  schemas: Map<number, string>;
  /** Every key under the table: one listing answers every existence question, far fewer requests than a HEAD per file. */
  existing: Set<string>;
  checked: number;
  /** Deletion-vector indexes seen, and each vector once (by Puffin file and offset) with the first snapshot or tag that references it. */
  indexes: Set<string>;
  vectors: Map<string, { owner: string; ref: DeletionVectorRef }>;
}

/** Checks that every snapshot present and every tag of `table` references only objects that exist and read back intact. */
export async function verifyTable(table: Table, opts: VerifyOptions = {}): Promise<TableVerification> {
  const ids = await table.snapshots.listIds();
  const found: Findings = {
    problems: idGaps(ids),
    files: new Map(),
    schemas: new Map(),
    existing: new Set((await listAll(table.store, `${table.path}/`)).map((o) => o.key)),
    checked: 0,
    indexes: new Set(),
    vectors: new Map(),
  };
  const cache = new LruManifestCache();
  for (const id of ids) {
    const snapshot = await table.snapshots.tryRead(id);
    if (snapshot === undefined) continue; // expired since the listing
    await checkReferences(table, found, `snapshot ${id}`, snapshot, cache);
  }
  const tags = await listTags(table.store, table.path);
  for (const { name, tag } of tags) await checkReferences(table, found, `tag ${name}`, tag, cache);
  await checkChangelogs(table, found);
  await checkSchemas(table, found);
  const unchecked = opts.quick ? [] : await readBackFiles(table, found);
  if (!opts.quick) await readBackVectors(table, found);
  return {
    ok: found.problems.length === 0,
    snapshots: ids,
    tags: tags.map((t) => t.name),
    checkedReferences: found.checked,
    problems: found.problems,
    readBack: opts.quick ? 0 : found.files.size,
    unchecked,
  };
}

function idGaps(ids: number[]): TableProblem[] {
  const problems: TableProblem[] = [];
  for (let i = 1; i < ids.length; i++) {
    if (ids[i] !== ids[i - 1] + 1) {
      problems.push({
        owner: `snapshot ${ids[i - 1] + 1}`,
        problem: `snapshot ids present are not contiguous: ${ids[i - 1]} is followed by ${ids[i]}`,
      });
    }
  }
  return problems;
}

/** Every object `snapshot` (or a tag) references exists; notes its live files and schemas. */
async function checkReferences(
  table: Table,
  found: Findings,
  owner: string,
  snapshot: Snapshot,
  cache: LruManifestCache,
): Promise<void> {
  let refs: SnapshotReferences;
  try {
    refs = await snapshotReferences(table, snapshot, cache);
  } catch (e) {
    const key = (e as { key?: string }).key;
    found.problems.push({ owner, key, problem: `cannot be read: ${e instanceof VarveError ? e.message : String(e)}` });
    return;
  }
  if (!found.schemas.has(snapshot.schemaId)) found.schemas.set(snapshot.schemaId, owner);
  for (const [field, what] of KINDS) {
    for (const key of refs[field]) {
      found.checked++;
      if (!found.existing.has(key)) found.problems.push({ owner, key, problem: `${what} ${key} is missing` });
    }
  }
  if (snapshot.deletionVectors !== undefined && !found.indexes.has(snapshot.deletionVectors)) {
    found.indexes.add(snapshot.deletionVectors);
    for (const ref of await readDeletionIndex(table.store, table.path, snapshot)) {
      const id = `${ref.dvFile}@${ref.offset}`;
      if (!found.vectors.has(id) && found.existing.has(tableKey(table.path, ref.dvFile)))
        found.vectors.set(id, { owner, ref });
    }
  }
  for (const [key, meta] of refs.files) {
    if (!found.files.has(key) && found.existing.has(key)) found.files.set(key, { owner, meta });
    if (!found.schemas.has(meta.schemaId)) found.schemas.set(meta.schemaId, `${owner} (file ${key})`);
  }
}

/** A long-lived changelog must still hold everything a stream reads for it. */
async function checkChangelogs(table: Table, found: Findings): Promise<void> {
  for (const id of await listChangelogIds(table.store, table.path)) {
    const c = await tryReadChangelog(table.store, table.path, id);
    if (c === undefined) continue; // expired since the listing
    for (const key of changelogKeys(table, c)) {
      found.checked++;
      if (!found.existing.has(key))
        found.problems.push({
          owner: `changelog ${id}`,
          key,
          problem: `${key}, kept for the changelog of snapshot ${id}, is missing`,
        });
    }
  }
}

/** Every schema a snapshot or file was written under must read: reads, time travel and compaction evolve through it. */
async function checkSchemas(table: Table, found: Findings): Promise<void> {
  for (const [id, owner] of found.schemas) {
    try {
      await table.schemaById(id);
    } catch (e) {
      found.problems.push({
        owner,
        key: `${table.path}/schema/schema-${id}`,
        problem: `schema ${id}, which it was written under, cannot be read: ${e instanceof VarveError ? e.message : String(e)}`,
      });
    }
  }
}

/** Reads every live file back against its checksums; returns the files that carry none, sorted. */
async function readBackFiles(table: Table, found: Findings): Promise<string[]> {
  const unchecked: string[] = [];
  await parallelMap([...found.files], READ_BACK_PARALLELISM, async ([key, { owner, meta }]) => {
    const verdict = await readBack(table, key, meta);
    if (verdict.status === 'unchecked') unchecked.push(key);
    else if (verdict.status === 'damaged')
      found.problems.push({ owner, key, problem: `file ${key} is damaged: ${verdict.problem}` });
  });
  return unchecked.sort();
}

/** Every deletion vector decodes: length, magic, CRC-32 and bitmap, and its cardinality matches the index. */
async function readBackVectors(table: Table, found: Findings): Promise<void> {
  await parallelMap([...found.vectors.values()], READ_BACK_PARALLELISM, async ({ owner, ref }) => {
    try {
      await loadDeletionVector(table.store, table.path, ref);
    } catch (e) {
      const key = tableKey(table.path, ref.dvFile);
      found.problems.push({
        owner,
        key,
        problem: `the deletion vector of ${ref.fileName} in ${key} is damaged: ${e instanceof VarveError ? e.message : String(e)}`,
      });
    }
  });
}

/** Reads a live file whole and checks it against its manifest entry's checksums. */
async function readBack(
  table: Table,
  key: string,
  meta: DataFileMeta,
): Promise<Awaited<ReturnType<typeof verifyDataFileBytes>>> {
  let bytes: Uint8Array;
  try {
    bytes = (await table.store.get(key)).body;
  } catch (e) {
    // Deleted since the listing (expiry, a rollback): not damage.
    if (e instanceof VarveError && e.kind === 'not-found') return { status: 'ok' };
    throw e;
  }
  return verifyDataFileBytes(key, bytes, {
    fileSize: meta.fileSize,
    footerCrc32: meta.footerCrc32,
    fileCrc32: meta.fileCrc32,
  });
}
