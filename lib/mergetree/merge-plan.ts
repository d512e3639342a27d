/**
 * Lays out the versions to merge in merge order — key, then `sequence.field` columns, then
 * sequence number — as a VersionSet: from one unsorted table (a write buffer) by a key sort, or
 * from several sorted runs by a k-way heap merge that emits a (run, row) plan and never touches
 * a value column.
 */
import type * as arrow from 'apache-arrow';
import { CorruptMetadataError } from '../errors.js';
import { concatTables, singleBatch } from '../format/columns.js';
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
  const source = new Uint16Array(n), row = new Uint32Array(n), kind = new Uint8Array(n), seq = new Float64Array(n);
  for (let k = 0; k < n; k++) {
    const g = sorted.order[k];
    const t = tableOf[g];
    const r = g - starts[t];
    source[k] = t;
    row[k] = r;
    kind[k] = kinds[t][r];
    seq[k] = inputs[t].sequence[r];
  }
  return new VersionSet(schema, inputs.map((i) => i.table), source, row, kind, seq, sorted.groupEnd, sorted.groupCount);
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
  const m = exactMerge(runs, keys, kinds, false);
  return new VersionSet(schema, runs.map((x) => x.table), m.source, m.row, m.kind, m.seq, m.groupEnd.slice(0, m.groups), m.groups);
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
  if (runs.length > 0xffff) throw new CorruptMetadataError(`cannot merge ${runs.length} sorted runs at once; compact first`);
  if (order.sequenceFields.length > 0) return null;
  const keys = runs.map((r) => keyIndex(r.table, order.keyColumns));
  if (!keys.every((x) => x.exact)) return null;
  const m = exactMerge(runs, keys, runs.map((r) => kindValues(r.table)), true);
  return { source: m.source, row: m.row, kind: m.kind, sequence: m.seq, count: m.groups };
}

/**
 * The merge of exactVersions. `lastOnly`: source/row/kind/seq hold the last version of each key
 * group (`groups` entries) and groupEnd is empty; else every version, and groupEnd the groups' ends.
 */
function exactMerge(runs: SequencedTable[], keys: KeyIndex[], kinds: Int8Array[], lastOnly: boolean) {
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
  // Heap slots: the cursor (global row) of a run, its end, and the run number. The loop keeps its
  // state in locals and calls only top-level functions: no closure over mutable state in the
  // hot path.
  const cur = new Uint32Array(k), lim = new Uint32Array(k), run = new Uint16Array(k);
  let size = 0;
  for (let r = 0; r < k; r++) {
    if (starts[r + 1] === starts[r]) continue;
    cur[size] = starts[r];
    lim[size] = starts[r + 1];
    run[size++] = r;
  }
  for (let at = (size >> 1) - 1; at >= 0; at--) siftDownExact(H, L, S, cur, lim, run, size, at);

  const source = new Uint16Array(total), row = new Uint32Array(total);
  const kind = new Uint8Array(total), seq = new Float64Array(total);
  const groupEnd = new Uint32Array(lastOnly ? 0 : total);
  let groups = 0;
  let prev = 0, prevRun = 0;
  let out = 0;
  while (size > 0) {
    const r = run[0], end = lim[0], base = starts[r];
    // The runner-up: the smaller child of the root. The top run keeps the lead while its next row
    // is below it, so a stretch of one run costs one comparison per row and no heap moves.
    const secondSlot = size === 1 ? 0 : size === 2 || lessExact(H, L, S, cur[1], cur[2]) ? 1 : 2;
    const second = secondSlot === 0 ? -1 : cur[secondSlot];
    let g = cur[0];
    let exhausted = false;
    for (;;) {
      if (lastOnly) {
        if (out > 0 && (H[g] !== H[prev] || L[g] !== L[prev])) {
          // A new key: the previous row was the newest version of its key.
          source[groups] = prevRun;
          row[groups] = prev - starts[prevRun];
          kind[groups] = K[prev];
          seq[groups++] = S[prev];
        }
        prevRun = r;
      } else {
        if (out > 0 && (H[g] !== H[prev] || L[g] !== L[prev])) groupEnd[groups++] = out;
        source[out] = r;
        row[out] = g - base;
        kind[out] = K[g];
        seq[out] = S[g];
      }
      prev = g;
      out++;
      const next = g + 1;
      if (next === end) {
        exhausted = true;
        break;
      }
      if (!lessExact(H, L, S, g, next)) {
        // Every invariant of the merge rests on each run being sorted: fail rather than mis-merge.
        throw new CorruptMetadataError(`sorted run ${r} is out of order at row ${next - base}: rows must be sorted by key and sequence`);
      }
      g = next;
      if (second >= 0 && !lessExact(H, L, S, g, second)) break;
    }
    if (exhausted) {
      size--;
      cur[0] = cur[size];
      lim[0] = lim[size];
      run[0] = run[size];
      if (size > 1) siftDownExact(H, L, S, cur, lim, run, size, 0);
    } else if (second < 0) {
      cur[0] = g;
    } else {
      // The runner-up is below row g: it takes the root, and g sinks from the runner-up's slot.
      cur[0] = second;
      lim[0] = lim[secondSlot];
      run[0] = run[secondSlot];
      cur[secondSlot] = g;
      lim[secondSlot] = end;
      run[secondSlot] = r;
      siftDownExact(H, L, S, cur, lim, run, size, secondSlot);
    }
  }
  if (total > 0) {
    if (!lastOnly) groupEnd[groups++] = total;
    else {
      source[groups] = prevRun;
      row[groups] = prev - starts[prevRun];
      kind[groups] = K[prev];
      seq[groups++] = S[prev];
    }
  }
  return { source, row, kind, seq, groupEnd, groups };
}

/** Merge order of global rows x and y: key words, sequence number, then row (the earlier run first). */
function lessExact(H: Uint32Array, L: Uint32Array, S: Float64Array, x: number, y: number): boolean {
  const hx = H[x], hy = H[y];
  if (hx !== hy) return hx < hy;
  const lx = L[x], ly = L[y];
  if (lx !== ly) return lx < ly;
  const sx = S[x], sy = S[y];
  if (sx !== sy) return sx < sy;
  return x < y;
}

/** Moves heap slot `at` down to its place (slots: cursor, end, run). */
function siftDownExact(H: Uint32Array, L: Uint32Array, S: Float64Array, cur: Uint32Array, lim: Uint32Array, run: Uint16Array, size: number, at: number): void {
  const c0 = cur[at], l0 = lim[at], r0 = run[at];
  for (;;) {
    let child = 2 * at + 1;
    if (child >= size) break;
    if (child + 1 < size && lessExact(H, L, S, cur[child + 1], cur[child])) child++;
    if (!lessExact(H, L, S, cur[child], c0)) break;
    cur[at] = cur[child];
    lim[at] = lim[child];
    run[at] = run[child];
    at = child;
  }
  cur[at] = c0;
  lim[at] = l0;
  run[at] = r0;
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
