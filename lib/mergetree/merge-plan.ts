/**
 * Lays out the versions to merge in merge order — key, then `sequence.field` columns, then
 * sequence number — as a VersionSet: from one unsorted table (a write buffer) by a key sort, or
 * from several sorted runs by a k-way heap merge that emits a (run, row) plan and never touches
 * a value column.
 */
import type * as arrow from 'apache-arrow';
import { CorruptMetadataError } from '../errors.js';
import { concatTables, singleBatch } from '../format/columns.js';
import { isRetract, KIND_COLUMN, SEQUENCE_COLUMN, type TableSchema } from '../schema/types.js';
import { columnChunk, compareAt, type ColumnChunk } from './column-access.js';
import { columnIndexes, compareKeysAt, keyIndex, sortByKey, type KeyIndex, type KeySort } from './key-order.js';
import { exactMerge, type ExactRun } from './exact-merge.js';
import { VersionSet } from './version-set.js';

/** What orders the versions of a key besides the key itself. */
export interface VersionOrder {
  keyColumns: string[];
  /** `sequence.field` columns, compared before the sequence number. */
  sequenceFields: string[];
  sequenceDescending: boolean;
}

/** One input of a merge: a single-batch table in the physical layout and each row's sequence number. */
export interface SequencedTable {
  table: arrow.Table;
  sequence: Float64Array;
  /** The table's key index over the merge's key columns, when already built (else built here). */
  keys?: KeyIndex;
}

/** Sorts a table whose rows are in arrival order into merge order (key, sequence fields, arrival). */
function sortVersions(table: arrow.Table, order: VersionOrder): KeySort {
  const seqChunks = sequenceChunks(table, order);
  const dir = order.sequenceDescending ? -1 : 1;
  const tieBreak = seqChunks.length
    ? (i: number, j: number) => {
        for (const c of seqChunks) {
          const r = compareAt(c, i, c, j);
          if (r !== 0) return dir * r;
        }
        return 0;
      }
    : undefined;
  return sortByKey(table, order.keyColumns, tieBreak);
}

/** The versions of one table whose rows are in arrival order (a write buffer's contents). */
function versionsOfTable(schema: TableSchema, input: SequencedTable, order: VersionOrder): VersionSet {
  const { table, sequence } = input;
  const sorted = sortVersions(table, order);
  const n = sorted.order.length;
  const kinds = kindValues(table);
  const kind = new Uint8Array(n),
    seq = new Float64Array(n);
  for (let k = 0; k < n; k++) {
    const r = sorted.order[k];
    kind[k] = kinds[r];
    seq[k] = sequence[r];
  }
  return new VersionSet(
    schema,
    [table],
    new Uint16Array(n),
    sorted.order,
    kind,
    seq,
    sorted.groupEnd,
    sorted.groupCount,
  );
}

/**
 * The versions of several single-batch tables whose rows are, one table after the other, in
 * arrival order (a write buffer's pieces). Only the key and `sequence.field` columns are copied
 * into one table to sort; value columns stay where they are, so sorting a buffer costs no copy of
 * its values.
 */
export function versionsOfTables(schema: TableSchema, inputs: SequencedTable[], order: VersionOrder): VersionSet {
  if (inputs.length === 1) return versionsOfTable(schema, inputs[0], order);
  const columns = columnIndexes(inputs[0].table, [...new Set([...order.keyColumns, ...order.sequenceFields])]);
  const projections = inputs.map((i) => i.table.selectAt(columns));
  const sorted = sortVersions(singleBatch(concatTables(projections, projections[0].schema)), order);
  const n = sorted.order.length;
  const tableOf = new Uint16Array(n);
  const starts = new Uint32Array(inputs.length);
  let at = 0;
  inputs.forEach((input, t) => {
    starts[t] = at;
    tableOf.fill(t, at, at + input.table.numRows);
    at += input.table.numRows;
  });
  const kinds = inputs.map((i) => kindValues(i.table));
  const source = new Uint16Array(n),
    row = new Uint32Array(n),
    kind = new Uint8Array(n),
    seq = new Float64Array(n);
  for (let k = 0; k < n; k++) {
    const g = sorted.order[k];
    const t = tableOf[g];
    const r = g - starts[t];
    source[k] = t;
    row[k] = r;
    kind[k] = kinds[t][r];
    seq[k] = inputs[t].sequence[r];
  }
  return new VersionSet(
    schema,
    inputs.map((i) => i.table),
    source,
    row,
    kind,
    seq,
    sorted.groupEnd,
    sorted.groupCount,
  );
}

