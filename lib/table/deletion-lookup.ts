/**
 * The lookup of deletion-vector maintenance (deletion-maintenance.ts): the merge columns (key,
 * `sequence.field`, `_SEQUENCE_NUMBER`, `_VALUE_KIND`) of a bucket's live data files, decoded by
 * range, with
 *   - row-group pruning: of an older file, only the row groups whose key statistics overlap the
 *     key range of the commit's added files are decoded (a table whose first key column is an
 *     integer; read-pruning.ts's key span filter);
 *   - a decoded-column cache per data file: data files never change, so a file decoded whole
 *     (an added file at its commit, an older file looked up whole) is not decoded again by the
 *     next commits of the process. The cache is bounded, and counted in the table's
 *     `compaction.memory-budget` (the memory the lookup may hold, as for the lookup changelog
 *     producer): it holds at most a quarter of it, least recently used files evicted first;
 *   - the same cache holds the deletion vectors a commit wrote or read, so the next commit of the
 *     process takes a file's earlier vector without reading its Puffin blob back;
 *   - a writer of this process hands the merge columns of each level-0 file it writes to the cache
 *     (it holds them sorted as it encodes the file: `level0Handover`), so the commit that adds the
 *     file looks its keys up without reading it back. Files committed by the AWS commit function
 *     (written by another process, handed over in a queue message as file names only) are read back.
 */
import * as arrow from 'apache-arrow';
import { physicalArrowSchema } from '../format/arrow-schema.js';
import { tableFromColumns } from '../format/column-layout.js';
import { concatTables, emptyTable, gatherRows, singleBatch, takeRows } from '../format/columns.js';
import { openDataFileRanged } from '../format/data-file.js';
import type { RowSpanFilter } from '../format/row-group-reader.js';
import { loadDeletionVector, type DeletionVectorRef } from '../manifest/deletion-index.js';
import type { ManifestEntry } from '../manifest/types.js';
import type { JsonValue } from '../schema/value-codec.js';
import { kindColumn, sequenceColumn } from '../mergetree/arrow-build.js';
import { keyFirstColumns } from '../mergetree/key-first-merge.js';
import { mergeConfigFromOptions } from '../mergetree/merge-config.js';
import { mergeEngineFor } from '../mergetree/merge-function.js';
import type { GatherPlan } from '../mergetree/write-buffer.js';
import { approximateBytes } from '../mergetree/write-buffer.js';
import { SizedLru } from '../sized-lru.js';
import type { ObjectStore } from '../store/object-store.js';
import { dataFileKey } from './paths.js';
import { dataFileCheck, readEntry } from './read.js';
import { keySpanFilter } from './read-pruning.js';
import type { Table } from './table.js';

/** The share of `compaction.memory-budget` the decoded-column cache may hold. */
const CACHE_SHARE = 4;

/** What the cache holds: decoded merge columns of a data file, or the positions of a deletion vector. */
type Cached = arrow.Table | Uint32Array;

/** A bounded cache of decoded merge columns by data file and of deletion vectors by blob (least recently used evicted first), sized in bytes (a table's buffers as the write buffer counts them, a vector's positions). */
type DecodedColumnCache = SizedLru<string, Cached>;

/** Bytes `value` holds in the cache. */
function cachedBytes(value: Cached): number {
  return value instanceof Uint32Array ? value.byteLength : approximateBytes(value);
}

/** One cache per store: file keys are unique within a store, not across stores. */
const caches = new WeakMap<ObjectStore, DecodedColumnCache>();

function cacheOf(store: ObjectStore): DecodedColumnCache {
  let c = caches.get(store);
  if (c === undefined) caches.set(store, (c = new SizedLru<string, Cached>()));
  return c;
}

/** Bytes the lookup's decoded-column cache holds for the tables of `store` (tests, memory accounting). */
export function lookupCacheBytes(store: ObjectStore): number {
  return caches.get(store)?.size ?? 0;
}

/** The cache's bound for `table`: a quarter of its compaction.memory-budget. */
function cacheLimit(table: Table): number {
  return table.options.compactionMemoryBudget / CACHE_SHARE;
}

/** True when the table keeps deletion vectors. */
export function keepsDeletionVectors(table: Table): boolean {
  return table.schema.primaryKeys.length > 0 && table.options.get('deletion-vectors.enabled') === true;
}

/** The merge columns the lookup decodes: the key, the engine's sequence fields, `_SEQUENCE_NUMBER`, `_VALUE_KIND`. */
export function mergeColumnsOf(table: Table): string[] {
  const engine = mergeEngineFor(mergeConfigFromOptions(table.options, table.schema.primaryKeys));
  return keyFirstColumns({ keyColumns: table.schema.primaryKeys, engine });
}

/** The cache key of a data file's `columns` (decoded through schema `schemaId` when it is not the file's). */
function columnsId(key: string, columns: readonly string[], evolvedTo?: number): string {
  return `${key}\n${columns.join('\n')}${evolvedTo !== undefined ? `\n${evolvedTo}` : ''}`;
}

