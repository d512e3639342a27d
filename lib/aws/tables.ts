/**
 * Opening tables in a function: through the catalog the environment names (the DynamoDB catalog
 * on AWS), kept for a minute in a warm container so that consecutive invocations skip the catalog
 * and schema reads. Each table keeps one snapshot manager and one manifest cache for the
 * container's lifetime (Table's caches, handed to every object the container opens for it):
 * snapshots and manifests are immutable, so the group commit's deduplication window, the write's
 * routing, the back-pressure check, the commit and the after-commit work of every invocation share
 * them, and each invocation reads only what was written since the last one.
 */
import type { Catalog } from '../catalog/catalog.js';
import { openCatalog } from '../catalog/open-catalog.js';
import { LruManifestCache } from '../manifest/manifest-file.js';
import type { CommitOptions } from '../snapshot/commit.js';
import { SnapshotManager } from '../snapshot/snapshot-manager.js';
import { beforeAppendCommit } from '../maintenance/compact-trigger.js';
import { compactionSettingsOf } from '../maintenance/compaction-settings.js';
import type { CommitHooks } from '../table/commit-hooks.js';
import { Table, type TableCaches } from '../table/table.js';
import { requireEnv, type Env } from './env.js';

/** How long a warm container keeps an opened table; a schema change is picked up after this. */
const TABLE_CACHE_MS = 60_000;
/** Manifest entries a container keeps per table. */
const MANIFEST_CACHE_ENTRIES = 500_000;

const opened = new Map<string, { table: Promise<Table>; at: number }>();
/** One catalog (and so one store object) per warehouse and catalog table, for the container's lifetime. */
const catalogs = new Map<string, Catalog>();
/** Per table (store and path): the caches every object the container opens for it shares. */
const tableCaches = new Map<string, TableCaches>();

function cacheKey(env: Env, name: string): string {
  return JSON.stringify([env.VARVE_WAREHOUSE, env.VARVE_CATALOG_TABLE ?? '', name]);
}

function catalogOf(warehouse: string, env: Env): Catalog {
  const key = JSON.stringify([warehouse, env.VARVE_CATALOG_TABLE ?? '']);
  let catalog = catalogs.get(key);
  if (!catalog) catalogs.set(key, (catalog = openCatalog(warehouse, env)));
  return catalog;
}

/** The container-lifetime caches of the table at `path` in `t`'s store. */
function cachesOf(t: Table): TableCaches {
  const key = `${t.store.uri}\u0000${t.path}`;
  let caches = tableCaches.get(key);
  // A store object other than the one the caches were made for (never, with one catalog per
  // warehouse) gets new ones: a snapshot manager commits only to its own store.
  if (caches?.commitSnapshots.store !== t.store) {
    caches = {
      commitSnapshots: new SnapshotManager(t.store, t.path, { cacheSnapshots: true }),
      manifestCache: new LruManifestCache(MANIFEST_CACHE_ENTRIES),
    };
    tableCaches.set(key, caches);
  }
  return caches;
}

/** Opens `name` (default VARVE_TABLE) in the warehouse VARVE_WAREHOUSE, through openCatalog. */
export async function openTable(env: Env, who: string, name?: string): Promise<Table> {
  const { VARVE_WAREHOUSE: warehouse } = requireEnv(env, ['VARVE_WAREHOUSE'], who);
  const tableName = name ?? requireEnv(env, ['VARVE_TABLE'], who).VARVE_TABLE;
  const key = cacheKey(env, tableName);
  const hit = opened.get(key);
  if (hit && Date.now() - hit.at < TABLE_CACHE_MS) return hit.table;
  const table = catalogOf(warehouse, env)
    .getTable(tableName)
    .then((t) => new Table(t.store, t.name, t.path, t.schema, FUNCTION_COMMIT_HOOKS, cachesOf(t)));
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

/** The container-lifetime manifest cache of a table (the table's own: openTable shares it). */
export function manifestCacheOf(table: Table): LruManifestCache {
  return table.manifestCache;
}

/** The commit settings that keep a table's caches across invocations (the table's own: openTable shares them). */
export function commitCachesOf(table: Table): Partial<CommitOptions> {
  return { manifestCache: table.manifestCache, snapshotManager: table.commitSnapshots };
}
