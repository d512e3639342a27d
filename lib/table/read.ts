/**
 * Batch reads: the live files of a snapshot, grouped per (partition, bucket), cut into sections
 * of overlapping key ranges, and merged per section by a k-way sort-merge through the table's
 * merge engine. Partition pruning from the manifests, key-range pruning from file statistics.
 */
import * as arrow from 'apache-arrow';
import { InvalidArgumentError, ObjectNotFoundError, SchemaChangedError, SnapshotExpiredError } from '../errors.js';
import { evolveTable } from '../format/evolve.js';
import { formatType } from '../schema/type-text.js';
import { runLimitedSettled, settleAll } from '../concurrency.js';
import { concatTables, emptyTable, tableToRows, takeRows } from '../format/columns.js';
import { physicalArrowSchema, tableArrowSchema } from '../format/arrow-schema.js';
import type { DataFileCheck } from '../format/data-file-checksum.js';
import { PooledBatchMemory } from '../format/arrow-import.js';
import { decodePool } from '../format/decode-pool.js';
import { openDataFileRanged, readDataFileRanged, type DataFileDecoder } from '../format/data-file.js';
import type { DataFileMeta, ManifestEntry } from '../manifest/types.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import type { JsonValue } from '../schema/value-codec.js';
import { readLiveFiles } from '../manifest/scan.js';
import { intervalPartition } from '../mergetree/interval-partition.js';
import { mergeEngineFor } from '../mergetree/merge-function.js';
import { mergeConfigFromOptions } from '../mergetree/merge-config.js';
import {
  keyFirstColumns,
  keyFirstSchema,
  mergeKeyFirst,
  mergesKeyFirst,
  ordersByRunSequence,
  type KeyFirstOptions,
  type KeyFirstRun,
} from '../mergetree/key-first-merge.js';
import { mergeSortedRuns } from '../mergetree/sort-merge-reader.js';
import { parsePartitionPath } from '../schema/partition.js';
import { toJsonValue } from '../schema/values.js';
import { KIND_COLUMN, SEQUENCE_COLUMN, type DataField } from '../schema/types.js';
import { readMergeFree, readsMergeFree } from './deletion-read.js';
import { mergePool } from './merge-pool.js';
import { dataFileKey } from './paths.js';
import { filterTable, toPredicate, type Predicate } from './predicate.js';
import { keySpanFilter, ReadPruning, type ReadExplain } from './read-pruning.js';
import type { RowSpanFilter } from '../format/row-group-reader.js';
import type { Table } from './table.js';
import { resolveSnapshot, tableForRead, type SnapshotSpec } from './time-travel.js';

export interface ReadOptions extends SnapshotSpec {
  /** Columns to return, in this order (default: all). */
  columns?: string[];
  /** Only partitions whose values equal these (e.g. `{ dt: '2024-01-01' }`). */
  partition?: Record<string, string>;
  /** Only keys in [min, max] (inclusive; JSON-encoded key tuples). Files outside are not read. */
  keyRange?: { min?: JsonValue[]; max?: JsonValue[] };
  /** Keep retracted keys with their row kinds and the system columns (the audit log). */
  keepDeletes?: boolean;
  /**
   * Only rows for which this predicate is true (text like `amount > 10 AND dt = '2024-05-01'`, or
   * a tree): prunes partitions and files by key range, then filters after the merge.
   */
  where?: string | Predicate;
  /** At most this many rows (after the filter). */
  limit?: number;
  /** Called with what the read pruned and read (`varve read --explain`). */
  explain?: (e: ReadExplain) => void;
  /** Merge the files even when the snapshot has deletion vectors (tests comparing both reads). */
  ignoreDeletionVectors?: boolean;
}

