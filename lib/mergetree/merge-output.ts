/**
 * Turns a merge result into an Arrow table in the physical layout: value columns gathered once
 * per column from the versions' sources (or built from computed values), then
 * `_SEQUENCE_NUMBER` and `_VALUE_KIND` from the result's arrays.
 */
import * as arrow from 'apache-arrow';
import { ownMemory, tableFromColumns, type Allocate } from '../format/column-layout.js';
import { gatherRowColumns, gatherRows, takeRows } from '../format/columns.js';
import { kindColumn, nullColumn, sequenceColumn, valuesColumn } from './arrow-build.js';
import type { ColumnOutput, MergeResult } from './merge-result.js';
import type { VersionSet } from './version-set.js';

/** How a merge result becomes a table. */
export interface MaterializeOptions {
  /** Write every row's kind as +I (a batch read's merged state) instead of the merged kinds. */
  allInsert: boolean;
}

/**
 * The table of a merge result, with the sources' physical schema; with `range`, of its rows
 * [from, to) only (a flush that encodes its result a piece at a time).
 */
export function materializeMerge(
  versions: VersionSet,
  result: MergeResult,
  opts: MaterializeOptions,
  range?: { from: number; to: number },
): arrow.Table {
  const { sources } = versions;
  const schema = sources[0].schema;
  const nf = versions.schema.fields.length;
  const from = range?.from ?? 0;
  const to = range?.to ?? result.count;
  const count = to - from;
  const children: arrow.Data[] =
    result.mode === 'take'
      ? takeColumns(versions, result.version.subarray(from, to), count, nf)
      : columnsOf(
          versions,
          result.columns.map((c) =>
            'take' in c ? { take: c.take.subarray(from, to) } : { values: c.values.slice(from, to) },
          ),
          count,
        );
  children.push(sequenceColumn(result.sequence.subarray(from, to), count));
  children.push(kindColumn(opts.allInsert ? new Uint8Array(count) : result.kind.subarray(from, to), count));
  return tableFromColumns(schema, children, count);
}

/**
 * The table of a deduplicate merge's winners (dedupWinners): row k is row `row[k]` of source
 * `source[k]`, with the winner's kind and sequence number; the sources' physical schema. The
 * columns it builds take their memory from `alloc`.
 */
export function materializeWinners(
  sources: arrow.Table[],
  winners: { source: Uint16Array; row: Uint32Array; kind: Uint8Array; sequence: Float64Array; count: number },
  opts: MaterializeOptions,
  alloc: Allocate = ownMemory,
): arrow.Table {
  const { source, row, count } = winners;
  const schema = sources[0].schema;
  const nf = schema.fields.length - 2;
  const children = winnerColumns(sources, source, row, count, nf, alloc);
  children.push(sequenceColumn(winners.sequence, count, alloc));
  children.push(kindColumn(opts.allInsert ? new Uint8Array(count) : winners.kind, count, alloc));
  return tableFromColumns(schema, children, count);
}

/** The value columns of the winners; consecutive rows of one source (the newest run rewrote every key) are its own columns. */
function winnerColumns(
  sources: arrow.Table[],
  source: Uint16Array,
  row: Uint32Array,
  count: number,
  nf: number,
  alloc: Allocate,
): arrow.Data[] {
  if (count > 0) {
    const s = source[0],
      first = row[0];
    let consecutive = first + count <= sources[s].numRows;
    for (let k = 1; k < count && consecutive; k++) consecutive = source[k] === s && row[k] === first + k;
    if (consecutive) {
      const own = sources[s].batches[0].data.children.slice(0, nf);
      return first === 0 && count === sources[s].numRows ? own : own.map((d) => d.slice(first, count));
    }
  }
  // Straight from the sources' batches: no projected table per source and step.
  return gatherRowColumns(sources, source, row, nf, alloc);
}

/**
 * Value columns of whole versions; when they are consecutive rows of one source, in order (a
 * buffer that arrived sorted, or all of a run), that source's own columns, not a copy.
 */
function takeColumns(versions: VersionSet, version: Uint32Array, count: number, nf: number): arrow.Data[] {
  const { sources, source, row } = versions;
  if (sources.length === 1 && count > 0) {
    const first = row[version[0]];
    let consecutive = first + count <= sources[0].numRows;
    for (let k = 0; k < count && consecutive; k++) consecutive = row[version[k]] === first + k;
    const own = sources[0].batches[0].data.children.slice(0, nf);
    if (consecutive) return first === 0 && count === sources[0].numRows ? own : own.map((d) => d.slice(first, count));
  }
  const indexes = Array.from({ length: nf }, (_, c) => c);
  const rows = new Uint32Array(count);
  for (let k = 0; k < count; k++) rows[k] = row[version[k]];
  // One source (a write buffer, a single run): a plain take, no per-row source lookups.
  if (sources.length === 1) return takeRows(sources[0].selectAt(indexes), rows).batches[0].data.children.slice();
  const src = new Uint16Array(count);
  for (let k = 0; k < count; k++) src[k] = source[version[k]];
  return gatherRowColumns(sources, src, rows, nf);
}

/**
 * Column-wise results: columns that take the same versions (the usual case: every column of a
 * partial update that saw no NULLs) share one plan and one gather; computed ones are built.
 */
function columnsOf(versions: VersionSet, columns: ColumnOutput[], count: number): arrow.Data[] {
  const out: arrow.Data[] = new Array(columns.length);
  const plans: { take: Int32Array; fingerprint: number; columns: number[] }[] = [];
  columns.forEach((col, c) => {
    if ('values' in col) {
      const field = versions.sources[0].schema.fields[c];
      out[c] = valuesColumn(field.type, field.name, col.values, count);
      return;
    }
    const fingerprint = fingerprintOf(col.take, count);
    const same = plans.find((p) => p.fingerprint === fingerprint && sameTake(p.take, col.take, count));
    if (same) same.columns.push(c);
    else plans.push({ take: col.take, fingerprint, columns: [c] });
  });
  for (const plan of plans) {
    const gathered = gatherTaken(versions, plan.take, plan.columns, count);
    plan.columns.forEach((c, k) => (out[c] = gathered[k]));
  }
  return out;
}

function fingerprintOf(take: Int32Array, count: number): number {
  let h = 0;
  for (let k = 0; k < count; k++) h = (Math.imul(h, 31) + take[k]) | 0;
  return h;
}

function sameTake(a: Int32Array, b: Int32Array, count: number): boolean {
  for (let k = 0; k < count; k++) if (a[k] !== b[k]) return false;
  return true;
}

/** Gathers `columns` for output rows that take versions `take[k]` (-1 = NULL). */
function gatherTaken(versions: VersionSet, take: Int32Array, columns: number[], count: number): arrow.Data[] {
  const { sources, source, row } = versions;
  const nullSource = sources.length;
  const src = new Uint16Array(count),
    rows = new Uint32Array(count);
  let needsNull = false;
  for (let k = 0; k < count; k++) {
    const v = take[k];
    if (v < 0) {
      src[k] = nullSource;
      needsNull = true;
    } else {
      src[k] = source[v];
      rows[k] = row[v];
    }
  }
  const projected = sources.map((t) => t.selectAt(columns));
  if (needsNull) {
    const fields = columns.map((c) => sources[0].schema.fields[c]);
    projected.push(
      tableFromColumns(
        new arrow.Schema(fields),
        fields.map((f) => nullColumn(f.type)),
        1,
      ),
    );
  }
  return gatherRows(projected, src, rows).batches[0].data.children.slice();
}
