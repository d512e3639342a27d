/**
 * A k-way merge of sorted runs that arrive in chunks (a data file's row groups, a spilled run's
 * batches), in bounded memory: it holds one chunk per run, merges every key that no later chunk
 * can still hold, and yields the merged rows in key order. Each run may hold several versions of a
 * key (spilled write-buffer runs do), so a key group is never cut between two outputs.
 */
import type * as arrow from 'apache-arrow';
import { concatTables, singleBatch } from '../format/columns.js';
import { compareKeysAt, keyIndex, sliceKeys, type KeyIndex, type KeyWords } from './key-order.js';
import { mergeSortedRuns, type MergeReadOptions, type RunInput } from './sort-merge-reader.js';

/** One sorted run, chunk by chunk (each chunk sorted, every chunk after the one before). */
export interface RunStream {
  chunks: AsyncIterable<arrow.Table>;
  sequenceBase: number;
  /**
   * The run holds one record per key (a data file), so a later chunk never repeats the last key
   * of the current one. When every run says so, the merge cuts up to and including the bound key
   * instead of holding it back (which cost a copy of every chunk, as the held-back row was joined
   * to the next).
   */
  oneRecordPerKey?: boolean;
}

/** A run's rows of one key interval, and which run (its index in the input) they came from. */
export interface AlignedPiece extends RunInput {
  run: number;
}

interface Cursor {
  run: number;
  it: AsyncIterator<arrow.Table>;
  keyColumns: string[];
  sequenceBase: number;
  /** The current chunk (single batch) and its keys; rows before `start` are merged already. */
  chunk: arrow.Table | null;
  keys: KeyIndex | null;
  start: number;
  /** No chunk after the current one. */
  last: boolean;
  /** With `reuseKeys`: the two word slabs the chunks' keys are built in, in turn. */
  words: KeyWords[] | null;
}

/**
 * Merges the runs as `mergeSortedRuns` would, yielding the result in key order in pieces: each
 * piece holds the keys below the smallest "last key of the current chunk" among runs that have
 * more chunks, so memory is one chunk per run plus one piece.
 */
export async function* mergeRunStreams(runs: RunStream[], opts: MergeReadOptions): AsyncGenerator<arrow.Table> {
  for await (const pieces of alignRunStreams(runs, opts.keyColumns)) {
    const merged = mergeSortedRuns(pieces, opts);
    if (merged.numRows > 0) yield merged;
  }
}

/** How alignRunStreams treats its pieces' key indexes. */
interface AlignOptions {
  /**
   * Build each run's chunk keys in two slabs reused in turn (a chunk's keys, and its pieces',
   * valid until the run's next chunk but one, as chunks decoded into reused memory are): for a
   * consumer that is done with each yield before it asks for the next (a compaction's merge).
   */
  reuseKeys?: boolean;
}

function emptyWords(): KeyWords {
  return { hi: new Uint32Array(0), lo: new Uint32Array(0) };
}

/** The cursor's next key slab, grown (replaced, 1/8 more) when `rows` do not fit. */
function keyWords(ring: KeyWords[], rows: number): KeyWords {
  const w = ring.shift()!;
  ring.push(w);
  if (w.hi.length < rows) {
    const size = rows + (rows >> 3);
    w.hi = new Uint32Array(size);
    w.lo = new Uint32Array(size);
  }
  return w;
}

/**
 * The runs cut into aligned pieces: each yield holds, per run, the rows of one key interval (no
 * key in two yields), intervals in key order. Merging each yield on its own is merging the runs.
 */
export async function* alignRunStreams(
  runs: RunStream[],
  keyColumns: string[],
  opts: AlignOptions = {},
): AsyncGenerator<AlignedPiece[]> {
  const cursors: Cursor[] = runs.map((r, run) => ({
    run,
    it: r.chunks[Symbol.asyncIterator](),
    keyColumns,
    sequenceBase: r.sequenceBase,
    chunk: null,
    keys: null,
    start: 0,
    last: false,
    words: opts.reuseKeys ? [emptyWords(), emptyWords()] : null,
  }));
  // Every later row of a run with one record per key is above its last key: the bound key itself is complete.
  const inclusive = runs.length > 0 && runs.every((r) => r.oneRecordPerKey === true);
  try {
    for (;;) {
      await Promise.all(cursors.map((c) => (remaining(c) === 0 && !c.last ? advance(c, false) : undefined)));
      const live = cursors.filter((c) => remaining(c) > 0);
      if (live.length === 0) return;
      // The bound: the smallest last key among runs that still have chunks to come. Every later
      // row of those runs is ≥ their last key, so keys strictly below the bound are complete.
      let bound: Cursor | null = null;
      for (const c of live) {
        if (c.last) continue;
        if (bound === null || compareKeysAt(c.keys!, c.chunk!.numRows - 1, bound.keys!, bound.chunk!.numRows - 1) < 0)
          bound = c;
      }
      const cuts = live.map((c) =>
        bound === null ? c.chunk!.numRows : cutAt(c, bound.keys!, bound.chunk!.numRows - 1, inclusive),
      );
      if (cuts.every((cut, i) => cut === live[i].start)) {
        // Every unmerged row sits at the bound key: widen the runs that end on it by one chunk.
        const b = bound!;
        await Promise.all(
          live.map((c) =>
            !c.last && compareKeysAt(c.keys!, c.chunk!.numRows - 1, b.keys!, b.chunk!.numRows - 1) === 0
              ? advance(c, true)
              : undefined,
          ),
        );
        continue;
      }
      const pieces: AlignedPiece[] = [];
      live.forEach((c, i) => {
        if (cuts[i] > c.start)
          pieces.push({
            table: c.chunk!.slice(c.start, cuts[i]),
            keys: sliceKeys(c.keys!, c.start, cuts[i]),
            sequenceBase: c.sequenceBase,
            run: c.run,
          });
        c.start = cuts[i];
      });
      yield pieces;
    }
  } finally {
    await Promise.all(cursors.map((c) => c.it.return?.()));
  }
}

function remaining(c: Cursor): number {
  return c.chunk === null ? 0 : c.chunk.numRows - c.start;
}

/** Loads the next non-empty chunk: replacing the current one, or appended to its unmerged rows. */
async function advance(c: Cursor, append: boolean): Promise<void> {
  for (;;) {
    const next = await c.it.next();
    if (next.done) {
      c.last = true;
      if (!append) {
        c.chunk = null;
        c.keys = null;
        c.start = 0;
      }
      return;
    }
    if (next.value.numRows === 0) continue;
    const rest = append && c.chunk !== null && c.start < c.chunk.numRows ? c.chunk.slice(c.start) : null;
    c.chunk = singleBatch(rest ? concatTables([rest, next.value], next.value.schema) : next.value);
    c.keys = keyIndex(c.chunk, c.keyColumns, c.words === null ? undefined : keyWords(c.words, c.chunk.numRows));
    c.start = 0;
    return;
  }
}

/** The first row at or after `c.start` whose key is not below (`inclusive`: is above) row `at` of `keys`. */
function cutAt(c: Cursor, keys: KeyIndex, at: number, inclusive: boolean): number {
  let lo = c.start,
    hi = c.chunk!.numRows;
  const limit = inclusive ? 0 : -1;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareKeysAt(c.keys!, mid, keys, at) <= limit) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
