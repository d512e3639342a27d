/**
 * Opening tables in a function: through the catalog the environment names (the DynamoDB catalog
 * on AWS), kept for a minute in a warm container so that consecutive invocations skip the catalog
 * and schema reads; a cold commit function opens its table at the schema its batches' writers
 * found newest less than a minute ago (openAtSeenSchema: one GET instead of three requests). Each table keeps one snapshot manager and one manifest cache for the
 * container's lifetime (Table's caches, handed to every object the container opens for it):
 * snapshots and manifests are immutable, so the group commit's deduplication window, the write's
 * routing, the back-pressure check, the commit and the after-commit work of every invocation share
 * them, and each invocation reads only what was written since the last one. A table dropped and
 * created again at the same location is another table (another UUID): it gets caches of its own,
 * and a warm container given input for it opens it again at once (openTable `tableUuids`).
 */
import type { Catalog } from '../catalog/catalog.js';
import { openCatalog } from '../catalog/open-catalog.js';
import { ObjectNotFoundError } from '../errors.js';
import { LruManifestCache } from '../manifest/manifest-file.js';
import type { CommitOptions } from '../snapshot/commit.js';
import { SnapshotManager } from '../snapshot/snapshot-manager.js';
import { parseTableIdentifier } from '../schema/parse.js';
import { readSchema } from '../schema/schema-manager.js';
import type { TableSchema } from '../schema/types.js';
import { beforeAppendCommit } from '../maintenance/compact-trigger.js';
import { compactionSettingsOf } from '../maintenance/compaction-settings.js';
import type { CommitHooks } from '../table/commit-hooks.js';
import type { CommitMessage } from '../table/commit-message.js';
import { tableLocation } from '../table/paths.js';
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

/**
 * The container-lifetime caches of the table at `path` in `t`'s store, of the table `schema`
 * belongs to (its UUID): a table dropped and created again at the same location is another table,
 * whose snapshot ids and manifests the old one's caches must never answer for.
 */
