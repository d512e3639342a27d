/**
 * Merge-on-read: sorted runs (data files, each sorted by key with one record per key) are merged
 * by key with a k-way heap into a (run, row) plan; the merge engine folds each key's versions,
 * oldest first; every column is then gathered once. Output rows carry absolute sequence numbers
 * (the run's `sequenceBase` plus the stored number), so compaction output has base 0.
 */
import type * as arrow from 'apache-arrow';
import { SchemaMismatchError } from '../errors.js';
import { physicalArrowSchema } from '../format/arrow-schema.js';
import { emptyTable, singleBatch } from '../format/columns.js';
import type { Allocate } from '../format/column-layout.js';
import type { TableSchema } from '../schema/types.js';
import { columnChunk } from './column-access.js';
import type { MergeFunction } from './merge-function.js';
import { materializeMerge, materializeWinners } from './merge-output.js';
import { dedupWinners, storedSequence, versionsOfRuns, type SequencedTable, type VersionOrder } from './merge-plan.js';
import type { KeyIndex } from './key-order.js';
import { VersionSet } from './version-set.js';

/** One sorted run to merge: its rows and the base of its stored sequence numbers. */
export interface RunInput {
  table: arrow.Table;
  sequenceBase: number;
  /** The key index of `table` over the merge's key columns, when the caller built it already (a chunk's, sliced). */
  keys?: KeyIndex;
}

/** What a merge-read needs: the schema, the key, the engine and what to do with deletes. */
export interface MergeReadOptions {
  schema: TableSchema;
  keyColumns: string[];
  engine: MergeFunction;
  /** Drop keys whose merged record is -U/-D (batch reads, compaction into the highest level). */
  dropDeletes: boolean;
  /**
   * Keep the merged row kinds (+U stays +U; audit_log). When false and `dropDeletes` is set,
   * every output row is +I, the merged state; retractions kept by `dropDeletes = false` always
   * keep their kind.
   */
  keepKinds?: boolean;
  /** A run may hold several versions of a key (a spilled write-buffer run), not one record per key. */
  repeatedKeys?: boolean;
  /** The runs hold raw input records (a write buffer's spilled runs), which `count` aggregates count one by one. */
  rawInput?: boolean;
  /**
   * Where the columns a deduplicate merge builds take their memory (a compaction's reused step
   * memory, RegionRing: the caller is done with the result before the merge after next).
   */
  alloc?: Allocate;
}

/** Merges sorted runs into one table in the physical layout, sorted by key, one record per key. */
export function mergeSortedRuns(runs: RunInput[], opts: MergeReadOptions): arrow.Table {
  // The runs' sequence numbers live only during this call (the output copies the winners'): reused memory.
  const inputs = sequencedInputs(runs, opts, sequenceScratch(runs));
  if (inputs.length === 0) return emptyTable(physicalArrowSchema(opts.schema));
  // Deduplicate keeps each key's newest version: taken straight from the merge, no array of every version.
  const newest = inputs.length > 1 ? dedupWinners(inputs, versionOrder(opts), opts.engine, opts.dropDeletes) : null;
  if (newest !== null)
    return materializeWinners(
      inputs.map((x) => x.table),
      newest,
      { allInsert: opts.dropDeletes && !opts.keepKinds },
      opts.alloc,
    );
  return mergeVersions(versionsOf(inputs, opts), opts);
}

/**
 * The same merge, produced in key order as tables of about `batchRows` input versions each, so a
 * caller can write rolling files without holding the whole merged output at once.
 */
export function* mergeSortedRunsBatched(
  runs: RunInput[],
  opts: MergeReadOptions & { batchRows: number },
): Generator<arrow.Table> {
  const versions = planMerge(runs, opts);
  if (versions === null) return;
  const { groupEnd, groupCount } = versions;
  let from = 0;
  while (from < groupCount) {
    // Whole key groups only: a key's versions never straddle two batches.
    const limit = (from === 0 ? 0 : groupEnd[from - 1]) + Math.max(1, opts.batchRows);
    let to = from + 1;
    while (to < groupCount && groupEnd[to] <= limit) to++;
    const out = mergeVersions(versions.slice(from, to), opts);
    if (out.numRows > 0) yield out;
    from = to;
  }
}