/** The versions of runs that are each sorted in merge order, merged by a k-way heap. */
export function versionsOfRuns(schema: TableSchema, runs: SequencedTable[], order: VersionOrder): VersionSet {
  const k = runs.length;
  if (k > 0xffff) throw new CorruptMetadataError(`cannot merge ${k} sorted runs at once; compact first`);
  const keys = runs.map((r) => r.keys ?? keyIndex(r.table, order.keyColumns));
  const kinds = runs.map((r) => kindValues(r.table));
  const allExact = keys.every((x) => x.exact);
  if (allExact && order.sequenceFields.length === 0) return exactVersions(schema, runs, keys, kinds);
  const seqs = runs.map((r) => r.sequence);
  const his = keys.map((x) => x.hi),
    los = keys.map((x) => x.lo);
  const compare = runRowOrder(runs, keys, order);
  const heap = new RunHeap(runs, compare);
  const total = heap.total;
  const source = new Uint16Array(total),
    row = new Uint32Array(total);
  const kind = new Uint8Array(total),
    seq = new Float64Array(total);
  const groupEnd = new Uint32Array(total);
  let groups = 0;
  for (let out = 0; out < total; out++) {
    const r = heap.top();
    const i = heap.pos[r];
    if (out > 0) {
      const pr = source[out - 1],
        pi = row[out - 1];
      const same =
        his[pr][pi] === his[r][i] &&
        los[pr][pi] === los[r][i] &&
        (allExact || compareKeysAt(keys[pr], pi, keys[r], i) === 0);
      if (!same) groupEnd[groups++] = out;
    }
    source[out] = r;
    row[out] = i;
    kind[out] = kinds[r][i];
    seq[out] = seqs[r][i];
    heap.pos[r] = i + 1;
    if (heap.pos[r] === heap.end[r]) heap.dropTop();
    else if (compare(r, i, r, i + 1) >= 0) {
      // Every invariant of the merge rests on each run being sorted: fail rather than mis-merge.
      throw new CorruptMetadataError(
        `sorted run ${r} is out of order at row ${i + 1}: rows must be sorted by key and sequence`,
      );
    }
    if (heap.size > 0) heap.siftDown(0);
  }
  if (total > 0) groupEnd[groups++] = total;
  return new VersionSet(
    schema,
    runs.map((r) => r.table),
    source,
    row,
    kind,
    seq,
    groupEnd.slice(0, groups),
    groups,
  );
}

/** Row i of run a against row j of run b in merge order: key, sequence fields, sequence number, then run (the earlier first). */
type RunRowOrder = (a: number, i: number, b: number, j: number) => number;

function runRowOrder(runs: SequencedTable[], keys: KeyIndex[], order: VersionOrder): RunRowOrder {
  const seqs = runs.map((r) => r.sequence);
  const seqCols = runs.map((r) => sequenceChunks(r.table, order));
  const dir = order.sequenceDescending ? -1 : 1;
  const hasSeqFields = order.sequenceFields.length > 0;
  return (a, i, b, j) => {
    const t = compareKeysAt(keys[a], i, keys[b], j);
    if (t !== 0) return t;
    if (hasSeqFields) {
      const ca = seqCols[a],
        cb = seqCols[b];
      for (let f = 0; f < ca.length; f++) {
        const c = compareAt(ca[f], i, cb[f], j);
        if (c !== 0) return dir * c;
      }
    }
    const sa = seqs[a][i],
      sb = seqs[b][j];
    if (sa !== sb) return sa < sb ? -1 : 1;
    return a - b;
  };
}

/** A min-heap of the non-empty runs, ordered by each run's current row (`pos`) under `compare`. */
class RunHeap {
  readonly pos: Uint32Array;
  readonly end: Uint32Array;
  private readonly heap: Int32Array;
  size = 0;
  total = 0;

