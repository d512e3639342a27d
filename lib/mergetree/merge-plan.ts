/**
 * Lays out the versions to merge in merge order — key, then `sequence.field` columns, then
 * sequence number — as a VersionSet: from one unsorted table (a write buffer) by a key sort, or
 * from several sorted runs by a k-way heap merge that emits a (run, row) plan and never touches
 * a value column.
 */
import type * as arrow from 'apache-arrow';
import { CorruptMetadataError } from '../errors.js';
import { KIND_COLUMN, SEQUENCE_COLUMN, type TableSchema } from '../schema/types.js';
import { columnChunk, compareAt, type ColumnChunk } from './column-access.js';
import { columnIndexes, compareKeysAt, keyIndex, sortByKey, type KeyIndex, type KeySort } from './key-order.js';
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
}

/** Sorts a table whose rows are in arrival order into merge order (key, sequence fields, arrival). */
export function sortVersions(table: arrow.Table, order: VersionOrder): KeySort {
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
export function versionsOfTable(schema: TableSchema, input: SequencedTable, order: VersionOrder): VersionSet {
  const { table, sequence } = input;
  const sorted = sortVersions(table, order);
  const n = sorted.order.length;
  const kinds = kindValues(table);
  const kind = new Uint8Array(n), seq = new Float64Array(n);
  for (let k = 0; k < n; k++) {
    const r = sorted.order[k];
    kind[k] = kinds[r];
    seq[k] = sequence[r];
  }
  return new VersionSet(schema, [table], new Uint16Array(n), sorted.order, kind, seq, sorted.groupEnd, sorted.groupCount);
}

/** The versions of runs that are each sorted in merge order, merged by a k-way heap. */
export function versionsOfRuns(schema: TableSchema, runs: SequencedTable[], order: VersionOrder): VersionSet {
  const k = runs.length;
  if (k > 0xffff) throw new CorruptMetadataError(`cannot merge ${k} sorted runs at once; compact first`);
  const keys = runs.map((r) => keyIndex(r.table, order.keyColumns));
  const seqs = runs.map((r) => r.sequence);
  const seqCols = runs.map((r) => sequenceChunks(r.table, order));
  const kinds = runs.map((r) => kindValues(r.table));
  const allExact = keys.every((x) => x.exact);
  const dir = order.sequenceDescending ? -1 : 1;
  const hasSeqFields = order.sequenceFields.length > 0;

  if (allExact && !hasSeqFields) return exactVersions(schema, runs, keys, kinds);
  const his = keys.map((x) => x.hi), los = keys.map((x) => x.lo);
  const compare = (a: number, i: number, b: number, j: number): number => {
    const t = compareKeysAt(keys[a], i, keys[b], j);
    if (t !== 0) return t;
    if (hasSeqFields) {
      const ca = seqCols[a], cb = seqCols[b];
      for (let f = 0; f < ca.length; f++) {
        const c = compareAt(ca[f], i, cb[f], j);
        if (c !== 0) return dir * c;
      }
    }
    const sa = seqs[a][i], sb = seqs[b][j];
    if (sa !== sb) return sa < sb ? -1 : 1;
    return a - b;
  };

  let total = 0;
  const pos = new Uint32Array(k), end = new Uint32Array(k);
  const heap = new Int32Array(k);
  let size = 0;
  for (let r = 0; r < k; r++) {
    end[r] = runs[r].table.numRows;
    total += end[r];
    if (end[r] > 0) heap[size++] = r;
  }
  const less = (a: number, b: number) => compare(a, pos[a], b, pos[b]) < 0;
  const siftDown = (at: number) => {
    const top = heap[at];
    for (;;) {
      let child = 2 * at + 1;
      if (child >= size) break;
      if (child + 1 < size && less(heap[child + 1], heap[child])) child++;
      if (!less(heap[child], top)) break;
      heap[at] = heap[child];
      at = child;
    }
    heap[at] = top;
  };
  for (let at = (size >> 1) - 1; at >= 0; at--) siftDown(at);

  const source = new Uint16Array(total), row = new Uint32Array(total);
  const kind = new Uint8Array(total), seq = new Float64Array(total);
  const groupEnd = new Uint32Array(total);
  let groups = 0;
  for (let out = 0; out < total; out++) {
    const r = heap[0];
    const i = pos[r];
    if (out > 0) {
      const pr = source[out - 1], pi = row[out - 1];
      const same = his[pr][pi] === his[r][i] && los[pr][pi] === los[r][i] && (allExact || compareKeysAt(keys[pr], pi, keys[r], i) === 0);
      if (!same) groupEnd[groups++] = out;
    }
    source[out] = r;
    row[out] = i;
    kind[out] = kinds[r][i];
    seq[out] = seqs[r][i];
    pos[r] = i + 1;
    if (pos[r] === end[r]) heap[0] = heap[--size];
    else if (compare(r, i, r, i + 1) >= 0) {
      // Every invariant of the merge rests on each run being sorted: fail rather than mis-merge.
      throw new CorruptMetadataError(`sorted run ${r} is out of order at row ${i + 1}: rows must be sorted by key and sequence`);
    }
    if (size > 0) siftDown(0);
  }
  if (total > 0) groupEnd[groups++] = total;
  return new VersionSet(schema, runs.map((r) => r.table), source, row, kind, seq, groupEnd.slice(0, groups), groups);
}

/**
 * The common case, keys that fit their 8-byte prefix and no sequence.field: the order is
 * (hi, lo, sequence), so the runs' words are laid end to end and the heap compares plain
 * typed-array elements by global row number, with no per-run indirection.
 */
function exactVersions(schema: TableSchema, runs: SequencedTable[], keys: KeyIndex[], kinds: Int8Array[]): VersionSet {
  const k = runs.length;
  const starts = new Uint32Array(k + 1);
  for (let r = 0; r < k; r++) starts[r + 1] = starts[r] + keys[r].count;
  const total = starts[k];
  const H = new Uint32Array(total), L = new Uint32Array(total), S = new Float64Array(total), K = new Uint8Array(total);
  for (let r = 0; r < k; r++) {
    H.set(keys[r].hi, starts[r]);
    L.set(keys[r].lo, starts[r]);
    S.set(runs[r].sequence, starts[r]);
    K.set(kinds[r], starts[r]);
  }
  // Heap slots: the cursor (global row) of a run, its end, and the run number.
  const cur = new Uint32Array(k), lim = new Uint32Array(k), run = new Uint16Array(k);
  let size = 0;
  for (let r = 0; r < k; r++) {
    if (starts[r + 1] === starts[r]) continue;
    cur[size] = starts[r];
    lim[size] = starts[r + 1];
    run[size++] = r;
  }
  // Ties on (hi, lo, sequence) go to the lower global row, i.e. the earlier run: a total order.
  const less = (x: number, y: number) => (H[x] !== H[y] ? H[x] < H[y] : L[x] !== L[y] ? L[x] < L[y] : S[x] !== S[y] ? S[x] < S[y] : x < y);
  const siftDown = (at: number) => {
    const c0 = cur[at], l0 = lim[at], r0 = run[at];
    for (;;) {
      let child = 2 * at + 1;
      if (child >= size) break;
      if (child + 1 < size && less(cur[child + 1], cur[child])) child++;
      if (!less(cur[child], c0)) break;
      cur[at] = cur[child];
      lim[at] = lim[child];
      run[at] = run[child];
      at = child;
    }
    cur[at] = c0;
    lim[at] = l0;
    run[at] = r0;
  };
  for (let at = (size >> 1) - 1; at >= 0; at--) siftDown(at);

  const source = new Uint16Array(total), row = new Uint32Array(total);
  const kind = new Uint8Array(total), seq = new Float64Array(total);
  const groupEnd = new Uint32Array(total);
  let groups = 0;
  let prev = 0;
  for (let out = 0; out < total; out++) {
    const g = cur[0], r = run[0];
    if (out > 0 && (H[g] !== H[prev] || L[g] !== L[prev])) groupEnd[groups++] = out;
    prev = g;
    source[out] = r;
    row[out] = g - starts[r];
    kind[out] = K[g];
    seq[out] = S[g];
    if (g + 1 === lim[0]) {
      size--;
      cur[0] = cur[size];
      lim[0] = lim[size];
      run[0] = run[size];
    } else {
      if (!less(g, g + 1)) {
        // Every invariant of the merge rests on each run being sorted: fail rather than mis-merge.
        throw new CorruptMetadataError(`sorted run ${r} is out of order at row ${g + 1 - starts[r]}: rows must be sorted by key and sequence`);
      }
      cur[0] = g + 1;
    }
    if (size > 1) siftDown(0);
  }
  if (total > 0) groupEnd[groups++] = total;
  return new VersionSet(schema, runs.map((x) => x.table), source, row, kind, seq, groupEnd.slice(0, groups), groups);
}

function sequenceChunks(table: arrow.Table, order: VersionOrder): ColumnChunk[] {
  return columnIndexes(table, order.sequenceFields).map((c) => columnChunk(table, c));
}

/** The `_VALUE_KIND` bytes of a physical-layout table. */
export function kindValues(table: arrow.Table): Int8Array {
  return columnChunk(table, columnIndexes(table, [KIND_COLUMN])[0]).num as Int8Array;
}

/** Each row's `_SEQUENCE_NUMBER` plus `base`, as a double (exact below 2^53), of a single-batch physical-layout table. */
export function storedSequence(table: arrow.Table, base = 0): Float64Array {
  const n = table.numRows;
  const out = new Float64Array(n);
  if (n === 0) return out;
  const words = columnChunk(table, table.schema.fields.findIndex((f) => f.name === SEQUENCE_COLUMN)).words!;
  for (let i = 0; i < n; i++) out[i] = base + words[2 * i + 1] * 4294967296 + (words[2 * i] >>> 0);
  return out;
}