/** Reads the merged state of a table at a snapshot. */
export async function readTable(table: Table, opts: ReadOptions = {}): Promise<arrow.Table> {
  const snapshot = await resolveSnapshot(table, opts);
  // Time travel before an alter sees the old columns; the latest snapshot is read in the current schema (tableForRead).
  table = await tableForRead(table, snapshot, opts);
  const columns = checkColumns(table, opts.columns);
  const { entries: pruned, where, explain, span } = await planRead(table, snapshot, opts);
  const outSchema = opts.keepDeletes ? physicalArrowSchema(table.schema) : tableArrowSchema(table.schema);
  if (!snapshot) {
    opts.explain?.(explain);
    return project(emptyTable(outSchema), columns, opts.keepDeletes);
  }
  if (readsMergeFree(snapshot, opts)) {
    return readMergeFree(table, snapshot, { entries: pruned, where, explain }, columns, opts).catch(async (e) => {
      throw await readFailure(table, snapshot.id, e);
    });
  }
  // Without keepDeletes the result drops the system columns: the merge leaves _SEQUENCE_NUMBER out.
  const section: SectionOptions = { dropDeletes: !opts.keepDeletes, dropSequence: !opts.keepDeletes, span };
  let merged: arrow.Table[];
  try {
    merged = await mergeBuckets(table, pruned, section);
  } catch (e) {
    throw await readFailure(table, snapshot.id, e);
  }
  const mergedSchema = sectionSchema(table, section);
  let result = merged.length ? concatTables(merged, mergedSchema) : emptyTable(mergedSchema);
  if (opts.keyRange) result = filterKeyRange(table, result, opts.keyRange);
  explain.mergedRows = result.numRows;
  // After the merge, never before: filtering versions would let an older one win.
  if (where) result = filterTable(result, where.predicate, table.schema.fields);
  if (opts.limit !== undefined && result.numRows > opts.limit) result = result.slice(0, opts.limit);
  explain.matchingRows = result.numRows;
  opts.explain?.(explain);
  return project(result, columns, opts.keepDeletes);
}

/** The entries of each (partition, bucket), in partition then bucket order. */
export function bucketGroups(entries: readonly ManifestEntry[]): ManifestEntry[][] {
  const groups = new Map<string, ManifestEntry[]>();
  for (const e of entries) {
    const id = `${e.partition}\u0000${e.bucket}`;
    const g = groups.get(id);
    if (g) g.push(e);
    else groups.set(id, [e]);
  }
  return [...groups.keys()].sort().map((id) => groups.get(id)!);
}

/** How a section merges: whether deletes (and `_SEQUENCE_NUMBER`) are dropped, and the key span read. */
export interface SectionOptions {
  dropDeletes: boolean;
  /** Leave `_SEQUENCE_NUMBER` out of the merged tables (a read returning no system columns decodes none). */
  dropSequence?: boolean;
  /** Only rows in this key range (see mergeBuckets). */
  span?: RowSpanFilter;
}

/** The physical Arrow schema of a merged section (without `_SEQUENCE_NUMBER` when `dropSequence`). */
function sectionSchema(table: Table, opts: Pick<SectionOptions, 'dropSequence'>): arrow.Schema {
  return keyFirstSchema({ schema: table.schema, dropSequence: opts.dropSequence });
}

/**
 * Merges the given live files per (partition, bucket); output tables keep system columns
 * (`_SEQUENCE_NUMBER` but with `dropSequence`), one per section, in (partition, bucket, key)
 * order. Each section (files of one bucket whose key ranges overlap) merges on its own: on the
 * merge pool's workers (merge-pool.ts) when the read has several sections large enough, else on
 * this thread (row groups then decode on the decode pool). With `span` (a key range), a section
 * merged here decodes only the rows of its files inside it; a closed range (a point) is read on
 * this thread, an open one may still go to the pool, whole.
 */
export async function mergeBuckets(
  table: Table,
  entries: ManifestEntry[],
  section: SectionOptions,
): Promise<arrow.Table[]> {
  const span = section.span;
  const sections: ManifestEntry[][] = [];
  for (const files of bucketGroups(entries)) {
    // An append table has no key: its bucket is one section, merged by sequence number alone
    // (the append-only engine keeps every row), which is its files in the order written.
    if (table.schema.primaryKeys.length === 0) {
      sections.push(files);
      continue;
    }
    const entryOf = new Map(files.map((f) => [f.file, f]));
    for (const section of intervalPartition(
      files.map((f) => f.file),
      table.compareKeys,
    ))
      sections.push(section.flat().map((meta) => entryOf.get(meta)!));
  }
  // One section alone merges here while the decode pool decodes its row groups: on a worker, its
  // decode and merge would run one after the other on one thread.
  const pool = mergePool();
  const onPool = (s: ManifestEntry[]) =>
    !span?.closed &&
    sections.length > 1 &&
    s.every((e) => e.file.schemaId === table.schema.id) &&
    pool.takes(s.reduce((n, e) => n + e.file.fileSize, 0));
  // Settled: a failed section leaves no other still reading its files when the read fails.
  return runLimitedSettled(
    sections.map((s) => () => (onPool(s) ? pool.merge(table, s, section) : mergeSection(table, s, section))),
    sectionsAtOnce(table),
  );
}