  constructor(
    runs: SequencedTable[],
    private readonly compare: RunRowOrder,
  ) {
    const k = runs.length;
    this.pos = new Uint32Array(k);
    this.end = new Uint32Array(k);
    this.heap = new Int32Array(k);
    for (let r = 0; r < k; r++) {
      this.end[r] = runs[r].table.numRows;
      this.total += this.end[r];
      if (this.end[r] > 0) this.heap[this.size++] = r;
    }
    for (let at = (this.size >> 1) - 1; at >= 0; at--) this.siftDown(at);
  }

  /** The run whose current row comes first. */
  top(): number {
    return this.heap[0];
  }

  /** Removes the top run (it is exhausted); the caller sifts slot 0 down. */
  dropTop(): void {
    this.heap[0] = this.heap[--this.size];
  }

  siftDown(at: number): void {
    const { heap, pos, size } = this;
    const top = heap[at];
    for (;;) {
      let child = 2 * at + 1;
      if (child >= size) break;
      if (child + 1 < size && this.compare(heap[child + 1], pos[heap[child + 1]], heap[child], pos[heap[child]]) < 0)
        child++;
      if (!(this.compare(heap[child], pos[heap[child]], top, pos[top]) < 0)) break;
      heap[at] = heap[child];
      at = child;
    }
    heap[at] = top;
  }
}

/**
 * The common case, keys that fit their 8-byte prefix and no sequence.field: the order is
 * (hi, lo, sequence), so the runs' words are laid end to end and the heap compares plain
 * typed-array elements by global row number, with no per-run indirection.
 */
function exactVersions(schema: TableSchema, runs: SequencedTable[], keys: KeyIndex[], kinds: Int8Array[]): VersionSet {
  const m = exactMerge(exactRuns(runs, keys, kinds), false);
  return new VersionSet(
    schema,
    runs.map((x) => x.table),
    m.source,
    m.row,
    m.kind,
    m.seq,
    m.groupEnd.slice(0, m.groups),
    m.groups,
  );
}

/** The newest version of each key of several runs, in key order (see newestOfRuns). */
export interface NewestVersions {
  /** Run and row of each key's newest version. */
  source: Uint16Array;
  row: Uint32Array;
  kind: Uint8Array;
  sequence: Float64Array;
  count: number;
}

/**
 * The last version in merge order of each key (what deduplicate keeps) straight from the k-way
 * merge, without laying out every version: the merge of exactVersions, writing one entry per key
 * instead of one per version. Null unless every key fits its 8-byte prefix and no
 * `sequence.field` orders versions (then build the VersionSet: versionsOfRuns).
 */
export function newestOfRuns(runs: SequencedTable[], order: VersionOrder): NewestVersions | null {
  if (runs.length > 0xffff)
    throw new CorruptMetadataError(`cannot merge ${runs.length} sorted runs at once; compact first`);
  if (order.sequenceFields.length > 0) return null;
  const keys = runs.map((r) => r.keys ?? keyIndex(r.table, order.keyColumns));
  if (!keys.every((x) => x.exact)) return null;
  const kinds = runs.map((r) => kindValues(r.table));
  const paired = newestByPairs(runs, keys, kinds);
  if (paired !== null) return paired;
  const m = exactMerge(exactRuns(runs, keys, kinds), true);
  return { source: m.source, row: m.row, kind: m.kind, sequence: m.seq, count: m.groups };
}

/**
 * What the deduplicate engine keeps of several runs (one record per key each), taken straight from
 * the merge: each key's newest version, without those whose newest is a retraction when
 * `dropRetracts`. Null when another engine merges, `ignore-delete` looks past retractions, or the
 * keys do not allow it (newestOfRuns): then lay out every version (versionsOfRuns).
 */
export function dedupWinners(
  runs: SequencedTable[],
  order: VersionOrder,
  engine: { name: string; config: { ignoreDelete: boolean } },
  dropRetracts: boolean,
): NewestVersions | null {
  if (engine.name !== 'deduplicate' || engine.config.ignoreDelete) return null;
  const newest = newestOfRuns(runs, order);
  if (newest === null) return null;
  let k = newest.count;
  if (dropRetracts) {
    // Keys whose newest version is a retraction are absent.
    k = 0;
    for (let i = 0; i < newest.count; i++) {
      if (isRetract(newest.kind[i])) continue;
      newest.source[k] = newest.source[i];
      newest.row[k] = newest.row[i];
      newest.kind[k] = newest.kind[i];
      newest.sequence[k++] = newest.sequence[i];
    }
  }
  return {
    source: newest.source.subarray(0, k),
    row: newest.row.subarray(0, k),
    kind: newest.kind.subarray(0, k),
    sequence: newest.sequence.subarray(0, k),
    count: k,
  };
}

