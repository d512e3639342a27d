/**
 * The merged read with late materialization, for engines that keep one whole version per key
 * (deduplicate, first-row): decode each run's keys, sequence fields, `_SEQUENCE_NUMBER` and
 * `_VALUE_KIND` first, merge those into a (run, row) plan of winners, then decode the value
 * columns of only the row groups that hold a winner and gather them once. Versions that lose
 * never have their values decoded: in an upsert-heavy table most row groups of older runs
 * decode keys only.
 */
import * as arrow from 'apache-arrow';
import { InvalidArgumentError, SchemaMismatchError } from '../errors.js';
import { physicalArrowSchema } from '../format/arrow-schema.js';
import { concatColumn } from '../format/column-concat.js';
import { tableFromColumns } from '../format/column-layout.js';
import { emptyTable, gatherRows, singleBatch } from '../format/columns.js';
import { KIND_COLUMN, SEQUENCE_COLUMN } from '../schema/types.js';
import { kindColumn, sequenceColumn } from './arrow-build.js';
import type { MergeFunction } from './merge-function.js';
import { dedupWinners, storedSequence, versionsOfRuns, type SequencedTable } from './merge-plan.js';
import { singleRunVersions, type MergeReadOptions } from './sort-merge-reader.js';

/** One sorted run decoded key-first: the merge columns now, the value columns on demand. */
export interface KeyFirstRun {
  /**
   * At least the columns of `keyFirstColumns` (any order, one or more batches), one row per
   * stored record, in the run's order.
   */
  keys: arrow.Table;
  sequenceBase: number;
  /**
   * The run's absolute [min, max] sequence numbers (its file's manifest entry). When every run
   * has one and they do not overlap, `keys` may leave out `_SEQUENCE_NUMBER` (see
   * `ordersByRunSequence`): the merge orders versions of a key by run, and decodes the winners'
   * sequence numbers with their values.
   */
  sequenceRange?: { min: number; max: number };
  /** Rows of each row group, in order; their sum is `keys.numRows`. */
  rowGroupRows: number[];
  /** The named columns of the given row groups (ascending), one single-batch table per group. */
  values(columns: string[], rowGroups: number[]): Promise<arrow.Table[]>;
}

/** True when the engine decides from keys, sequence fields, sequence numbers and kinds alone, taking whole versions. */
export function mergesKeyFirst(engine: MergeFunction): boolean {
  return engine.name === 'deduplicate' || engine.name === 'first-row';
}

/**
 * The columns the first decode needs: key columns, the engine's sequence fields, then the system
 * columns (without `_SEQUENCE_NUMBER` when `bySequenceRange`: see ordersByRunSequence).
 */
export function keyFirstColumns(
  opts: Pick<MergeReadOptions, 'keyColumns' | 'engine'>,
  bySequenceRange = false,
): string[] {
  const cols = [...opts.keyColumns];
  for (const f of opts.engine.config.sequenceFields) if (!cols.includes(f)) cols.push(f);
  return bySequenceRange ? [...cols, KIND_COLUMN] : [...cols, SEQUENCE_COLUMN, KIND_COLUMN];
}

/**
 * True when the runs' absolute sequence ranges are pairwise disjoint and the engine orders by
 * sequence number alone (no `sequence.field`): then, between runs holding one record per key, the
 * versions of a key are in the order of their runs' ranges, and the merge needs no stored
 * sequence number to order them (level-0 files of separate commits, and compaction outputs, do
 * not overlap). The winners' sequence numbers are then decoded with their value columns.
 */
export function ordersByRunSequence(
  ranges: readonly { min: number; max: number }[],
  opts: Pick<MergeReadOptions, 'engine' | 'repeatedKeys'>,
): boolean {
  if (opts.repeatedKeys || opts.engine.config.sequenceFields.length > 0 || ranges.length < 2) return false;
  const sorted = [...ranges].sort((a, b) => a.min - b.min);
  for (let i = 1; i < sorted.length; i++) if (sorted[i].min <= sorted[i - 1].max) return false;
  return true;
}

/** Options of a key-first merge: those of any merged read, and whether the result keeps `_SEQUENCE_NUMBER`. */
export interface KeyFirstOptions extends MergeReadOptions {
  /**
   * Leave `_SEQUENCE_NUMBER` out of the result (a read that returns no system columns): when the
   * runs are ordered by sequence range, the winners' stored sequence numbers are then never decoded.
   */
  dropSequence?: boolean;
}