/**
 * What a writer hands over of one level-0 file: the merge columns of its rows, taken as they are
 * encoded (`add`: pieces of the file's physical rows, in file order; `addGathered`: a gather plan,
 * whose rows the encoder's workers gather). `finish` puts them in the cache under the file's key,
 * the columns a lookup of the file would decode. Columns past the cache's bound are not kept (the
 * cache could not hold them): the commit then reads that file back.
 */
export interface Level0Handover {
  add(rows: arrow.Table): void;
  addGathered(plan: GatherPlan): void;
  finish(key: string): void;
}

/** The handover of a level-0 file `table`'s writer is writing; undefined for a table without deletion vectors. */
export function level0Handover(table: Table): Level0Handover | undefined {
  if (!keepsDeletionVectors(table)) return undefined;
  const columns = mergeColumnsOf(table);
  const physical = physicalArrowSchema(table.schema);
  const schema = new arrow.Schema(columns.map((c) => physical.fields.find((f) => f.name === c)!));
  const limit = cacheLimit(table);
  let pieces: arrow.Table[] | undefined = [];
  let bytes = 0;
  const keep = (t: arrow.Table) => {
    if (pieces === undefined) return;
    bytes += approximateBytes(t);
    if (bytes > limit) pieces = undefined;
    else pieces.push(t);
  };
  return {
    add: (rows) => keep(rows.select(columns)),
    addGathered: (plan) => keep(gatheredColumns(plan, columns, schema)),
    finish: (key) => {
      if (pieces === undefined || pieces.length === 0) return;
      const t = pieces.length === 1 ? singleBatch(pieces[0]) : singleBatch(concatTables(pieces, schema));
      pieces = undefined;
      cacheOf(table.store).set(columnsId(key, columns), t, cachedBytes(t), limit);
    },
  };
}

/**
 * The merge columns of a gather plan's rows: the key and sequence fields gathered from its
 * sources, `_SEQUENCE_NUMBER` and `_VALUE_KIND` as the plan numbers them (what the file stores).
 */
function gatheredColumns(plan: GatherPlan, columns: string[], schema: arrow.Schema): arrow.Table {
  const fields = columns.slice(0, -2);
  const sources = plan.sources.map((t) => t.select(fields));
  const row = plan.row.subarray(0, plan.count);
  const fieldRows =
    plan.source === null ? takeRows(sources[0], row) : gatherRows(sources, plan.source.subarray(0, plan.count), row);
  const children = [
    ...fieldRows.batches[0].data.children,
    sequenceColumn(plan.sequence, plan.count),
    kindColumn(plan.kind, plan.count),
  ];
  return tableFromColumns(schema, children, plan.count);
}

/** Merge columns of one data file: all its rows (`positions` undefined) or those of the row groups the pruning kept. */
export interface LookedUp {
  table: arrow.Table;
  /** The file position of each row of `table`; undefined when row i is the file's row i. */
  positions?: Uint32Array;
}

/**
 * The key range `min` … `max` (stored keys) as a row-group filter for the older files of a bucket
 * (undefined when the table's keys cannot be pruned by statistics).
 */
export function keyRangeFilter(table: Table, min: JsonValue[], max: JsonValue[]): RowSpanFilter | undefined {
  return keySpanFilter(table, undefined, { min, max });
}

/**
 * The `columns` of a live data file as one single-batch table: from the cache, or decoded by
 * range (a file of an older schema through the table's). With `range`, row groups whose key
 * statistics fall outside it are not decoded; a file decoded whole is cached.
 */
export async function lookupColumns(
  table: Table,
  entry: ManifestEntry,
  columns: string[],
  range?: RowSpanFilter,
): Promise<LookedUp> {
  const key = dataFileKey(table.path, entry.partition, entry.bucket, entry.file.fileName);
  const evolved = entry.file.schemaId !== table.schema.id;
  const id = columnsId(key, columns, evolved ? table.schema.id : undefined);
  const cache = cacheOf(table.store);
  const hit = cache.get(id);
  if (hit instanceof arrow.Table) return { table: hit };
  if (evolved) {
    const t = singleBatch((await readEntry(table, entry)).select(columns));
    cache.set(id, t, cachedBytes(t), cacheLimit(table));
    return { table: t };
  }
  const decoder = await openDataFileRanged(table.store, key, entry.file.fileSize, dataFileCheck(table, entry.file));
  try {
    const all = decoder.rowGroupRows.map((_, g) => g);
    const stats = decoder.rowGroupStats;
    const groups = range === undefined || stats === undefined ? all : all.filter((g) => range.rowGroupMay(stats[g]));
    const physical = physicalArrowSchema(table.schema);
    const schema = new arrow.Schema(columns.map((c) => physical.fields.find((f) => f.name === c)!));
    const parts = groups.length === 0 ? [] : await decoder.readRowGroups(columns, groups);
    const t = parts.length === 0 ? emptyTable(schema) : singleBatch(concatTables(parts, schema));
    if (groups.length === all.length) {
      cache.set(id, t, cachedBytes(t), cacheLimit(table));
      return { table: t };
    }
    return { table: t, positions: groupPositions(decoder.rowGroupRows, groups, t.numRows) };
  } finally {
    await decoder.free();
  }
}