/**
 * newestOfRuns when every run holds one version per key: the runs are folded into a result one
 * after another by a two-pointer merge, the version with the higher (sequence, run) taking a key
 * (the last in merge order, as the heap merge keeps). A run whose keys the result already holds
 * (the common upsert: the newest run rewrites old keys) costs one pass and no copies; only a run
 * bringing new keys rebuilds the result. Against the heap merge of interleaved runs (a sift per
 * version), a comparison or two per version. Null when a run repeats a key, or when a run that
 * is not the last brings new keys (interleaved runs): the heap merge takes those; a run out of
 * key order fails as the heap merge fails.
 */
function newestByPairs(runs: SequencedTable[], keys: KeyIndex[], kinds: Int8Array[]): NewestVersions | null {
  const lastSeq = (r: number) => runs[r].sequence[keys[r].count - 1];
  // The largest run first (then the newest): the runs after it most often only replace versions in place.
  const order = runs
    .map((_, r) => r)
    .filter((r) => keys[r].count > 0)
    .sort((a, b) => keys[b].count - keys[a].count || lastSeq(b) - lastSeq(a) || b - a);
  if (order.length === 0)
    return {
      source: new Uint16Array(0),
      row: new Uint32Array(0),
      kind: new Uint8Array(0),
      sequence: new Float64Array(0),
      count: 0,
    };
  const first = order[0];
  const n = keys[first].count;
  const at = strictlyRising(keys[first].hi, keys[first].lo, n);
  if (at === 0) return null;
  if (at > 0)
    throw new CorruptMetadataError(
      `sorted run ${first} is out of order at row ${at}: rows must be sorted by key and sequence`,
    );
  let acc: Folded = {
    H: keys[first].hi,
    L: keys[first].lo,
    S: runs[first].sequence.slice(),
    src: new Uint16Array(n).fill(first),
    row: new Uint32Array(n),
    kind: new Uint8Array(n),
    n,
  };
  for (let i = 0; i < n; i++) acc.row[i] = i;
  acc.kind.set(kinds[first]);
  for (let o = 1; o < order.length; o++) {
    const r = order[o];
    const added = foldInPlace(acc, r, keys[r].hi, keys[r].lo, runs[r].sequence, kinds[r], keys[r].count);
    if (added === 0) continue;
    if (added < 0) {
      if (added === -1) return null;
      throw new CorruptMetadataError(
        `sorted run ${r} is out of order at row ${-added - 2}: rows must be sorted by key and sequence`,
      );
    }
    // Interleaved runs (several still to come, new keys in each): the heap merge writes each
    // version once, where folding copies the growing result per run (2x the heap's CPU, 10 runs).
    if (o < order.length - 1) return null;
    acc = foldInterleaved(acc, r, keys[r].hi, keys[r].lo, runs[r].sequence, kinds[r], keys[r].count, added);
  }
  return { source: acc.src, row: acc.row, kind: acc.kind, sequence: acc.S, count: acc.n };
}

/** newestByPairs's result so far: per key in order, its words, the winner's sequence, run, row and kind. */
interface Folded {
  H: Uint32Array;
  L: Uint32Array;
  S: Float64Array;
  src: Uint16Array;
  row: Uint32Array;
  kind: Uint8Array;
  n: number;
}

/** -1 when the words rise strictly over [0, n); 0 when two rows share a key; else the first row below its predecessor. */
function strictlyRising(H: Uint32Array, L: Uint32Array, n: number): number {
  for (let i = 1; i < n; i++) {
    const ph = H[i - 1],
      h = H[i];
    if (ph < h) continue;
    if (ph > h) return i;
    const pl = L[i - 1],
      l = L[i];
    if (pl === l) return 0;
    if (pl > l) return i;
  }
  return -1;
}

/**
 * Run `r` folded into `acc` where it holds the key: a version with a higher (sequence, run) takes
 * the key in place. Returns the run's keys `acc` lacks; -1 when the run repeats a key; -(row + 2)
 * for a row out of key order.
 */