/**
 * How many sections of a read merge at once. Decoding on this thread (no decode threads) from a
 * folder, one after another: local reads have no latency to overlap, and each section then decodes
 * into the memory the one before gave back (PooledBatchMemory) where four at once would each map a
 * fresh working set (spread merge-read, a read after an idle pause: about -20 % CPU). Otherwise 4:
 * the store's requests (S3) and the decode or merge threads' work overlap.
 */
function sectionsAtOnce(table: Table): number {
  return decodePool().threads === 0 && table.store.uri.startsWith('file://') ? 1 : 4;
}

/**
 * Merges one section: files of one bucket (each its own sorted run) through the table's merge
 * engine, key-first for engines that take whole versions. Runs on the calling thread or, the same
 * code, on a merge pool worker (merge-worker.ts).
 */
export async function mergeSection(table: Table, section: ManifestEntry[], opts: SectionOptions): Promise<arrow.Table> {
  const { dropDeletes, dropSequence, span } = opts;
  const engine = mergeEngineFor(mergeConfigFromOptions(table.options, table.schema.primaryKeys));
  const mergeOpts = {
    schema: table.schema,
    keyColumns: table.schema.primaryKeys,
    engine,
    dropDeletes,
    keepKinds: !dropDeletes,
    dropSequence,
  };
  // Engines that take whole versions merge on keys first and decode only the winners' values.
  if (table.schema.primaryKeys.length > 0 && mergesKeyFirst(engine))
    return mergeSectionKeyFirst(table, section, mergeOpts, span);
  // Each file is its own run: files are key-sorted with one record per key, and keeping them
  // apart lets every run carry its own sequence base.
  const runs = await settleAll(
    section.map(async (e) => ({ table: await readEntry(table, e, span), sequenceBase: e.file.sequenceBase })),
  );
  const merged = mergeSortedRuns(runs, mergeOpts);
  return dropSequence ? merged.select(sectionSchema(table, opts).fields.map((f) => f.name)) : merged;
}

/**
 * Merges one section key-first (see key-first-merge.ts): each file is decoded for its keys,
 * sequence fields and system columns, and later for the value columns of the row groups that hold
 * winners. A file written with an older schema is read whole and evolved instead.
 */
async function mergeSectionKeyFirst(
  table: Table,
  entries: ManifestEntry[],
  opts: KeyFirstOptions,
  span?: RowSpanFilter,
): Promise<arrow.Table> {
  const decoders: DataFileDecoder[] = [];
  // The decoded row groups die with the merge (but for columns the result takes as they are):
  // their memory goes to the next section's decode.
  const memory = new PooledBatchMemory();
  try {
    const ranges = entries.map((e) => ({ min: e.file.minSequenceNumber, max: e.file.maxSequenceNumber }));
    const byRange = ordersByRunSequence(ranges, opts);
    const keyCols = keyFirstColumns(opts, byRange);
    // Settled, not all: on a failure every decoder opened is in `decoders` before the finally frees them.
    const runs = await settleAll(
      entries.map(async (entry, i): Promise<KeyFirstRun> => {
        const file = entry.file;
        if (file.schemaId !== table.schema.id) {
          const data = await readEntry(table, entry);
          return {
            keys: data,
            sequenceBase: file.sequenceBase,
            sequenceRange: ranges[i],
            rowGroupRows: [data.numRows],
            values: async (cols) => [data.select(cols)],
          };
        }
        // By range: the footer, then the chunks of the asked columns and row groups, never the file.
        const decoder = await openDataFileRanged(
          table.store,
          dataFileKey(table.path, entry.partition, entry.bucket, file.fileName),
          file.fileSize,
          dataFileCheck(table, file),
          span,
          memory,
        );
        decoders.push(decoder);
        const keys = concatTables(await decoder.readRowGroups(keyCols), physicalKeySchema(table, keyCols));
        return {
          keys,
          sequenceBase: file.sequenceBase,
          sequenceRange: ranges[i],
          rowGroupRows: decoder.rowGroupRows,
          values: (cols, groups) => decoder.readRowGroups(cols, groups),
        };
      }),
    );
    const merged = await mergeKeyFirst(runs, opts);
    // Only now: every decode of this section has finished, and the merge is the only survivor.
    memory.release(merged);
    return merged;
  } finally {
    await Promise.all(decoders.map((d) => d.free()));
  }
}

/** The physical Arrow schema of the table cut to `names`. */
function physicalKeySchema(table: Table, names: string[]): arrow.Schema {
  const physical = physicalArrowSchema(table.schema);
  return new arrow.Schema(names.map((n) => physical.fields.find((f) => f.name === n)!));
}

/** What a reader of one of the table's files checks it against (its manifest entry's footer CRC), and the table's name for errors. */
export function dataFileCheck(table: Table, file: DataFileMeta): DataFileCheck {
  return { footerCrc32: file.footerCrc32, table: table.name };
}

