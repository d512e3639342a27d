/**
 * The merge of one compaction section within a memory budget. Each input run is read a chunk (a
 * row group) at a time and merged by the k-way merge of stream-merge.ts, so the working set is
 * one chunk per run plus the merged piece. When that exceeds `compaction.memory-budget` (many
 * runs, wide rows), runs are first sort-merged in groups into sorted runs on local disk — every
 * version kept, nothing folded, as Paimon's external merge sort spills — until the rest fits;
 * the final pass then folds each key's versions through the merge engine exactly once, so the
 * result is the one an unbounded merge gives.
 */
import type * as arrow from 'apache-arrow';
import { RegionRing, tableFromColumns } from '../format/column-layout.js';
import { gatherRows, singleBatch } from '../format/columns.js';
import { DEFAULT_ROW_GROUP_SIZE } from '../format/data-file.js';
import type { TableSchema } from '../schema/types.js';
import { sequenceColumn } from './arrow-build.js';
import type { MergeFunction } from './merge-function.js';
import { storedSequence, versionsOfRuns, type VersionOrder } from './merge-plan.js';
import { mergeSortedRuns } from './sort-merge-reader.js';
import { SPILL_BATCH_ROWS, SpillDirectory } from './spill.js';
import { compareKeysAt, keyIndex, sliceKeys, type KeyIndex } from './key-order.js';
import { alignRunStreams, type AlignedPiece, type RunStream } from './stream-merge.js';
import { approximateBytes } from './write-buffer.js';

/**
 * Rows of one merge step at most (over all runs): an aligned interval is cut into key intervals
 * of about this size, so the merge's own arrays and its output stay small beside the input chunks.
 */
const MERGE_STEP_ROWS = 65_536;

/**
 * Each merge step is merged, observed and written out (or spilled) before the next chunk is
 * taken, so the chunks' key indexes are built in reused memory, as the chunks are decoded into
 * (a fresh pair of word arrays per chunk was 16 MB of issue 32's full compaction, 2M rows in).
 */
const REUSED_KEYS = { reuseKeys: true };

/** One sorted run of a section: a data file, or a run spilled by an earlier pass. */
export interface SectionRun {
  /** The level of its file; a spilled run: the highest level of its files (never mixed with max-level files). */
  level: number;
  sequenceBase: number;
  /** Several versions of a key (a spilled run), not one record per key. */
  repeatedKeys: boolean;
  chunks: AsyncIterable<arrow.Table>;
  /** Rows per chunk (at most), for the working-set estimate. */
  chunkRows: number;
  /** Encoded bytes the reader holds besides the decoded chunk (a row group's compressed bytes). */
  heldBytes: number;
}

/** The rows of one key interval of the section: each run's piece, and their merge. */
export interface SectionPiece {
  level: number;
  table: arrow.Table;
  sequenceBase: number;
  repeatedKeys: boolean;
}

export interface SectionMergeOptions {
  schema: TableSchema;
  engine: MergeFunction;
  dropDeletes: boolean;
  /** Bytes the section's working set may take before runs are spilled (`compaction.memory-budget`). */
  memoryBudget: number;
  /** Max-level files are never spilled together with others (the full-compaction changelog tells them apart). */
  maxLevel: number;
  /** Folder for spilled runs (default: the OS temp directory, Lambda's /tmp). */
  spillRoot?: string;
  /** Rows of one merge step (default MERGE_STEP_ROWS); tests set it small. */
  stepRows?: number;
  /** Told of every spill pass: runs in, runs out. */
  onSpill?(runsIn: number, runsOut: number): void;
  /**
   * Build each step's merged table in memory reused two steps later (RegionRing), for a caller
   * that is done with every yield before it asks for the one after next.
   */
  reuseOutput?: boolean;
}

/** A data file as a run, read chunk by chunk; `fileSize`/`rowCount` size its estimate. */
export function fileRun(
  file: { level: number; sequenceBase: number; rowCount: number; fileSize: number },
  chunks: AsyncIterable<arrow.Table>,
): SectionRun {
  // Costed by the row group, although it arrives a read batch at a time: its decoder's wasm memory
  // grows with the row group, and costing by the batch (10 runs merged unspilled) measured +456 MB
  // over the floor at 10M rows against +316 MB spilled (docs/BENCHMARKS.md §11).
  const chunkRows = Math.max(1, Math.min(file.rowCount, DEFAULT_ROW_GROUP_SIZE));
  return {
    level: file.level,
    sequenceBase: file.sequenceBase,
    repeatedKeys: false,
    chunks,
    chunkRows,
    heldBytes: file.rowCount > 0 ? (file.fileSize * chunkRows) / file.rowCount : file.fileSize,
  };
}