function foldInPlace(
  acc: Folded,
  r: number,
  rH: Uint32Array,
  rL: Uint32Array,
  rS: Float64Array,
  rK: Int8Array,
  m: number,
): number {
  const H = acc.H,
    L = acc.L,
    S = acc.S,
    src = acc.src,
    row = acc.row,
    kind = acc.kind,
    n = acc.n;
  let added = 0;
  let i = 0;
  let ph = 0,
    pl = 0;
  for (let j = 0; j < m; j++) {
    const h = rH[j],
      l = rL[j];
    if (j > 0 && (ph > h || (ph === h && pl >= l))) return ph === h && pl === l ? -1 : -(j + 2);
    ph = h;
    pl = l;
    while (i < n && (H[i] < h || (H[i] === h && L[i] < l))) i++;
    if (i < n && H[i] === h && L[i] === l) {
      const s = rS[j];
      if (s > S[i] || (s === S[i] && r > src[i])) {
        S[i] = s;
        src[i] = r;
        row[i] = j;
        kind[i] = rK[j];
      }
      i++;
    } else added++;
  }
  return added;
}

/** `acc` with the `added` keys of run `r` it lacks interleaved (after foldInPlace took the rest). */
function foldInterleaved(
  acc: Folded,
  r: number,
  rH: Uint32Array,
  rL: Uint32Array,
  rS: Float64Array,
  rK: Int8Array,
  m: number,
  added: number,
): Folded {
  const H = acc.H,
    L = acc.L,
    n = acc.n;
  const size = n + added;
  const next: Folded = {
    H: new Uint32Array(size),
    L: new Uint32Array(size),
    S: new Float64Array(size),
    src: new Uint16Array(size),
    row: new Uint32Array(size),
    kind: new Uint8Array(size),
    n: size,
  };
  let out = 0;
  let i = 0;
  for (let j = 0; j < m; j++) {
    const h = rH[j],
      l = rL[j];
    while (i < n && (H[i] < h || (H[i] === h && L[i] < l))) copyFolded(next, out++, acc, i++);
    // A key `acc` holds: foldInPlace already kept its newer version.
    if (i < n && H[i] === h && L[i] === l) {
      copyFolded(next, out++, acc, i++);
      continue;
    }
    next.H[out] = h;
    next.L[out] = l;
    next.S[out] = rS[j];
    next.src[out] = r;
    next.row[out] = j;
    next.kind[out++] = rK[j];
  }
  while (i < n) copyFolded(next, out++, acc, i++);
  return next;
}

function copyFolded(to: Folded, at: number, from: Folded, i: number): void {
  to.H[at] = from.H[i];
  to.L[at] = from.L[i];
  to.S[at] = from.S[i];
  to.src[at] = from.src[i];
  to.row[at] = from.row[i];
  to.kind[at] = from.kind[i];
}

function exactRuns(runs: SequencedTable[], keys: KeyIndex[], kinds: Int8Array[]): ExactRun[] {
  return runs.map((r, i) => ({ keys: keys[i], sequence: r.sequence, kinds: kinds[i] }));
}

function sequenceChunks(table: arrow.Table, order: VersionOrder): ColumnChunk[] {
  return columnIndexes(table, order.sequenceFields).map((c) => columnChunk(table, c));
}

/** The `_VALUE_KIND` bytes of a physical-layout table. */
export function kindValues(table: arrow.Table): Int8Array {
  return columnChunk(table, columnIndexes(table, [KIND_COLUMN])[0]).num as Int8Array;
}

/**
 * Each row's `_SEQUENCE_NUMBER` plus `base`, as a double (exact below 2^53), of a single-batch
 * physical-layout table; written into `into` (at least as long as the table) when given.
 */
export function storedSequence(table: arrow.Table, base = 0, into?: Float64Array): Float64Array {
  const n = table.numRows;
  const out = into === undefined ? new Float64Array(n) : into.subarray(0, n);
  if (n === 0) return out;
  const words = columnChunk(
    table,
    table.schema.fields.findIndex((f) => f.name === SEQUENCE_COLUMN),
  ).words!;
  for (let i = 0; i < n; i++) out[i] = base + words[2 * i + 1] * 4294967296 + (words[2 * i] >>> 0);
  return out;
}
