/**
 * `changelog-producer = lookup`: when a compaction takes level-0 files up, every key they hold
 * is looked up in the bucket's levels ≥ 1 for its before image; the after image is that before
 * image merged with the level-0 records. Level-0 files are exactly the data no changelog has
 * covered yet (this producer forces all of them up after every write), so the changelog of
 * successive compactions, replayed in order, is the table's history.
 *
 * varve departs from Paimon here in one way: the compaction output stays an ordinary merge of its
 * inputs (Paimon writes the looked-up value into it and then needs lookup-aware reads); the
 * before image is used for the changelog only, so batch reads merge every level as usual.
 */
import type * as arrow from 'apache-arrow';
import { concatTables, emptyTable, singleBatch, tableToRows } from '../../format/columns.js';
import { physicalArrowSchema } from '../../format/arrow-schema.js';
import type { DataFileMeta } from '../../manifest/types.js';
import type { JsonValue } from '../../schema/value-codec.js';
import { toJsonValue } from '../../schema/values.js';
import type { DataField, TableSchema } from '../../schema/types.js';
import { compareKeysAt, keyIndex, type KeyIndex } from '../key-order.js';
import type { MergeFunction } from '../merge-function.js';
import { mergeSortedRuns, type RunInput } from '../sort-merge-reader.js';
import type { KeyComparator } from '../sorted-run.js';
import { mergeRunStreams } from '../stream-merge.js';
import { diffChangelog, rowsWithKeys } from './diff.js';

export interface LookupChangelogOptions {
  schema: TableSchema;
  engine: MergeFunction;
  rowDeduplicate: boolean;
  /** Orders manifest keys: with it, a higher file is read only once the level-0 keys reach its range, and skipped when they pass it unread. */
  compareKeys?: KeyComparator;
}

/** A data file and its rows a row group at a time. */
export interface LookupRun {
  file: DataFileMeta;
  chunks: AsyncIterable<arrow.Table>;
}

/**
 * The level ≥ 1 files that may hold a key of `level0` (their key ranges overlap the level-0
 * files' overall range); only these need reading for the before images.
 */
export function lookupCandidates(
  level0: DataFileMeta[],
  higher: DataFileMeta[],
  compareKeys: KeyComparator,
): DataFileMeta[] {
  if (level0.length === 0) return [];
  let min = level0[0].minKey;
  let max = level0[0].maxKey;
  for (const f of level0) {
    if (compareKeys(f.minKey, min) < 0) min = f.minKey;
    if (compareKeys(f.maxKey, max) > 0) max = f.maxKey;
  }
  return higher.filter((f) => f.level > 0 && compareKeys(f.maxKey, min) >= 0 && compareKeys(f.minKey, max) <= 0);
}

/**
 * The changelog of taking `level0` up: for each of its keys, before = the merge of the key's
 * records in `higher` (every level ≥ 1 file that may hold it), after = before merged with the
 * level-0 records; +I, -U/+U or -D by `diffChangelog`.
 *
 * Bounded memory: the level-0 files are merged a row group per file at a time, and each higher
 * file is probed by a cursor that walks its row groups in key order alongside, keeping only the
 * rows whose keys the current level-0 piece holds (a streamed sorted semi-join). Memory is one
 * row group per open file plus the piece, whatever the size of the higher levels.
 */
export async function lookupChangelog(
  level0: LookupRun[],
  higher: LookupRun[],
  opts: LookupChangelogOptions,
): Promise<arrow.Table> {
  const physical = physicalArrowSchema(opts.schema);
  const parts: arrow.Table[] = [];
  for await (const log of lookupChangelogPieces(level0, higher, opts)) parts.push(log);
  return parts.length === 0 ? emptyTable(physical) : concatTables(parts, physical);
}

/**
 * The changelog of `lookupChangelog` a piece at a time, in key order, so that it can stream into
 * changelog files as it is found rather than be held until the end: its size is the size of the
 * level-0 data, which may be far larger than the memory budget.
 */