/** The versions of all runs in merge order, or null when there are none. */
function planMerge(runs: RunInput[], opts: MergeReadOptions): VersionSet | null {
  const inputs = sequencedInputs(runs, opts);
  return inputs.length === 0 ? null : versionsOf(inputs, opts);
}

/**
 * The non-empty runs as single batches in the physical layout, with their absolute sequence
 * numbers (in `scratch`, one region per run, when it is given and large enough; else fresh).
 */
function sequencedInputs(runs: RunInput[], opts: MergeReadOptions, scratch?: Float64Array): SequencedTable[] {
  const physical = physicalArrowSchema(opts.schema);
  let at = 0;
  return runs
    .map((r, k) => {
      const table = checkLayout(singleBatch(r.table), physical, k);
      const n = table.numRows;
      const into = scratch !== undefined && at + n <= scratch.length ? scratch.subarray(at, (at += n)) : undefined;
      return { table, sequence: storedSequence(table, r.sequenceBase, into), keys: r.keys };
    })
    .filter((r) => r.table.numRows > 0);
}

/**
 * Merges of at most this many rows (a compaction's merge step is at most 65,536) take their runs'
 * sequence numbers in memory kept for the next merge (8 bytes a row: at most 2 MB) instead of a
 * fresh array per run: fresh ones were 16 MB of issue 32's full compaction (2M rows in), and every
 * ~24 MB of new ArrayBuffers costs a full garbage collection. A merge never awaits, so no two
 * merges of a thread share it at once.
 */
const REUSED_SEQUENCE_ROWS = 1 << 18;
let reusedSequence = new Float64Array(0);

/** The reused sequence memory when this merge's rows fit it (grown up to the cap), else undefined (fresh arrays). */
function sequenceScratch(runs: RunInput[]): Float64Array | undefined {
  let rows = 0;
  for (const r of runs) rows += r.table.numRows;
  if (rows > REUSED_SEQUENCE_ROWS) return undefined;
  if (reusedSequence.length < rows)
    reusedSequence = new Float64Array(Math.min(REUSED_SEQUENCE_ROWS, Math.max(rows, 2 * reusedSequence.length, 1024)));
  return reusedSequence;
}

function versionOrder(opts: MergeReadOptions): VersionOrder {
  return {
    keyColumns: opts.keyColumns,
    sequenceFields: opts.engine.config.sequenceFields,
    sequenceDescending: opts.engine.config.sequenceDescending,
  };
}

/** The versions of non-empty runs in merge order. */
function versionsOf(inputs: SequencedTable[], opts: MergeReadOptions): VersionSet {
  return inputs.length === 1 && !opts.repeatedKeys
    ? singleRunVersions(opts.schema, inputs[0])
    : versionsOfRuns(opts.schema, inputs, versionOrder(opts));
}

function mergeVersions(versions: VersionSet, opts: MergeReadOptions): arrow.Table {
  const result = opts.engine.merge(versions, { rawInput: opts.rawInput ?? false, dropRetracts: opts.dropDeletes });
  return materializeMerge(versions, result, { allInsert: opts.dropDeletes && !opts.keepKinds });
}

/** One run needs no merge: each row (one per key) is its own group. */
export function singleRunVersions(schema: TableSchema, run: SequencedTable): VersionSet {
  const n = run.table.numRows;
  const row = new Uint32Array(n);
  for (let i = 0; i < n; i++) row[i] = i;
  const kinds = columnChunk(run.table, run.table.numCols - 1).num!;
  const kind = new Uint8Array(n);
  for (let i = 0; i < n; i++) kind[i] = kinds[i];
  const groupEnd = new Uint32Array(n);
  for (let i = 0; i < n; i++) groupEnd[i] = i + 1;
  return new VersionSet(schema, [run.table], new Uint16Array(n), row, kind, run.sequence, groupEnd, n);
}

/** The run's columns must be the table's physical layout, in order (engines address columns by position). */
function checkLayout(table: arrow.Table, physical: arrow.Schema, k: number): arrow.Table {
  const names = table.schema.fields.map((f) => f.name);
  const expected = physical.fields.map((f) => f.name);
  if (names.length !== expected.length || names.some((n, i) => n !== expected[i])) {
    throw new SchemaMismatchError(
      `sorted run ${k} has columns (${names.join(', ')}) but the table's data files have (${expected.join(', ')})`,
    );
  }
  return table;
}
