/**
 * Streamed batch reads: the same merged state as `readTable`, yielded as Arrow RecordBatches in
 * (partition, bucket, key) order while it is read (an append table: in the order rows were written). Each section of overlapping files is merged by
 * a k-way merge over the files' row groups (one decoded row group per file at a time), so memory
 * stays bounded by the files of one section, not by the table.
 */
import type * as arrow from 'apache-arrow';
import { emptyTable, takeRows } from '../format/columns.js';
import { physicalArrowSchema, tableArrowSchema } from '../format/arrow-schema.js';
import { readDataFileRowGroups } from '../format/data-file.js';
import type { DataFileMeta, ManifestEntry } from '../manifest/types.js';
import { intervalPartition } from '../mergetree/interval-partition.js';
import { mergeEngineFor, type MergeFunction } from '../mergetree/merge-function.js';
import type { SortedRun } from '../mergetree/sorted-run.js';
import { mergeConfigFromOptions } from '../mergetree/merge-config.js';
import { alignRunStreams, type RunStream } from '../mergetree/stream-merge.js';
import { columnChunk } from '../mergetree/column-access.js';
import { isRetract, KIND_COLUMN } from '../schema/types.js';
import { mergeSortedRuns, type MergeReadOptions } from '../mergetree/sort-merge-reader.js';
import type { RowSpanFilter } from '../format/row-group-reader.js';
import { readsMergeFree, scanMergeFree } from './deletion-read.js';
import { dataFileKey } from './paths.js';
import {
  bucketGroups,
  checkColumns,
  dataFileCheck,
  evolveChunks,
  filterKeyRange,
  planRead,
  project,
  readFailure,
  type ReadOptions,
} from './read.js';
import { filterTable } from './predicate.js';
import type { Table } from './table.js';
import { resolveSnapshot, tableForRead } from './time-travel.js';

export interface ScanOptions extends ReadOptions {
  /** Most rows per yielded batch (default 65,536). */
  batchRows?: number;
  /**
   * Let the scan reuse its decode buffers: a yielded batch may then be backed by memory that is
   * overwritten once the next batch is asked for, so it must be used (printed, counted, copied)
   * before that and never kept. Saves an allocation per batch and the garbage it leaves (what
   * `varve read` and `count` do). Default false: every batch owns its memory and may be kept.
   */
  reuseBuffers?: boolean;
}

const DEFAULT_BATCH_ROWS = 65_536;

/** Yields the merged rows of a table at a snapshot as RecordBatches, bucket by bucket, in key order. */
export async function* scanTable(table: Table, opts: ScanOptions = {}): AsyncGenerator<arrow.RecordBatch> {
  const snapshot = await resolveSnapshot(table, opts);
  // The schema the snapshot is read with (see tableForRead).
  table = await tableForRead(table, snapshot, opts);
  const columns = checkColumns(table, opts.columns);
  const batchRows = Math.max(1, opts.batchRows ?? DEFAULT_BATCH_ROWS);
  const plan = await planRead(table, snapshot, opts);
  if (!snapshot) {
    opts.explain?.(plan.explain);
    const schema = opts.keepDeletes ? physicalArrowSchema(table.schema) : tableArrowSchema(table.schema);
    yield* project(emptyTable(schema), columns, opts.keepDeletes).batches;
    return;
  }
  if (readsMergeFree(snapshot, opts)) {
    try {
      yield* scanMergeFree(table, snapshot, plan, columns, opts, batchRows);
    } catch (e) {
      throw await readFailure(table, snapshot.id, e);
    }
    return;
  }
  const { entries: pruned, where, explain } = plan;
  let remaining = opts.limit ?? Infinity;
  const reader: SectionReader = {
    table,
    engine: mergeEngineFor(mergeConfigFromOptions(table.options, table.schema.primaryKeys)),
    dropDeletes: !opts.keepDeletes,
    appendOnly: table.schema.primaryKeys.length === 0,
    reuseBuffers: opts.reuseBuffers === true,
    span: plan.span,
  };
  let yielded = false;
  try {
    for (const files of bucketGroups(pruned)) {
      if (remaining <= 0) break;
      for (const section of sectionsOf(reader, files)) {
        if (remaining <= 0) break;
        for await (let piece of readSection(reader, files, section.flat())) {
          if (remaining <= 0) break;
          if (opts.keyRange) piece = filterKeyRange(table, piece, opts.keyRange);
          explain.mergedRows += piece.numRows;
          // After the merge, never before: filtering versions would let an older one win.
          if (where) piece = filterTable(piece, where.predicate, table.schema.fields);
          if (piece.numRows > remaining) piece = piece.slice(0, remaining);
          remaining -= piece.numRows;
          explain.matchingRows += piece.numRows;
          const out = project(piece, columns, opts.keepDeletes);
          for (let at = 0; at < out.numRows; at += batchRows) {
            for (const b of out.slice(at, at + batchRows).batches) {
              if (b.numRows === 0) continue;
              yielded = true;
              yield b;
            }
          }
        }
      }
    }
  } catch (e) {
    throw await readFailure(table, snapshot.id, e);
  }
  opts.explain?.(explain);
  // A reader always learns the schema: an empty result is one empty batch.
  if (!yielded) yield* project(emptyTable(physicalArrowSchema(table.schema)), columns, opts.keepDeletes).batches;
}