export async function* lookupChangelogPieces(
  level0: LookupRun[],
  higher: LookupRun[],
  opts: LookupChangelogOptions,
): AsyncGenerator<arrow.Table> {
  if (level0.length === 0) return;
  const keys = opts.schema.primaryKeys;
  const keyFields = keys.map((k) => opts.schema.fields.find((f) => f.name === k)!);
  const mergeOpts = { schema: opts.schema, keyColumns: keys, engine: opts.engine, dropDeletes: false, keepKinds: true };
  const merge = (runs: RunInput[]) => mergeSortedRuns(runs, mergeOpts);
  // first-row keeps the first value: a key seen before never changes, so it never logs an update.
  const rowDeduplicate = opts.rowDeduplicate || opts.engine.name === 'first-row';
  const cursors = higher.map((h) => new ProbeCursor(h, keys));
  try {
    for await (const piece of mergeRunStreams(
      level0.map((r) => ({ chunks: r.chunks, sequenceBase: r.file.sequenceBase })),
      mergeOpts,
    )) {
      const fresh = singleBatch(piece);
      const freshKeys = keyIndex(fresh, keys);
      const last = fresh.numRows - 1;
      const lo = opts.compareKeys ? keyAt(fresh, 0, keyFields) : null;
      const hi = opts.compareKeys ? keyAt(fresh, last, keyFields) : null;
      const before: RunInput[] = [];
      for (const c of cursors) {
        if (c.done) continue;
        if (opts.compareKeys && !c.started) {
          // Not reached yet, or passed without a key in it: no read.
          if (opts.compareKeys(c.file.minKey, hi!) > 0) continue;
          if (opts.compareKeys(c.file.maxKey, lo!) < 0) {
            await c.close();
            continue;
          }
        }
        const rows = await c.through(freshKeys, last);
        if (rows !== null) before.push({ table: rows, sequenceBase: c.file.sequenceBase });
      }
      const beforeImage = merge(before);
      // Both inputs now carry absolute sequence numbers (merge output has base 0).
      const after = merge([
        { table: beforeImage, sequenceBase: 0 },
        { table: fresh, sequenceBase: 0 },
      ]);
      const log = diffChangelog(beforeImage, after, { schema: opts.schema, rowDeduplicate });
      if (log.numRows > 0) yield log;
    }
  } finally {
    await Promise.all(cursors.map((c) => c.close()));
  }
}

/** The manifest form of the key at `row` (to compare with a file's min/max key). */
function keyAt(t: arrow.Table, row: number, keyFields: DataField[]): JsonValue[] {
  const r = tableToRows(t.slice(row, row + 1), keyFields)[0];
  return keyFields.map((k) => toJsonValue(k.type, r[k.name]));
}

/** Walks one key-sorted file forward, a row group at a time, handing out the rows of probed keys. */
class ProbeCursor {
  started = false;
  done = false;
  private readonly it: AsyncIterator<arrow.Table>;
  private chunk: arrow.Table | null = null;
  private keys: KeyIndex | null = null;
  private start = 0;

  constructor(
    readonly run: LookupRun,
    private readonly keyColumns: string[],
  ) {
    this.it = run.chunks[Symbol.asyncIterator]();
  }

  get file(): DataFileMeta {
    return this.run.file;
  }

  /**
   * The file's rows whose key is among `probe`'s keys (null: none), reading forward through every row whose
   * key is at most `probe`'s row `last`; rows after it stay for the next call (probes come in key
   * order). Each row group is cut down to the probed keys as it is read.
   */
  async through(probe: KeyIndex, last: number): Promise<arrow.Table | null> {
    this.started = true;
    const found: arrow.Table[] = [];
    for (;;) {
      if (this.chunk === null || this.start >= this.chunk.numRows) {
        const next = await this.it.next();
        if (next.done) {
          this.done = true;
          this.chunk = null;
          this.keys = null;
          break;
        }
        this.chunk = singleBatch(next.value);
        this.keys = keyIndex(this.chunk, this.keyColumns);
        this.start = 0;
        continue;
      }
      // The first row past the probe's last key.
      let lo = this.start,
        hi = this.chunk.numRows;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (compareKeysAt(this.keys!, mid, probe, last) <= 0) lo = mid + 1;
        else hi = mid;
      }
      if (lo > this.start) {
        const rows = rowsWithKeys(this.chunk.slice(this.start, lo), probe, this.keyColumns);
        if (rows.numRows > 0) found.push(rows);
      }
      this.start = lo;
      if (lo < this.chunk.numRows) break;
    }
    if (found.length === 0) return null;
    return found.length === 1 ? found[0] : concatTables(found, found[0].schema);
  }

  async close(): Promise<void> {
    if (this.done) return;
    this.done = true;
    this.chunk = null;
    this.keys = null;
    await this.it.return?.();
  }
}