/** The file positions of the rows of row groups `groups` (ascending) decoded one after another. */
function groupPositions(rowGroupRows: readonly number[], groups: readonly number[], rows: number): Uint32Array {
  const starts: number[] = [];
  let at = 0;
  for (const n of rowGroupRows) starts.push(at), (at += n);
  const out = new Uint32Array(rows);
  let i = 0;
  for (const g of groups) for (let r = 0; r < rowGroupRows[g]; r++) out[i++] = starts[g] + r;
  return out;
}

/** The cache key of a deletion vector: its blob's place (Puffin files never change). */
function vectorId(table: Table, ref: DeletionVectorRef): string {
  return `${table.path}\n${ref.dvFile}@${ref.offset}`;
}

/** The positions of a deletion vector: from the cache (vectors this process wrote or read), else loaded and cached. */
export async function lookupVector(table: Table, ref: DeletionVectorRef): Promise<Uint32Array> {
  const cache = cacheOf(table.store);
  const id = vectorId(table, ref);
  const hit = cache.get(id);
  if (hit instanceof Uint32Array) return hit;
  const positions = await loadDeletionVector(table.store, table.path, ref);
  cache.set(id, positions, cachedBytes(positions), cacheLimit(table));
  return positions;
}

/** Caches the vectors a commit just wrote (`positions` by data file name), so the next commits need not read them back. */
export function rememberVectors(
  table: Table,
  refs: readonly DeletionVectorRef[],
  positions: Map<string, Uint32Array>,
): void {
  const cache = cacheOf(table.store);
  for (const ref of refs) {
    const p = positions.get(ref.fileName);
    if (p !== undefined) cache.set(vectorId(table, ref), p, cachedBytes(p), cacheLimit(table));
  }
}

/** A data file's merge columns read a piece at a time, in file (key) order. */
export interface ColumnPieces {
  /** Pieces are left to read. */
  readonly more: boolean;
  /** The next piece (single batch): row groups read until it holds `share` bytes, or the next slice of a cached file. */
  next(): Promise<arrow.Table>;
  /** Releases the file being read (after a read in flight). */
  close(): Promise<void>;
}

/**
 * The merge columns of a live data file, a piece of about `share` bytes at a time (at least a row
 * group): from the cache (a file handed over by its writer, or decoded before) in slices, else
 * decoded row group by row group. A file read whole in one piece is cached as `lookupColumns` does.
 */
export async function lookupPieces(
  table: Table,
  entry: ManifestEntry,
  columns: string[],
  share: number,
): Promise<ColumnPieces> {
  const key = dataFileKey(table.path, entry.partition, entry.bucket, entry.file.fileName);
  const cache = cacheOf(table.store);
  const cached = cache.get(columnsId(key, columns));
  if (cached instanceof arrow.Table || entry.file.schemaId !== table.schema.id) {
    const whole = cached instanceof arrow.Table ? cached : (await lookupColumns(table, entry, columns)).table;
    return slicedPieces(whole, share);
  }
  const decoder = await openDataFileRanged(table.store, key, entry.file.fileSize, dataFileCheck(table, entry.file));
  const physical = physicalArrowSchema(table.schema);
  const schema = new arrow.Schema(columns.map((c) => physical.fields.find((f) => f.name === c)!));
  const groups = decoder.rowGroupRows.length;
  let g = 0;
  return {
    get more() {
      return g < groups;
    },
    next: async () => {
      const first = g === 0;
      const parts: arrow.Table[] = [];
      let bytes = 0;
      while (g < groups && (parts.length === 0 || bytes < share)) {
        const part = await decoder.readRowGroups(columns, [g++]);
        parts.push(...part);
        bytes += part.reduce((sum, t) => sum + approximateBytes(t), 0);
      }
      const t = parts.length === 0 ? emptyTable(schema) : singleBatch(concatTables(parts, schema));
      if (first && g === groups) cache.set(columnsId(key, columns), t, cachedBytes(t), cacheLimit(table));
      return t;
    },
    close: () => decoder.free(),
  };
}

/** The pieces of a table held whole: slices of about `share` bytes (copies, each a single batch from row 0). */
function slicedPieces(whole: arrow.Table, share: number): ColumnPieces {
  const perRow = Math.max(1, approximateBytes(whole) / Math.max(1, whole.numRows));
  const rows = Math.max(1, Math.floor(share / perRow));
  let at = 0;
  let done = false;
  return {
    get more() {
      return !done;
    },
    next: async () => {
      const from = at;
      at = Math.min(whole.numRows, at + rows);
      done = at >= whole.numRows;
      if (from === 0 && done) return whole;
      return takeRows(
        whole,
        Uint32Array.from({ length: at - from }, (_, i) => from + i),
      );
    },
    close: async () => undefined,
  };
}