/** Merges the runs (in merge order: newest first) piece by piece, spilling first when they do not fit the budget. */
export async function* mergeSection(
  runs: SectionRun[],
  opts: SectionMergeOptions,
): AsyncGenerator<{ pieces: SectionPiece[]; merged: arrow.Table }> {
  const spills = new SpillDirectory(opts.spillRoot);
  try {
    if (runs.length > 2) runs = await fitBudget(runs, opts, spills);
    const repeatedKeys = runs.some((r) => r.repeatedKeys);
    const mergeOpts = {
      schema: opts.schema,
      keyColumns: opts.schema.primaryKeys,
      engine: opts.engine,
      dropDeletes: opts.dropDeletes,
      keepKinds: true,
      repeatedKeys,
    };
    const regions = opts.reuseOutput ? new RegionRing() : null;
    for await (const aligned of alignRunStreams(runs.map(asStream), opts.schema.primaryKeys, REUSED_KEYS)) {
      for (const pieces of cutPieces(aligned, opts.schema.primaryKeys, opts.stepRows ?? MERGE_STEP_ROWS)) {
        const merged = mergeSortedRuns(pieces, regions === null ? mergeOpts : { ...mergeOpts, alloc: regions.turn() });
        yield {
          pieces: pieces.map((p) => ({
            table: p.table,
            sequenceBase: p.sequenceBase,
            level: runs[p.run].level,
            repeatedKeys: runs[p.run].repeatedKeys,
          })),
          merged,
        };
      }
    }
  } finally {
    spills.clear();
  }
}

function asStream(run: SectionRun): RunStream {
  // A data file holds one record per key: its chunks are cut at their ends, never joined to the next.
  return { chunks: run.chunks, sequenceBase: run.sequenceBase, oneRecordPerKey: !run.repeatedKeys };
}

/** Spill passes until the runs' working set fits the budget (or no pass can reduce it further). */
async function fitBudget(runs: SectionRun[], opts: SectionMergeOptions, spills: SpillDirectory): Promise<SectionRun[]> {
  // The decoded size of a row, from the first chunk of the first non-empty run (re-yielded to the merge).
  let rowBytes = 0;
  runs = runs.slice();
  for (let i = 0; i < runs.length && rowBytes === 0; i++) {
    const peeked = await peek(runs[i].chunks);
    runs[i] = { ...runs[i], chunks: peeked.chunks };
    if (peeked.first !== null && peeked.first.numRows > 0)
      rowBytes = approximateBytes(peeked.first) / peeked.first.numRows;
  }
  if (rowBytes === 0) return runs;
  // A chunk per run, and the merged piece of about the same size beside it.
  const cost = (r: SectionRun) => 2 * r.chunkRows * rowBytes + r.heldBytes;
  for (;;) {
    let total = 0;
    for (const r of runs) total += cost(r);
    if (total <= opts.memoryBudget || runs.length <= 2) return runs;
    // Consecutive runs in groups that each fit: merge order (and so every tie-break) is kept.
    const groups: SectionRun[][] = [];
    let group: SectionRun[] = [];
    let groupCost = 0;
    const top = (r: SectionRun) => r.level === opts.maxLevel;
    for (const r of runs) {
      const apart = group.length > 0 && top(group[0]) !== top(r);
      if (group.length > 0 && (apart || (group.length >= 2 && groupCost + cost(r) > opts.memoryBudget))) {
        groups.push(group);
        group = [];
        groupCost = 0;
      }
      group.push(r);
      groupCost += cost(r);
    }
    groups.push(group);
    if (groups.every((g) => g.length === 1)) return runs;
    const next: SectionRun[] = [];
    for (const g of groups) next.push(g.length === 1 ? g[0] : await spillGroup(g, opts, spills));
    opts.onSpill?.(runs.length, next.length);
    runs = next;
  }
}

/**
 * Sort-merges runs into one run on disk: every version in merge order (key, sequence fields,
 * sequence number, run), with absolute sequence numbers, so the run has base 0.
 */