/** What a scan reads sections with: the table at the scanned schema and its merge settings. */
interface SectionReader {
  table: Table;
  engine: MergeFunction;
  dropDeletes: boolean;
  appendOnly: boolean;
  reuseBuffers: boolean;
  /** Only the rows of each file in this key range (planRead). */
  span?: RowSpanFilter;
}

/**
 * The sections of one bucket's files, each its sorted runs: an append table's files are read one
 * after another in sequence order (they never overlap in sequence numbers); a keyed table's are
 * merged per section of overlapping key ranges.
 */
function sectionsOf(r: SectionReader, files: readonly ManifestEntry[]): SortedRun[][] {
  return r.appendOnly
    ? bySequence(files).map((e) => [[e.file]])
    : intervalPartition(
        files.map((f) => f.file),
        r.table.compareKeys,
      );
}

/** The merged rows of one section (`sectionFiles`, all of the bucket whose entries are `files`), piece by piece. */
function readSection(
  r: SectionReader,
  files: readonly ManifestEntry[],
  sectionFiles: DataFileMeta[],
): AsyncIterable<arrow.Table> {
  const { table, engine, dropDeletes, appendOnly, reuseBuffers } = r;
  // The span names the current schema's key columns: a file of an older schema is read whole.
  const span = (meta: DataFileMeta) =>
    r.span !== undefined && meta.schemaId === table.schema.id ? { span: r.span } : {};
  // Every entry of `files` is of the same partition and bucket (bucketGroups).
  const keyOf = (meta: DataFileMeta) => dataFileKey(table.path, files[0].partition, files[0].bucket, meta.fileName);
  const plainRows = dropDeletes && engine.name === 'deduplicate';
  if (!appendOnly && plainRows && sectionFiles.length === 1 && sectionFiles[0].schemaId === table.schema.id) {
    // One file alone in its key range: each key has one record there, so the merged rows are
    // its rows without the retractions. Its sequence numbers are never needed (8 of the bytes
    // a row decodes to): only the user columns and the kind are fetched and decoded.
    const wanted = [...table.schema.fields.map((f) => f.name), KIND_COLUMN];
    return withoutRetracts(
      readDataFileRowGroups(table.store, keyOf(sectionFiles[0]), sectionFiles[0].fileSize, {
        columns: wanted,
        reuseBuffers,
        check: dataFileCheck(table, sectionFiles[0]),
        ...span(sectionFiles[0]),
      }),
    );
  }
  // Each file is its own run (one record per key, its own sequence base).
  const runs = sectionFiles.map((meta) => {
    const chunks = readDataFileRowGroups(table.store, keyOf(meta), meta.fileSize, {
      reuseBuffers,
      check: dataFileCheck(table, meta),
      ...span(meta),
    });
    return { chunks: evolveChunks(table, meta, chunks), sequenceBase: meta.sequenceBase, oneRecordPerKey: true };
  });
  const mergeOpts = {
    schema: table.schema,
    keyColumns: table.schema.primaryKeys,
    engine,
    dropDeletes,
    keepKinds: !dropDeletes,
  };
  return appendOnly ? concatRuns(runs, mergeOpts) : mergeSection(runs, mergeOpts, plainRows);
}

