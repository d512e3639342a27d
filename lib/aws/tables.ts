/**
 * Opening tables in a function: through the catalog the environment names (the DynamoDB catalog
 * on AWS), kept for a minute in a warm container so that consecutive invocations skip the catalog
 * and schema reads, and with one manifest cache and one snapshot cache per table for the
 * container's lifetime (manifests and snapshots are immutable, so each invocation reads only
 * those written since the last one).
 */
import { openCatalog } from '../catalog/open-catalog.js';
import { LruManifestCache } from '../manifest/manifest-file.js';
import type { CommitOptions } from '../snapshot/commit.js';
import { SnapshotManager } from '../snapshot/snapshot-manager.js';
import { beforeAppendCommit } from '../maintenance/compact-trigger.js';
import { compactionSettingsOf } from '../maintenance/compaction-settings.js';
import type { CommitHooks } from '../table/commit-hooks.js';
import { Table } from '../table/table.js';
import { requireEnv, type Env } from './env.js';

/** How long a warm container keeps an opened table; a schema change is picked up after this. */
const TABLE_CACHE_MS = 60_000;

const opened = new Map<string, { table: Promise<Table>; at: number }>();
const manifestCaches = new Map<string, LruManifestCache>();
const snapshotManagers = new Map<string, SnapshotManager>();

function cacheKey(env: Env, name: string): string {
  return JSON.stringify([env.VARVE_WAREHOUSE, env.VARVE_CATALOG_TABLE ?? '', name]);
}

/** Opens `name` (default VARVE_TABLE) in the warehouse VARVE_WAREHOUSE, through openCatalog. */
export async function openTable(env: Env, who: string, name?: string): Promise<Table> {
  const { VARVE_WAREHOUSE: warehouse } = requireEnv(env, ['VARVE_WAREHOUSE'], who);
  const tableName = name ?? requireEnv(env, ['VARVE_TABLE'], who).VARVE_TABLE;
  const key = cacheKey(env, tableName);
  const hit = opened.get(key);
  if (hit && Date.now() - hit.at < TABLE_CACHE_MS) return hit.table;
  const table = openCatalog(warehouse, env)
    .getTable(tableName)
    .then((t) => new Table(t.store, t.name, t.path, t.schema, FUNCTION_COMMIT_HOOKS));
  opened.set(key, { table, at: Date.now() });
  // A failed open is not cached: the next invocation tries again.
  table.catch(() => {
    if (opened.get(key)?.table === table) opened.delete(key);
  });
  return table;
}

/**
 * The commit hooks of a function's tables (the lib commit paths run a table's hooks as a local
 * writer does). On a deployment the work after a commit is the deployment's: compaction jobs for
 * the compaction function (after-commit.ts), the Iceberg export after the invocation (glue.ts).
 * What stays is a writer's back-pressure before a commit: a bucket over
 * `num-sorted-run.stop-trigger` is compacted first (compact-trigger.ts). A write-only table is
 * left to the compaction function: refusing its commits would also stop the jobs they queue.
 */
const FUNCTION_COMMIT_HOOKS: CommitHooks = {
  beforeCommit: async (table, commit) => {
    if (commit.action === 'append' && !compactionSettingsOf(table).writeOnly)
      await beforeAppendCommit(table, commit.touched);
  },
  afterCommit: async () => {},
};

/** `cache`'s value for `table`, made on first use and kept for the container's lifetime. */
function perTableOf<T>(cache: Map<string, T>, table: Table, make: () => T): T {
  const key = `${table.store.uri}\u0000${table.path}`;
  let value = cache.get(key);
  if (value === undefined) cache.set(key, (value = make()));
  return value;
}

/** The container-lifetime manifest cache of a table. */
export function manifestCacheOf(table: Table): LruManifestCache {
  return perTableOf(manifestCaches, table, () => new LruManifestCache(500_000));
}

/**
 * The container-lifetime snapshot manager of a table, keeping the snapshots it read: a commit's
 * search for its own identifier in the recent snapshots then reads only those it has not seen.
 */
function cachingSnapshotManagerOf(table: Table): SnapshotManager {
  const make = () => new SnapshotManager(table.store, table.path, { cacheSnapshots: true });
  const sm = perTableOf(snapshotManagers, table, make);
  if (sm.store === table.store) return sm;
  // The table cache re-opened the table (a new store object): commit() refuses a snapshot
  // manager of another store, so the manager follows the table.
  const fresh = make();
  snapshotManagers.set(`${table.store.uri}\u0000${table.path}`, fresh);
  return fresh;
}

/** The commit settings that keep a table's caches across invocations. */
export function commitCachesOf(table: Table): Partial<CommitOptions> {
  return { manifestCache: manifestCacheOf(table), snapshotManager: cachingSnapshotManagerOf(table) };
}