async function spillGroup(group: SectionRun[], opts: SectionMergeOptions, spills: SpillDirectory): Promise<SectionRun> {
  const order: VersionOrder = {
    keyColumns: opts.schema.primaryKeys,
    sequenceFields: opts.engine.config.sequenceFields,
    sequenceDescending: opts.engine.config.sequenceDescending,
  };
  const out = spills.openRun();
  let n: number;
  try {
    for await (const aligned of alignRunStreams(group.map(asStream), opts.schema.primaryKeys, REUSED_KEYS)) {
      for (const pieces of cutPieces(aligned, opts.schema.primaryKeys, opts.stepRows ?? MERGE_STEP_ROWS)) {
        const inputs = pieces.map((p) => {
          const table = singleBatch(p.table);
          return { table, sequence: storedSequence(table, p.sequenceBase), keys: p.keys };
        });
        const versions = versionsOfRuns(opts.schema, inputs, order);
        const rows = gatherRows(versions.sources, versions.source, versions.row);
        const children = rows.batches[0].data.children.slice();
        children[children.length - 2] = sequenceColumn(versions.sequence, versions.size);
        out.append(tableFromColumns(rows.schema, children, versions.size));
      }
    }
    n = out.end();
  } catch (e) {
    out.abandon();
    throw e;
  }
  return {
    level: Math.max(...group.map((r) => r.level)),
    sequenceBase: 0,
    repeatedKeys: true,
    chunks: spills.chunks(n),
    chunkRows: SPILL_BATCH_ROWS,
    heldBytes: 0,
  };
}

/** The first chunk of a stream, and the stream with that chunk still first. */
async function peek(
  chunks: AsyncIterable<arrow.Table>,
): Promise<{ first: arrow.Table | null; chunks: AsyncIterable<arrow.Table> }> {
  const it = chunks[Symbol.asyncIterator]();
  const head = await it.next();
  const first = head.done ? null : head.value;
  async function* rest(): AsyncGenerator<arrow.Table> {
    try {
      if (first !== null) yield first;
      for (;;) {
        const r = await it.next();
        if (r.done) return;
        yield r.value;
      }
    } finally {
      await it.return?.();
    }
  }
  return { first, chunks: rest() };
}

/**
 * Aligned pieces (per run, the rows of one key interval) cut into consecutive key intervals of
 * at most max(`maxRows`, runs) rows in all, or one key's rows (a key is never cut apart), so each
 * yield merges on its own.
 */
export function* cutPieces(pieces: AlignedPiece[], keyColumns: string[], maxRows: number): Generator<AlignedPiece[]> {
  let total = 0;
  for (const p of pieces) total += p.table.numRows;
  // No rows: no step (a step always holds a row).
  if (total === 0) return;
  if (total <= maxRows) {
    yield pieces;
    return;
  }
  const parts = pieces.map((p) => ({ piece: p, keys: p.keys ?? keyIndex(p.table, keyColumns), start: 0 }));
  const rowsLeft = (x: (typeof parts)[number]) => x.piece.table.numRows - x.start;
  for (;;) {
    const live = parts.filter((x) => rowsLeft(x) > 0);
    if (live.length === 0) return;
    let left = 0;
    for (const x of live) left += rowsLeft(x);
    let cuts: number[];
    if (left <= maxRows) {
      cuts = live.map((x) => x.piece.table.numRows);
    } else {
      // The pivot: each run's key `step` rows on, the smallest of them; every run has at most
      // `step` rows below it, so a step holds at most max(maxRows, runs) rows, or one key.
      const step = Math.max(1, Math.floor(maxRows / live.length));
      let pivot = live[0];
      let pivotAt = -1;
      for (const x of live) {
        const at = Math.min(x.start + step, x.piece.table.numRows - 1);
        if (pivotAt < 0 || compareKeysAt(x.keys, at, pivot.keys, pivotAt) < 0) {
          pivot = x;
          pivotAt = at;
        }
      }
      cuts = live.map((x) => boundAt(x.keys, x.start, x.piece.table.numRows, pivot.keys, pivotAt, false));
      // Every run starts at the pivot key (one key with many versions): take that key whole.
      if (cuts.every((c, i) => c === live[i].start))
        cuts = live.map((x) => boundAt(x.keys, x.start, x.piece.table.numRows, pivot.keys, pivotAt, true));
    }
    const out: AlignedPiece[] = [];
    live.forEach((x, i) => {
      if (cuts[i] > x.start)
        out.push({
          ...x.piece,
          table: x.piece.table.slice(x.start, cuts[i]),
          keys: sliceKeys(x.keys, x.start, cuts[i]),
        });
      x.start = cuts[i];
    });
    yield out;
  }
}

/** The first row in [from, to) whose key is not below (`after`: is above) row `at` of `pivot`. */
function boundAt(keys: KeyIndex, from: number, to: number, pivot: KeyIndex, at: number, after: boolean): number {
  let lo = from,
    hi = to;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const c = compareKeysAt(keys, mid, pivot, at);
    if (c < 0 || (after && c === 0)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