/**
 * Reads one data or changelog file of the table (by range: footer, then row group by row group);
 * with `span`, only its rows in that key range (a file of the current schema: the span names its columns).
 */
export async function readEntry(
  table: Table,
  entry: Pick<ManifestEntry, 'partition' | 'bucket' | 'file'>,
  span?: RowSpanFilter,
): Promise<arrow.Table> {
  // By range, one row group at a time: the file's bytes are never held whole.
  const check = dataFileCheck(table, entry.file);
  const data = await readDataFileRanged(
    table.store,
    dataFileKey(table.path, entry.partition, entry.bucket, entry.file.fileName),
    entry.file.fileSize,
    {
      check,
      ...(span !== undefined && entry.file.schemaId === table.schema.id ? { span } : {}),
    },
  );
  const fileSchemaId = entry.file.schemaId;
  if (fileSchemaId === table.schema.id) return data;
  // Reading a newer file through an older schema would silently drop its new columns.
  if (fileSchemaId > table.schema.id) throw await newerSchemaError(table, entry.file.fileName, fileSchemaId);
  const fileSchema = await table.schemaById(fileSchemaId);
  return sameLayout(fileSchema.fields, table.schema.fields)
    ? data
    : evolveTable(data, fileSchema.fields, table.schema.fields);
}

/**
 * The error for a file written under a schema newer than the reader's: SchemaChangedError (reopen
 * and read again), or, when that schema's file is missing (so reopening cannot help: the table
 * opens at the newest schema file left), the CorruptMetadataError naming it.
 */
async function newerSchemaError(table: Table, fileName: string, schemaId: number): Promise<Error> {
  await table.schemaById(schemaId);
  return new SchemaChangedError(
    `${table.name}: data file ${fileName} was written with schema ${schemaId}, newer than schema ${table.schema.id} this reader uses; reopen the table and read again`,
    table.schema.id,
    schemaId,
  );
}

function sameLayout(a: DataField[], b: DataField[]): boolean {
  return (
    a.length === b.length &&
    a.every((f, i) => f.id === b[i].id && f.name === b[i].name && formatType(f.type) === formatType(b[i].type))
  );
}

/** The requested columns, checked to exist in the table (undefined: all). */
export function checkColumns(table: Table, columns?: string[]): string[] | undefined {
  if (!columns || columns.length === 0) return undefined;
  const names = table.schema.fields.map((f) => f.name);
  for (const c of columns) {
    if (!names.includes(c))
      throw new InvalidArgumentError(`unknown column "${c}" in ${table.name}; its columns are ${names.join(', ')}`);
  }
  return columns;
}

/** The table cut to `columns` (default: every user column), with the system columns when `keepSystem`. */
export function project(t: arrow.Table, columns: string[] | undefined, keepSystem?: boolean): arrow.Table {
  const names = columns ?? t.schema.fields.map((f) => f.name).filter((n) => n !== SEQUENCE_COLUMN && n !== KIND_COLUMN);
  const wanted = keepSystem ? [...names, SEQUENCE_COLUMN, KIND_COLUMN] : names;
  return t.select(wanted);
}

/** A predicate over partition paths matching `spec`, checked against the partition keys. */
function partitionFilter(table: Table, spec?: Record<string, string>): ((p: string) => boolean) | undefined {
  if (!spec || Object.keys(spec).length === 0) return undefined;
  for (const k of Object.keys(spec)) {
    if (!table.schema.partitionKeys.includes(k)) {
      const keys = table.schema.partitionKeys;
      throw new InvalidArgumentError(
        `"${k}" is not a partition key of ${table.name}; ${keys.length ? `its partition keys are ${keys.join(', ')}` : 'the table is not partitioned'}`,
      );
    }
  }
  return (p) => {
    const values = parsePartitionPath(p);
    return Object.entries(spec).every(([k, v]) => values[k] === v);
  };
}

/** Whether a file's key range meets [min, max]. */
function overlapsRange(table: Table, e: ManifestEntry, r: { min?: JsonValue[]; max?: JsonValue[] }): boolean {
  if (r.min && table.compareKeys(e.file.maxKey, r.min) < 0) return false;
  if (r.max && table.compareKeys(e.file.minKey, r.max) > 0) return false;
  return true;
}