/**
 * Merges the runs as `mergeSortedRuns` would (same rows, same order, physical layout, without
 * `_SEQUENCE_NUMBER` when `dropSequence`), decoding value columns only for row groups that hold a
 * winning version.
 */
export async function mergeKeyFirst(runs: KeyFirstRun[], opts: KeyFirstOptions): Promise<arrow.Table> {
  if (!mergesKeyFirst(opts.engine)) {
    throw new InvalidArgumentError(
      `the ${opts.engine.name} merge engine reads value columns while merging; merge its runs with mergeSortedRuns`,
    );
  }
  const physical = keyFirstSchema(opts);
  // Without stored sequence numbers in the keys, a run's versions all sort at its range's start.
  const byRange = runs.some((r) => r.keys.schema.fields.every((f) => f.name !== SEQUENCE_COLUMN));
  if (
    byRange &&
    !(
      runs.every((r) => r.sequenceRange !== undefined) &&
      ordersByRunSequence(
        runs.map((r) => r.sequenceRange!),
        opts,
      )
    )
  ) {
    throw new InvalidArgumentError(
      'a key-first merge without _SEQUENCE_NUMBER needs runs whose sequence ranges do not overlap (see ordersByRunSequence)',
    );
  }
  const merged = keyFirstColumns(opts, byRange);
  const inputs = runs.map((r, k) => keyInput(r, k, merged, byRange)).filter((r) => r.table.numRows > 0);
  if (inputs.length === 0) return emptyTable(physical);
  const winners = pickWinners(inputs, opts);
  const { src, count } = winners;
  if (count === 0) return emptyTable(physical);
  const names = opts.schema.fields.map((f) => f.name);
  // By range, the winners' stored sequence numbers are decoded with their values, unless dropped.
  const columns = await winnerColumns(inputs, names, merged, byRange && !opts.dropSequence, winners);
  const children = names.map((n) => columns.get(n)!);
  if (!opts.dropSequence)
    children.push(
      byRange
        ? winnerSequence(
            columns.get(SEQUENCE_COLUMN)!,
            inputs.map((x) => x.run.sequenceBase),
            src,
            count,
          )
        : sequenceColumn(winners.sequence, count),
    );
  children.push(kindColumn(opts.dropDeletes && !opts.keepKinds ? new Uint8Array(count) : winners.kind, count));
  return tableFromColumns(physical, children, count);
}

/** The physical Arrow schema of a key-first merge's result (without `_SEQUENCE_NUMBER` when `dropSequence`). */
export function keyFirstSchema(opts: Pick<KeyFirstOptions, 'schema' | 'dropSequence'>): arrow.Schema {
  const physical = physicalArrowSchema(opts.schema);
  return opts.dropSequence ? new arrow.Schema(physical.fields.filter((f) => f.name !== SEQUENCE_COLUMN)) : physical;
}

/** Run k's merge columns as one batch, with each row's sequence number (by range: its run's range start). */
function keyInput(
  r: KeyFirstRun,
  k: number,
  merged: string[],
  byRange: boolean,
): SequencedTable & { run: KeyFirstRun } {
  const total = r.rowGroupRows.reduce((a, b) => a + b, 0);
  if (total !== r.keys.numRows) {
    throw new SchemaMismatchError(`sorted run ${k} has ${r.keys.numRows} rows but its row groups hold ${total}`);
  }
  const table = singleBatch(r.keys.select(merged));
  const sequence = byRange
    ? new Float64Array(table.numRows).fill(r.sequenceRange!.min)
    : storedSequence(table, r.sequenceBase);
  return { run: r, table, sequence };
}

/**
 * The winners' columns by name: those the merge read, gathered from the key tables; the value
 * columns decoded from the row groups the winners lie in. With `decodeSequence` (by range), the
 * winners' stored sequence numbers come with their values (relative to their run's base).
 */
