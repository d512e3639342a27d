/**
 * Merge-free reads of a deletion-vector table (issue 31 §2): a snapshot that carries deletion
 * vectors (Snapshot.deletionVectors) holds its live rows as "every row of every live file minus
 * the positions in its vector" (deletion-maintenance.ts), so a read decodes each live file — files
 * in parallel, row groups on the decode pool — and drops its deleted positions: no k-way merge,
 * no `_SEQUENCE_NUMBER` or `_VALUE_KIND` decoded. Partition, bucket and key-range pruning are the
 * merged read's (planRead). Rows come file by file, not in key order.
 *
 * readTable and scanTable branch here at one point; the audit log (keepDeletes) and a read asked
 * to ignore the vectors (tests comparing both) keep the merged read.
 */
import * as arrow from 'apache-arrow';
import { runLimitedSettled } from '../concurrency.js';
import { tableArrowSchema } from '../format/arrow-schema.js';
import { concatTables, emptyTable, takeRows } from '../format/columns.js';
import { openDataFileRanged, readDataFileRanged, readDataFileRowGroups } from '../format/data-file.js';
import { evolveTable } from '../format/evolve.js';
import { SchemaChangedError } from '../errors.js';
import {
  dvFileIdentity,
  loadDeletionVector,
  readDeletionIndex,
  refIdentity,
  type DeletionVectorRef,
} from '../manifest/deletion-index.js';
import type { ManifestEntry } from '../manifest/types.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import { dataFileKey } from './paths.js';
import { filterTable } from './predicate.js';
import type { ReadOptions } from './read.js';
import type { ReadExplain, ReadPruning } from './read-pruning.js';
import type { Table } from './table.js';

/** Files decoded at once by a merge-free read (their row groups go to the decode pool). */
const FILES_AT_ONCE = 8;

/**
 * True when a read of `snapshot` with `opts` needs no merge: the snapshot has deletion vectors and
 * the read drops deletions (a key-range read, used inside varve, keeps the merged read).
 */
export function readsMergeFree(
  snapshot: Snapshot,
  opts: Pick<ReadOptions, 'keepDeletes' | 'ignoreDeletionVectors' | 'keyRange'>,
): boolean {
  return (
    snapshot.deletionVectors !== undefined &&
    !opts.keepDeletes &&
    !opts.ignoreDeletionVectors &&
    opts.keyRange === undefined
  );
}

/** The rows of a file written under another schema, through the table's (by field id). */
async function evolved(table: Table, e: ManifestEntry, t: arrow.Table): Promise<arrow.Table> {
  if (e.file.schemaId > table.schema.id) {
    await table.schemaById(e.file.schemaId);
    throw new SchemaChangedError(
      `${table.name}: data file ${e.file.fileName} was written with schema ${e.file.schemaId}, newer than schema ${table.schema.id} this reader uses; reopen the table and read again`,
      table.schema.id,
      e.file.schemaId,
    );
  }
  const fileSchema = await table.schemaById(e.file.schemaId);
  return evolveTable(t, fileSchema.fields, table.schema.fields);
}

function check(table: Table, e: ManifestEntry) {
  return { footerCrc32: e.file.footerCrc32, table: table.name };
}

/** The read's plan, as readTable / scanTable made it. */
export interface MergeFreePlan {
  entries: ManifestEntry[];
  where?: ReadPruning;
  explain: ReadExplain;
}

/** The vectors of the snapshot by data file identity. */
async function vectorsOf(table: Table, snapshot: Snapshot): Promise<Map<string, DeletionVectorRef>> {
  const refs = await readDeletionIndex(table.store, table.path, snapshot);
  return new Map(refs.map((r) => [refIdentity(r), r]));
}

/** The user columns a read must decode: the asked ones, or all when a filter needs others. */
function decodedColumns(table: Table, columns: string[] | undefined, opts: ReadOptions): string[] {
  const all = table.schema.fields.map((f) => f.name);
  return columns === undefined || opts.where !== undefined ? all : columns;
}