function cachesOf(t: Pick<Table, 'store' | 'path'>, schema: TableSchema): TableCaches {
  const key = `${t.store.uri}\u0000${t.path}\u0000${schema.tableUuid ?? ''}`;
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

/**
 * A schema a writer found to be the table's newest when it opened the table (`seenAt`, epoch ms:
 * when its lookup started), as a commit message carries it (CommitMessage.schemaSeenAt).
 */
export interface SeenSchema {
  schemaId: number;
  seenAt: number;
}

/** Per table object opened here: when the lookup that found its schema started (epoch ms). */
const schemaLookups = new WeakMap<Table, number>();

/** When the lookup that found `table`'s schema started (epoch ms), for a table openTable opened. */
export function schemaSeenAt(table: Table): number | undefined {
  return schemaLookups.get(table);
}

/**
 * Opens `name` (default VARVE_TABLE) in the warehouse VARVE_WAREHOUSE, through openCatalog: the
 * catalog item (DynamoDB GetItem), schema-0 and a HEAD of schema-1 (schema-manager.ts
 * latestSchema). With `seen`, a schema a writer found newest less than TABLE_CACHE_MS ago, a cold
 * container opens the table at that schema instead (openAtSeenSchema: one GET). With `tableUuids`,
 * the UUIDs of the tables the caller's input was written for: a kept table with another UUID is
 * opened again through the catalog (no request while they match: the warm path stays as it is).
 */
export async function openTable(
  env: Env,
  who: string,
  name?: string,
  seen?: SeenSchema,
  tableUuids?: ReadonlySet<string>,
): Promise<Table> {
  const { VARVE_WAREHOUSE: warehouse } = requireEnv(env, ['VARVE_WAREHOUSE'], who);
  const tableName = name ?? requireEnv(env, ['VARVE_TABLE'], who).VARVE_TABLE;
  const key = cacheKey(env, tableName);
  const hit = opened.get(key);
  const now = Date.now();
  if (hit && now - hit.at < TABLE_CACHE_MS) {
    const table = await hit.table;
    if (!otherTable(table, tableUuids)) return table;
    // Input written for another table of this name: this one (or that one) was dropped and
    // created again. Opened again through the catalog, which says which table is there now.
    const reopened = openLatest(catalogOf(warehouse, env), tableName, now);
    opened.set(key, { table: reopened, at: now });
    forgetOnFailure(key, reopened);
    return reopened;
  }
  const catalog = catalogOf(warehouse, env);
  const fresh = seen !== undefined && seen.seenAt <= now && now - seen.seenAt < TABLE_CACHE_MS;
  const table = fresh ? openAtSeenSchema(catalog, tableName, seen) : openLatest(catalog, tableName, now);
  opened.set(key, { table, at: fresh ? seen.seenAt : now });
  forgetOnFailure(key, table);
  return table;
}

/** A failed open is not cached: the next invocation tries again. */
function forgetOnFailure(key: string, table: Promise<Table>): void {
  table.catch(() => {
    if (opened.get(key)?.table === table) opened.delete(key);
  });
}

/** True when some UUID of `uuids` (the tables the input was written for) is not `table`'s. */
function otherTable(table: Table, uuids: ReadonlySet<string> | undefined): boolean {
  const own = table.schema.tableUuid;
  if (own === undefined || uuids === undefined) return false;
  for (const u of uuids) if (u !== own) return true;
  return false;
}

/** The table UUIDs `messages` were written for (those that say). */
export function messageTableUuids(messages: readonly CommitMessage[]): Set<string> {
  const uuids = new Set<string>();
  for (const m of messages) if (m.tableUuid !== undefined) uuids.add(m.tableUuid);
  return uuids;
}

/** The `database.table` name of VARVE_TABLE (as commit messages name their table). */
export function tableNameOf(env: Env, who: string): string {
  const id = parseTableIdentifier(requireEnv(env, ['VARVE_WAREHOUSE', 'VARVE_TABLE'], who).VARVE_TABLE);
  return `${id.database}.${id.table}`;
}

/**
 * The newest schema the writers of `messages` found, and when: the highest schema id among the
 * messages that say when their writer found it, with the latest of those times. Schemas are only
 * added, so that schema is at least the newest of that time (openAtSeenSchema).
 */
export function newestSeenSchema(messages: readonly CommitMessage[]): SeenSchema | undefined {
  let seen: SeenSchema | undefined;
  for (const m of messages) {
    if (m.schemaSeenAt === undefined) continue;
    seen = {
      schemaId: Math.max(seen?.schemaId ?? 0, m.schemaId),
      seenAt: Math.max(seen?.seenAt ?? 0, m.schemaSeenAt),
    };
  }
  return seen;
}

/** The table through the catalog, at its newest schema; `lookupAt`: when the lookup starts. */
async function openLatest(catalog: Catalog, name: string, lookupAt: number): Promise<Table> {
  const t = await catalog.getTable(name);
  const table = new Table(t.store, t.name, t.path, t.schema, FUNCTION_COMMIT_HOOKS, cachesOf(t, t.schema));
  schemaLookups.set(table, lookupAt);
  return table;
}

/**
 * The table at schema `seen.schemaId`, read from the table's standard folder (one GET), without
 * the catalog item or a look for a newer schema. Sound because:
 * - the view is as fresh as a warm container's: schemas are only added, so the schema a writer's
 *   lookup found at `seenAt` is at least the newest of that moment, and openTable keeps the table
 *   until `seenAt` + TABLE_CACHE_MS, the bound a table opened by its own lookup at `seenAt` has
 *   (a schema change is picked up within a minute either way). A `seenAt` in the future (another
 *   clock, or not a writer's) is not trusted: the catalog opens the table. Function clocks are
 *   kept within milliseconds of each other by the Amazon Time Sync Service.
 * - the folder is the one the catalog item names: both catalogs keep a table at
 *   tableLocation(database, table), and the DynamoDB catalog refuses an item pointing elsewhere.
 * - a dropped table is not opened: a drop deletes the schema files first; a schema missing sends
 *   the open through the catalog, which reports the table as not found (or not yet created).
 * - what the commit relies on is checked at commit time, not taken from this view: the base's
 *   schema (a commit never lowers a snapshot's schema id; commit-plan.ts), the files' schema (the
 *   batch's own, from its message).
 */
async function openAtSeenSchema(catalog: Catalog, name: string, seen: SeenSchema): Promise<Table> {
  const id = parseTableIdentifier(name);
  const path = tableLocation(id.database, id.table);
  let schema: TableSchema;
  try {
    schema = await readSchema(catalog.store, path, seen.schemaId);
  } catch (e) {
    if (e instanceof ObjectNotFoundError) return openLatest(catalog, name, Date.now());
    throw e;
  }
  const full = `${id.database}.${id.table}`;
  const caches = cachesOf({ store: catalog.store, path }, schema);
  const table = new Table(catalog.store, full, path, schema, FUNCTION_COMMIT_HOOKS, caches);
  schemaLookups.set(table, seen.seenAt);
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