async function winnerColumns(
  inputs: Array<SequencedTable & { run: KeyFirstRun }>,
  names: string[],
  merged: string[],
  decodeSequence: boolean,
  winners: { src: Uint16Array; row: Uint32Array; count: number },
): Promise<Map<string, arrow.Data>> {
  const { src, row, count } = winners;
  const fromKeys = names.filter((n) => merged.includes(n));
  const valueNames = names.filter((n) => !merged.includes(n));
  if (decodeSequence) valueNames.push(SEQUENCE_COLUMN);
  const columns = new Map<string, arrow.Data>();
  if (fromKeys.length > 0) {
    const gathered = gatherPlan(
      inputs.map((x) => x.table.select(fromKeys)),
      src,
      row,
      count,
    );
    fromKeys.forEach((n, i) => columns.set(n, gathered[i]));
  }
  if (valueNames.length > 0) {
    const gathered = await gatherValues(
      inputs.map((x) => x.run),
      valueNames,
      src,
      row,
      count,
    );
    valueNames.forEach((n, i) => columns.set(n, gathered[i]));
  }
  return columns;
}

/** Each winner's run and row (per run, rows rise with the output: runs are sorted by key), kind and sequence number. */
function pickWinners(
  inputs: SequencedTable[],
  opts: MergeReadOptions,
): { src: Uint16Array; row: Uint32Array; kind: Uint8Array; sequence: Float64Array; count: number } {
  const order = {
    keyColumns: opts.keyColumns,
    sequenceFields: opts.engine.config.sequenceFields,
    sequenceDescending: opts.engine.config.sequenceDescending,
  };
  const single = inputs.length === 1 && !opts.repeatedKeys;
  // Deduplicate keeps the newest version of each key: taken straight from the merge when the keys
  // allow (no array of every version; ignore-delete looks past retractions, so it takes the rest).
  if (!single) {
    const newest = dedupWinners(inputs, order, opts.engine, opts.dropDeletes);
    if (newest !== null)
      return { src: newest.source, row: newest.row, kind: newest.kind, sequence: newest.sequence, count: newest.count };
  }
  const versions = single ? singleRunVersions(opts.schema, inputs[0]) : versionsOfRuns(opts.schema, inputs, order);
  const result = opts.engine.merge(versions, { rawInput: opts.rawInput ?? false, dropRetracts: opts.dropDeletes });
  if (result.mode !== 'take')
    throw new InvalidArgumentError(
      `the ${opts.engine.name} merge engine computed values; merge its runs with mergeSortedRuns`,
    );
  const count = result.count;
  const src = new Uint16Array(count),
    row = new Uint32Array(count);
  for (let k = 0; k < count; k++) {
    const v = result.version[k];
    src[k] = versions.source[v];
    row[k] = versions.row[v];
  }
  return { src, row, kind: result.kind, sequence: result.sequence, count };
}

/**
 * The value columns of the winners: decodes, per run, only the row groups some winner lies in,
 * then gathers from those row-group tables (each its own gather source, no concatenation).
 */
async function gatherValues(
  runs: KeyFirstRun[],
  names: string[],
  src: Uint16Array,
  row: Uint32Array,
  count: number,
): Promise<arrow.Data[]> {
  // Every winner from one run, all its rows in order (the newest run rewrote every key): its
  // row groups' columns as they are, no plan per winner.
  const only = wholeRun(runs, src, row, count);
  if (only >= 0) {
    const run = runs[only];
    const groups = run.rowGroupRows.map((_, g) => g);
    const got = await run.values(names, groups);
    checkRowGroups(only, run, groups, got);
    return concatSources(got);
  }
  // Row group of each winner, and which groups each run needs.
  const starts = runs.map((r) => {
    const s = new Uint32Array(r.rowGroupRows.length + 1);
    r.rowGroupRows.forEach((n, g) => (s[g + 1] = s[g] + n));
    return s;
  });
  const needed = runs.map((r) => new Uint8Array(r.rowGroupRows.length));
  const group = new Uint32Array(count);
  const cursor = new Uint32Array(runs.length);
  for (let k = 0; k < count; k++) {
    const r = src[k],
      i = row[k],
      s = starts[r];
    let g = cursor[r];
    // Rows of one run come in rising order, so the cursor only moves forward (binary search if not).
    if (i < s[g]) g = upperBound(s, i) - 1;
    while (i >= s[g + 1]) g++;
    cursor[r] = g;
    group[k] = g;
    needed[r][g] = 1;
  }
  // Gather source of (run, group), in order.
  const tables: arrow.Table[] = [];
  const sourceOf = runs.map((r) => new Int32Array(r.rowGroupRows.length).fill(-1));
  const loaded = await Promise.all(
    runs.map((r, k) => {
      const groups: number[] = [];
      needed[k].forEach((on, g) => on && groups.push(g));
      return groups.length === 0
        ? Promise.resolve({ groups, tables: [] as arrow.Table[] })
        : r.values(names, groups).then((t) => ({ groups, tables: t }));
    }),
  );
  loaded.forEach(({ groups, tables: got }, k) => {
    checkRowGroups(k, runs[k], groups, got);
    groups.forEach((g, j) => {
      sourceOf[k][g] = tables.length;
      tables.push(got[j]);
    });
  });
  if (tables.length > 0xffff)
    throw new SchemaMismatchError(`a merge cannot gather from ${tables.length} row groups at once; compact first`);
  const gsrc = new Uint16Array(count),
    grow = new Uint32Array(count);
  for (let k = 0; k < count; k++) {
    const r = src[k],
      g = group[k];
    gsrc[k] = sourceOf[r][g];
    grow[k] = row[k] - starts[r][g];
  }
  return gatherPlan(tables, gsrc, grow, count);
}