/**
 * A section's runs merged in key order (mergeRunStreams), except that with `plainRows` (the
 * deduplicate engine, deletes dropped, system columns dropped by the caller) a key interval that
 * only one run holds and that has no retraction is that run's rows as they are: each key has one
 * record there, so the merge would only copy them and compute sequence numbers and kinds the
 * caller drops. The system columns of such a piece are the stored ones (the caller must not keep them).
 */
async function* mergeSection(
  runs: RunStream[],
  opts: MergeReadOptions,
  plainRows: boolean,
): AsyncGenerator<arrow.Table> {
  for await (const pieces of alignRunStreams(runs, opts.keyColumns)) {
    if (plainRows && pieces.length === 1 && !hasRetract(pieces[0].table)) {
      yield pieces[0].table;
      continue;
    }
    const merged = mergeSortedRuns(pieces, opts);
    if (merged.numRows > 0) yield merged;
  }
}

/**
 * The chunks of one file that is alone in its key range (user columns, then `_VALUE_KIND`), less
 * their -U / -D rows: with one record per key and nothing to merge with, a retraction only hides
 * its own key. A chunk without retractions passes as it is (the kind column is the caller's to drop).
 */
async function* withoutRetracts(chunks: AsyncIterable<arrow.Table>): AsyncGenerator<arrow.Table> {
  for await (const chunk of chunks) {
    if (!hasRetract(chunk)) {
      yield chunk;
      continue;
    }
    const kinds = columnChunk(chunk, chunk.numCols - 1).num!;
    const rows = chunk.numRows;
    const keep: number[] = [];
    for (let i = 0; i < rows; i++) if (!isRetract(kinds[i])) keep.push(i);
    if (keep.length > 0) yield takeRows(chunk, Uint32Array.from(keep));
  }
}

/** Whether a run piece (`_VALUE_KIND` last) holds a -U or -D record. */
function hasRetract(piece: arrow.Table): boolean {
  const kinds = columnChunk(piece, piece.numCols - 1).num!;
  // numRows is a getter that sums the batches (an array and a closure per call): read it once.
  const rows = piece.numRows;
  for (let i = 0; i < rows; i++) if (isRetract(kinds[i])) return true;
  return false;
}

/** An append table's files of one bucket in the order their rows were written. */
function bySequence(files: readonly ManifestEntry[]): ManifestEntry[] {
  return [...files].sort(
    (a, b) =>
      a.file.minSequenceNumber - b.file.minSequenceNumber || a.file.maxSequenceNumber - b.file.maxSequenceNumber,
  );
}

/**
 * The rows of runs that need no merge (an append table's files, each in sequence order), chunk by
 * chunk: each chunk only gets its absolute sequence numbers and kept kinds, memory is one chunk.
 */
async function* concatRuns(runs: RunStream[], opts: MergeReadOptions): AsyncGenerator<arrow.Table> {
  for (const run of runs) {
    for await (const chunk of run.chunks) {
      if (chunk.numRows > 0) yield mergeSortedRuns([{ table: chunk, sequenceBase: run.sequenceBase }], opts);
    }
  }
}