/** The index of the first deleted position at or after `position`. */
function firstAtOrAfter(deleted: Uint32Array, position: number): number {
  let lo = 0;
  let hi = deleted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (deleted[mid] < position) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The rows of `t` (one batch, whose first row is the file's row `offset`) less the deleted
 * positions: itself when none falls in it, else the kept rows gathered into one new batch.
 */
function dropDeleted(t: arrow.Table, deleted: Uint32Array, offset: number): arrow.Table {
  const end = offset + t.numRows;
  let d = firstAtOrAfter(deleted, offset);
  if (d >= deleted.length || deleted[d] >= end) return t;
  const last = firstAtOrAfter(deleted, end);
  const keep = new Uint32Array(t.numRows - (last - d));
  let n = 0;
  for (let i = 0; i < t.numRows; i++) {
    if (d < last && deleted[d] === offset + i) d++;
    else keep[n++] = i;
  }
  return takeRows(t, keep);
}

/** The batches of `t` (the file's rows from its first) less the deleted positions, batch by batch (no concatenation). */
function dropDeletedBatches(t: arrow.Table, deleted: Uint32Array): arrow.Table[] {
  const out: arrow.Table[] = [];
  let offset = 0;
  for (const b of t.batches) {
    out.push(dropDeleted(new arrow.Table(t.schema, [b]), deleted, offset));
    offset += b.numRows;
  }
  return out;
}

/** True when rows [start, end) of a file hold a position `deleted` does not. */
function holdsLive(deleted: Uint32Array, start: number, end: number): boolean {
  return firstAtOrAfter(deleted, end) - firstAtOrAfter(deleted, start) < end - start;
}

/** The row groups of a file that hold a live row, and the file position of each one's first row. */
function liveRowGroups(rowGroupRows: readonly number[], deleted: Uint32Array): { groups: number[]; offsets: number[] } {
  const groups: number[] = [];
  const offsets: number[] = [];
  let start = 0;
  for (let g = 0; g < rowGroupRows.length; g++) {
    const end = start + rowGroupRows[g];
    if (holdsLive(deleted, start, end)) {
      groups.push(g);
      offsets.push(start);
    }
    start = end;
  }
  return { groups, offsets };
}

/** The deleted positions of one live file (none without a vector). */
function deletedOf(table: Table, vectors: Map<string, DeletionVectorRef>, e: ManifestEntry): Promise<Uint32Array> {
  const ref = vectors.get(dvFileIdentity(e.partition, e.bucket, e.file.fileName));
  return ref === undefined ? Promise.resolve(new Uint32Array()) : loadDeletionVector(table.store, table.path, ref);
}

/**
 * The live rows of one file, the `names` columns, a table per decoded row group: a row group whose
 * rows are all deleted is not fetched (nor a wholly deleted file), the others have their deleted
 * rows filtered out of their decoded batch.
 */
async function liveRowsOf(
  table: Table,
  vectors: Map<string, DeletionVectorRef>,
  e: ManifestEntry,
  names: string[],
): Promise<arrow.Table[]> {
  const key = dataFileKey(table.path, e.partition, e.bucket, e.file.fileName);
  const deleted = await deletedOf(table, vectors, e);
  if (deleted.length >= e.file.rowCount) return [];
  if (e.file.schemaId !== table.schema.id) {
    const t = await readDataFileRanged(table.store, key, e.file.fileSize, { check: check(table, e) });
    return dropDeletedBatches((await evolved(table, e, t)).select(names), deleted);
  }
  const decoder = await openDataFileRanged(table.store, key, e.file.fileSize, check(table, e));
  try {
    const { groups, offsets } = liveRowGroups(decoder.rowGroupRows, deleted);
    const parts = await decoder.readRowGroups(names, groups);
    return parts.map((t, i) => dropDeleted(t, deleted, offsets[i]));
  } finally {
    await decoder.free();
  }
}

/** readTable of a snapshot with deletion vectors (see the file comment): the result before projection to `columns`. */
export async function readMergeFree(
  table: Table,
  snapshot: Snapshot,
  plan: MergeFreePlan,
  columns: string[] | undefined,
  opts: ReadOptions,
): Promise<arrow.Table> {
  const { entries, where, explain } = plan;
  const names = decodedColumns(table, columns, opts);
  const schema = new arrow.Schema(names.map((n) => tableArrowSchema(table.schema).fields.find((f) => f.name === n)!));
  const vectors = await vectorsOf(table, snapshot);
  const parts = await runLimitedSettled(
    entries.map((e) => () => liveRowsOf(table, vectors, e, names)),
    FILES_AT_ONCE,
  );
  const live = parts.flat().filter((t) => t.numRows > 0);
  let result = live.length > 0 ? concatTables(live, schema) : emptyTable(schema);
  explain.mergedRows = result.numRows;
  if (where) result = filterTable(result, where.predicate, table.schema.fields);
  if (opts.limit !== undefined && result.numRows > opts.limit) result = result.slice(0, opts.limit);
  explain.matchingRows = result.numRows;
  opts.explain?.(explain);
  return columns === undefined ? result : result.select(columns);
}

/**
 * The live rows of one file, a decoded batch at a time (row groups fetched by range): as in
 * liveRowsOf, a row group whose rows are all deleted is not fetched, nor a wholly deleted file.
 */
async function* liveChunksOf(
  table: Table,
  vectors: Map<string, DeletionVectorRef>,
  e: ManifestEntry,
  names: string[],
): AsyncGenerator<arrow.Table> {
  const deleted = await deletedOf(table, vectors, e);
  if (deleted.length >= e.file.rowCount) return;
  const key = dataFileKey(table.path, e.partition, e.bucket, e.file.fileName);
  const same = e.file.schemaId === table.schema.id;
  // The file position of the next chunk's first row: a row group read starts at its own first row.
  let offset = 0;
  const chunks = readDataFileRowGroups(table.store, key, e.file.fileSize, {
    ...(same ? { columns: names } : {}),
    check: check(table, e),
    rowGroupWanted: (_g, firstRow, rows) => {
      if (!holdsLive(deleted, firstRow, firstRow + rows)) return false;
      offset = firstRow;
      return true;
    },
  });
  for await (const raw of chunks) {
    const chunk = same ? raw : (await evolved(table, e, raw)).select(names);
    const live = dropDeleted(chunk, deleted, offset);
    offset += chunk.numRows;
    if (live.numRows > 0) yield live;
  }
}

/**
 * scanTable of a snapshot with deletion vectors: RecordBatches of at most `batchRows` rows, after
 * filter and limit, projected to `columns`; one empty batch when nothing matches (a reader always
 * learns the schema).
 */
export async function* scanMergeFree(
  table: Table,
  snapshot: Snapshot,
  plan: MergeFreePlan,
  columns: string[] | undefined,
  opts: ReadOptions,
  batchRows: number,
): AsyncGenerator<arrow.RecordBatch> {
  const { entries, where, explain } = plan;
  const names = decodedColumns(table, columns, opts);
  let remaining = opts.limit ?? Infinity;
  let yielded = false;
  const vectors = await vectorsOf(table, snapshot);
  for (const e of entries) {
    if (remaining <= 0) break;
    for await (let piece of liveChunksOf(table, vectors, e, names)) {
      explain.mergedRows += piece.numRows;
      if (where) piece = filterTable(piece, where.predicate, table.schema.fields);
      if (piece.numRows > remaining) piece = piece.slice(0, remaining);
      remaining -= piece.numRows;
      explain.matchingRows += piece.numRows;
      const out = columns === undefined ? piece : piece.select(columns);
      for (let at = 0; at < out.numRows; at += batchRows) {
        for (const b of out.slice(at, at + batchRows).batches) {
          if (b.numRows === 0) continue;
          yielded = true;
          yield b;
        }
      }
      if (remaining <= 0) break;
    }
  }
  opts.explain?.(explain);
  if (!yielded) {
    const schema = tableArrowSchema(table.schema);
    const wanted = columns ?? schema.fields.map((f) => f.name);
    yield* emptyTable(new arrow.Schema(wanted.map((n) => schema.fields.find((f) => f.name === n)!))).batches;
  }
}