/** The run whose rows, all of them in order, are the winners (src[k], row[k]); else -1. */
function wholeRun(runs: KeyFirstRun[], src: Uint16Array, row: Uint32Array, count: number): number {
  if (count === 0) return -1;
  const r = src[0];
  if (runs[r].keys.numRows !== count) return -1;
  for (let k = 0; k < count; k++) if (src[k] !== r || row[k] !== k) return -1;
  return r;
}

/** Checks that run `k` returned one table per asked row group, with the group's rows. */
function checkRowGroups(k: number, run: KeyFirstRun, groups: number[], got: arrow.Table[]): void {
  if (got.length !== groups.length)
    throw new SchemaMismatchError(`sorted run ${k} returned ${got.length} row groups for ${groups.length} asked`);
  groups.forEach((g, j) => {
    if (got[j].numRows !== run.rowGroupRows[g]) {
      throw new SchemaMismatchError(
        `sorted run ${k} row group ${g} has ${got[j].numRows} rows of values but ${run.rowGroupRows[g]} keys`,
      );
    }
  });
}

/** The absolute sequence numbers of the winners: each stored number plus its run's base. */
function winnerSequence(stored: arrow.Data, bases: number[], src: Uint16Array, count: number): arrow.Data {
  const words = new Int32Array(stored.values.buffer, stored.values.byteOffset + stored.offset * 8, count * 2);
  const sequence = new Float64Array(count);
  for (let k = 0; k < count; k++) sequence[k] = bases[src[k]] + words[2 * k + 1] * 4294967296 + (words[2 * k] >>> 0);
  return sequenceColumn(sequence, count);
}

/** First index whose start is above `x`. */
function upperBound(s: Uint32Array, x: number): number {
  let lo = 0,
    hi = s.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (s[mid] <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The columns of rows (src[k], row[k]). When they are exactly all rows of some sources, one source
 * after another (the newest run wins every key of its row groups: the common upsert), those
 * sources' columns concatenated (bulk copies), or a single such source's own columns, uncopied.
 */
function gatherPlan(tables: arrow.Table[], src: Uint16Array, row: Uint32Array, count: number): arrow.Data[] {
  const whole = wholeSources(tables, src, row, count);
  if (whole !== null) return concatSources(whole.map((t) => tables[t]));
  return gatherRows(tables, src, row).batches[0].data.children.slice();
}

/** The columns of the tables' rows one table after another: bulk copies, or a single table's own columns, uncopied. */
function concatSources(tables: arrow.Table[]): arrow.Data[] {
  const data = tables.map((t) => singleBatch(t).batches[0].data.children);
  if (tables.length === 1) return data[0].slice();
  return tables[0].schema.fields.map((f, c) =>
    concatColumn(
      f.type,
      f.name,
      data.map((d) => d[c]),
    ),
  );
}

/** The sources whose rows, each whole and in order, one source after another, are rows (src[k], row[k]); else null. */
function wholeSources(tables: arrow.Table[], src: Uint16Array, row: Uint32Array, count: number): number[] | null {
  const out: number[] = [];
  for (let k = 0; k < count; ) {
    const t = src[k],
      n = tables[t].numRows;
    if (k + n > count) return null;
    for (let i = 0; i < n; i++) if (src[k + i] !== t || row[k + i] !== i) return null;
    out.push(t);
    k += n;
  }
  return out;
}