/** The rows of `t` whose keys lie in [min, max]. */
export function filterKeyRange(table: Table, t: arrow.Table, r: { min?: JsonValue[]; max?: JsonValue[] }): arrow.Table {
  const keys = tableToRows(t.select(table.schema.primaryKeys), table.keyFields);
  const keep: number[] = [];
  keys.forEach((row, i) => {
    const key = table.keyFields.map((f) => toJsonValue(f.type, row[f.name]));
    if (r.min && table.compareKeys(key, r.min) < 0) return;
    if (r.max && table.compareKeys(key, r.max) > 0) return;
    keep.push(i);
  });
  return keep.length === t.numRows ? t : takeRows(t, Uint32Array.from(keep));
}

/**
 * The files a read of `snapshot` merges: live files of the requested partitions, pruned by key
 * range and by the predicate's partition and key bounds; with what was skipped, for --explain.
 */
export async function planRead(
  table: Table,
  snapshot: Snapshot | undefined,
  opts: ReadOptions,
): Promise<{ entries: ManifestEntry[]; where?: ReadPruning; explain: ReadExplain; span?: RowSpanFilter }> {
  if (opts.limit !== undefined && (!Number.isInteger(opts.limit) || opts.limit < 0))
    throw new InvalidArgumentError(`limit must be an integer ≥ 0, got ${opts.limit}`);
  const where =
    opts.where === undefined ? undefined : new ReadPruning(table, toPredicate(opts.where, table.schema.fields));
  const explain: ReadExplain = {
    snapshotId: snapshot?.id,
    schemaId: table.schema.id,
    predicate: where?.predicate,
    liveFiles: 0,
    skippedByPartition: 0,
    skippedByBucket: 0,
    skippedByKeyRange: 0,
    skippedByValueStats: 0,
    filesRead: 0,
    mergedRows: 0,
    matchingRows: 0,
  };
  if (!snapshot) return { entries: [], where, explain };
  const inSpec = partitionFilter(table, opts.partition);
  // With --explain the skipped files are counted, so the manifests are read without the predicate.
  const entries = await readLiveFiles(table.store, table.path, snapshot, {
    partition: where && !opts.explain ? (p) => (inSpec?.(p) ?? true) && where.partitionMay(p) : inSpec,
  });
  explain.liveFiles = entries.length;
  let pruned = opts.keyRange ? entries.filter((e) => overlapsRange(table, e, opts.keyRange!)) : entries;
  if (where) {
    const inPartition = pruned.filter((e) => where.partitionMay(e.partition));
    explain.skippedByPartition = pruned.length - inPartition.length;
    const inBucket = inPartition.filter(where.bucketMay);
    explain.skippedByBucket = inPartition.length - inBucket.length;
    const inKeyRange = inBucket.filter(where.fileMay);
    explain.skippedByKeyRange = inBucket.length - inKeyRange.length;
    pruned = inKeyRange.filter(where.fileValuesMay);
    explain.skippedByValueStats = inKeyRange.length - pruned.length;
  }
  explain.filesRead = pruned.length;
  // Counted while the files are read (the readers add to the filter's counts).
  const span = keySpanFilter(table, where?.predicate, opts.keyRange);
  if (span !== undefined) explain.rowGroups = span.counts;
  return { entries: pruned, where, explain, span };
}

/** The chunks of a data file read through the table's schema (by field id) when the file was written with another. */
export async function* evolveChunks(
  table: Table,
  file: DataFileMeta,
  chunks: AsyncIterable<arrow.Table>,
): AsyncGenerator<arrow.Table> {
  if (file.schemaId === table.schema.id) {
    yield* chunks;
    return;
  }
  if (file.schemaId > table.schema.id) throw await newerSchemaError(table, file.fileName, file.schemaId);
  const fileSchema = await table.schemaById(file.schemaId);
  const same = sameLayout(fileSchema.fields, table.schema.fields);
  for await (const c of chunks) yield same ? c : evolveTable(c, fileSchema.fields, table.schema.fields);
}

/**
 * What a read of snapshot `snapshotId` that failed with `e` throws. Expiry deletes a snapshot's
 * files only after the snapshot file itself: a file missing under a snapshot that is gone means it
 * expired while we read it (SnapshotExpiredError with the range), not that the table is damaged.
 */
export async function readFailure(table: Table, snapshotId: number, e: unknown): Promise<unknown> {
  if (!(e instanceof ObjectNotFoundError) || (await table.snapshots.tryRead(snapshotId))) return e;
  const earliest = await table.snapshots.earliestId();
  return new SnapshotExpiredError(
    `snapshot ${snapshotId} of ${table.name} expired while it was being read; read a newer one (earliest now ${earliest ?? 'none'})`,
    { from: snapshotId, to: earliest ?? snapshotId + 1 },
  );
}
