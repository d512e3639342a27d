/**
 * Deletion-vector maintenance (issue 31 §1, DV-CONTRACT.md): at EVERY snapshot of a table with
 * `deletion-vectors.enabled`, its live rows are exactly "every row of every live data file, minus
 * the positions in that file's deletion vector". The commit loop calls `plan` on each attempt,
 * with the base snapshot of that attempt and the changes as they apply there (sequence numbers
 * assigned, an overwrite's replaced files included: lib/snapshot/commit-plan.ts), so files a
 * concurrent writer committed before this one are looked up too, whatever the action.
 *
 * Per (partition, bucket) that the commit adds files to: the keys of the added files (appends'
 * level-0 files, compaction outputs, overwrite and rescale files, files a rollback restores) are
 * looked up in the bucket's other live files (pruned by file key range; only the key,
 * `sequence.field`, `_SEQUENCE_NUMBER` and `_VALUE_KIND` columns are decoded), and the table's merge
 * engine decides, over every stored row of those keys, which one is live: exactly the row the
 * merged read returns. Every other row of those keys is deleted (older versions for deduplicate,
 * newer ones for first-row, and retractions). Rows of other keys keep their vectors. Vectors of
 * removed files go with them. A bucket whose vectors change gets one new Puffin file holding the
 * changed vectors; unchanged ones keep pointing at their earlier Puffin files.
 *
 * Memory: the added files' merge columns are held a piece at a time (forEachChunk: a commit larger
 * than a quarter of `compaction.memory-budget` is looked up in ascending key-range chunks), those
 * of a file its writer handed over come from the lookup's cache (deletion-lookup.ts).
 */
import type * as arrow from 'apache-arrow';
import { runLimited } from '../concurrency.js';
import { tableToRows, takeRows } from '../format/columns.js';
import type { RowSpanFilter } from '../format/row-group-reader.js';
import {
  dvFileIdentity,
  readDeletionIndex,
  refIdentity,
  writeBucketVectors,
  writeDeletionIndex,
  type DeletionVectorRef,
} from '../manifest/deletion-index.js';
import type { ManifestCache } from '../manifest/manifest-file.js';
import { foldLiveFiles } from '../manifest/scan.js';
import type { ManifestEntry, ManifestFileMeta } from '../manifest/types.js';
import { compareKeysAt, keyIndex, type KeyIndex } from '../mergetree/key-order.js';
import { mergeConfigFromOptions } from '../mergetree/merge-config.js';
import { mergeEngineFor, type MergeFunction } from '../mergetree/merge-function.js';
import { storedSequence, versionsOfRuns } from '../mergetree/merge-plan.js';
import { singleRunVersions } from '../mergetree/sort-merge-reader.js';
import type { DeletionVectorPlanner, PlannedChanges } from '../snapshot/commit-request.js';
import type { JsonValue } from '../schema/value-codec.js';
import { toJsonValue } from '../schema/values.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import { concatBytes } from '../store/object-store.js';
import {
  keepsDeletionVectors,
  keyRangeFilter,
  lookupColumns,
  lookupPieces,
  lookupVector,
  mergeColumnsOf,
  rememberVectors,
  type ColumnPieces,
} from './deletion-lookup.js';
import type { Table } from './table.js';

/** The share of `compaction.memory-budget` the added files' merge columns of a chunk may hold (all files together). */
const CHUNK_SHARE = 4;

/** Older files of a bucket looked up at once (each one's decoded columns are held until its matches are taken). */
const LOOKUP_FILES_AT_ONCE = 4;

/** The planner the commit loop runs for a table that keeps deletion vectors (undefined for others). */
export function deletionVectorPlanner(table: Table): DeletionVectorPlanner | undefined {
  return keepsDeletionVectors(table)
    ? { plan: (base, changes, previous, cache) => planDeletionVectors(table, base, changes, previous, cache) }
    : undefined;
}

/** One file's decoded merge columns: the rows of the looked-up keys and their positions in the file. */
interface Probed {
  entry: ManifestEntry;
  /** Key-first columns of the rows considered, in file (key) order. */
  table: arrow.Table;
  /** File position of each row of `table`. */
  positions: Uint32Array;
  /** Every row of the file was considered (an added file). */
  whole: boolean;
}

const bucketId = (e: { partition: string; bucket: number }) => JSON.stringify([e.partition, e.bucket]);

/**
 * The deletion-vector index of the snapshot `changes` make on `base` (see the file comment): the
 * base's index name when no vector changes, else a new index, its Puffin files written first.
 */
async function planDeletionVectors(
  table: Table,
  base: Snapshot | undefined,
  changes: PlannedChanges,
  previous: readonly ManifestFileMeta[],
  cache: ManifestCache,
): Promise<string> {
  const baseRefs = await readDeletionIndex(table.store, table.path, base);
  const removed = new Set(changes.deletes.map((e) => dvFileIdentity(e.partition, e.bucket, e.file.fileName)));
  const added = new Map<string, ManifestEntry[]>();
  for (const e of changes.adds) {
    const id = bucketId(e);
    added.set(id, [...(added.get(id) ?? []), e]);
  }
  let refs = baseRefs.filter((r) => !removed.has(refIdentity(r)));
  let changed = refs.length !== baseRefs.length;
  if (added.size > 0) {
    const partitions = new Set(changes.adds.map((e) => e.partition));
    const live = await foldLiveFiles(table.store, table.path, previous, { partition: (p) => partitions.has(p) }, cache);
    const others = new Map<string, ManifestEntry[]>();
    for (const e of live) {
      const id = bucketId(e);
      if (!added.has(id) || removed.has(dvFileIdentity(e.partition, e.bucket, e.file.fileName))) continue;
      others.set(id, [...(others.get(id) ?? []), e]);
    }
    const refOf = new Map(refs.map((r) => [refIdentity(r), r]));
    const engine = mergeEngineFor(mergeConfigFromOptions(table.options, table.schema.primaryKeys));
    const results = await Promise.all(
      [...added].map(([id, adds]) => bucketVectors(table, engine, adds, others.get(id) ?? [], refOf)),
    );
    for (const newRefs of results) {
      if (newRefs === undefined) continue;
      changed = true;
      const replaced = new Set(newRefs.replaced);
      refs = [...refs.filter((r) => !replaced.has(refIdentity(r))), ...newRefs.refs];
    }
  }
  if (!changed && base?.deletionVectors !== undefined) return base.deletionVectors;
  return writeDeletionIndex(table.store, table.path, refs);
}

/**
 * The new vectors of one bucket: `refs` written to a new Puffin file and `replaced`, the identities
 * of the files whose earlier refs they replace (or that lost their vector); undefined when no vector changes.
 */
async function bucketVectors(
  table: Table,
  engine: MergeFunction,
  adds: ManifestEntry[],
  others: ManifestEntry[],
  refOf: Map<string, DeletionVectorRef>,
): Promise<{ refs: DeletionVectorRef[]; replaced: string[] } | undefined> {
  const decided = new Map<string, Decided>();
  const decide = (p: Probed, live: Uint8Array) => {
    const id = dvFileIdentity(p.entry.partition, p.entry.bucket, p.entry.file.fileName);
    let d = decided.get(id);
    if (d === undefined) decided.set(id, (d = { entry: p.entry, whole: p.whole, positions: [], live: [] }));
    d.positions.push(p.positions);
    d.live.push(live);
  };
  const columns = mergeColumnsOf(table);
  await forEachChunk(table, adds, columns, async (chunk) => {
    const inputs = [...chunk, ...(await lookUpChunk(table, chunk, others, columns))];
    const live = winners(table, engine, inputs);
    inputs.forEach((p, i) => decide(p, live[i]));
  });
  const vectors = new Map<string, Uint32Array>();
  const replaced: string[] = [];
  await Promise.all(
    [...decided].map(async ([id, d]) => {
      const ref = refOf.get(id);
      const before = ref === undefined ? new Uint32Array() : await lookupVector(table, ref);
      const after = nextVector(
        before,
        d.whole,
        concatU32(d.positions),
        concatBytes(
          d.live,
          d.live.reduce((n, p) => n + p.length, 0),
        ),
      );
      if (sameVector(before, after)) return;
      replaced.push(id);
      if (after.length > 0) vectors.set(d.entry.file.fileName, after);
    }),
  );
  if (replaced.length === 0) return undefined;
  const refs = await writeBucketVectors(table.store, table.path, {
    partition: adds[0].partition,
    bucket: adds[0].bucket,
    vectors,
  });
  rememberVectors(table, refs, vectors);
  return { refs, replaced };
}

/** What the chunks of a commit decided about one file: the positions looked at (ascending) and whether each is live. */
interface Decided {
  entry: ManifestEntry;
  whole: boolean;
  positions: Uint32Array[];
  live: Uint8Array[];
}

/** An added file read a piece at a time: the piece in hand, from row `at` on not yet in a chunk. */
interface AddedCursor {
  entry: ManifestEntry;
  pieces: ColumnPieces;
  piece?: arrow.Table;
  keys?: KeyIndex;
  /** File position of the piece's row 0. */
  start: number;
  at: number;
}

/**
 * Calls `fn` with the rows of the added files in key-range chunks, ascending and disjoint: the
 * added files' merge columns are held a piece at a time (a quarter of compaction.memory-budget over
 * all of them, at least a row group each), so a commit larger than the budget is looked up chunk
 * by chunk. A chunk ends at the smallest last key in hand among files with pieces left to read
 * (past it, their next rows are not known yet). A commit within the budget is one chunk.
 */
async function forEachChunk(
  table: Table,
  adds: ManifestEntry[],
  columns: string[],
  fn: (chunk: Probed[]) => Promise<void>,
): Promise<void> {
  const share = table.options.compactionMemoryBudget / CHUNK_SHARE / adds.length;
  const cursors: AddedCursor[] = [];
  try {
    for (const entry of adds)
      cursors.push({ entry, pieces: await lookupPieces(table, entry, columns, share), start: 0, at: 0 });
    for (;;) {
      for (const c of cursors) {
        while ((c.piece === undefined || c.at === c.piece.numRows) && c.pieces.more) {
          c.start += c.piece?.numRows ?? 0;
          c.piece = await c.pieces.next();
          c.keys = keyIndex(c.piece, table.schema.primaryKeys);
          c.at = 0;
        }
      }
      const open = cursors.filter((c) => c.piece !== undefined && c.at < c.piece.numRows);
      if (open.length === 0) return;
      let bound: { keys: KeyIndex; row: number } | undefined;
      for (const c of open) {
        const last = c.piece!.numRows - 1;
        if (c.pieces.more && (bound === undefined || compareKeysAt(c.keys!, last, bound.keys, bound.row) < 0))
          bound = { keys: c.keys!, row: last };
      }
      const chunk: Probed[] = [];
      for (const c of open) {
        const end = bound === undefined ? c.piece!.numRows : upTo(c.keys!, c.at, c.piece!.numRows, bound);
        if (end > c.at) chunk.push(takeChunk(c, end));
      }
      await fn(chunk);
    }
  } finally {
    await Promise.all(cursors.map((c) => c.pieces.close()));
  }
}

/** The first row in from … to - 1 of `keys` whose key is above the bound's (`to` when none is). */
function upTo(keys: KeyIndex, from: number, to: number, bound: { keys: KeyIndex; row: number }): number {
  let lo = from;
  let hi = to;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareKeysAt(keys, mid, bound.keys, bound.row) <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The cursor's rows at … end - 1 as a chunk input (the piece itself when it is all of it). */
function takeChunk(c: AddedCursor, end: number): Probed {
  const piece = c.piece!;
  const rows = Uint32Array.from({ length: end - c.at }, (_, i) => c.at + i);
  const positions = rows.map((r) => c.start + r);
  const t = rows.length === piece.numRows ? piece : takeRows(piece, rows);
  c.at = end;
  return { entry: c.entry, table: t, positions, whole: true };
}

/**
 * The rows of the bucket's older files (`others`) whose keys one chunk holds: files whose key
 * range overlaps the chunk's, a few at a time, pruned to the row groups of the chunk's key range.
 */
async function lookUpChunk(
  table: Table,
  chunk: Probed[],
  others: ManifestEntry[],
  columns: string[],
): Promise<Probed[]> {
  let min: JsonValue[] | undefined;
  let max: JsonValue[] | undefined;
  for (const p of chunk) {
    const first = keyAt(table, p.table, 0);
    const last = keyAt(table, p.table, p.table.numRows - 1);
    if (min === undefined || table.compareKeys(first, min) < 0) min = first;
    if (max === undefined || table.compareKeys(last, max) > 0) max = last;
  }
  if (min === undefined || max === undefined) return [];
  const lo = min;
  const hi = max;
  const candidates = others.filter(
    (o) => table.compareKeys(o.file.maxKey, lo) >= 0 && table.compareKeys(o.file.minKey, hi) <= 0,
  );
  const probes = chunk.map((p) => keyIndex(p.table, table.schema.primaryKeys));
  const range = keyRangeFilter(table, lo, hi);
  // A few files at a time: each one's decoded columns are held only until its matching rows are taken.
  const looked = await runLimited(
    candidates.map((o) => () => probeKeys(table, o, columns, probes, range)),
    LOOKUP_FILES_AT_ONCE,
  );
  return looked.filter((p) => p.positions.length > 0);
}

/** The stored key of row `row` of a table holding the key columns. */
function keyAt(table: Table, t: arrow.Table, row: number): JsonValue[] {
  const r = tableToRows(t.slice(row, row + 1), table.keyFields)[0];
  return table.keyFields.map((k) => toJsonValue(k.type, r[k.name]));
}

function concatU32(parts: Uint32Array[]): Uint32Array {
  if (parts.length === 1) return parts[0];
  const out = new Uint32Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) out.set(p, at), (at += p.length);
  return out;
}

/**
 * The vector of a decided file: its earlier one (none for an added file, `whole`) less the
 * positions looked at, plus those that lost (a merge of the two ascending lists).
 */
function nextVector(before: Uint32Array, whole: boolean, positions: Uint32Array, live: Uint8Array): Uint32Array {
  const earlier = whole ? new Uint32Array() : before;
  const out = new Uint32Array(earlier.length + positions.length);
  let n = 0;
  let i = 0;
  for (let j = 0; j < positions.length; j++) {
    const at = positions[j];
    while (i < earlier.length && earlier[i] < at) out[n++] = earlier[i++];
    // A position looked at is decided again: its earlier deletion does not carry over.
    if (i < earlier.length && earlier[i] === at) i++;
    if (live[j] === 0) out[n++] = at;
  }
  while (i < earlier.length) out[n++] = earlier[i++];
  return out.slice(0, n);
}

function sameVector(a: Uint32Array, b: Uint32Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Which rows of the inputs are live, per input (1: live), by the table's merge engine over all
 * of them: the rows the merged read would return. Each input is key-sorted with one row per key.
 */
function winners(table: Table, engine: MergeFunction, inputs: Probed[]): Uint8Array[] {
  const live = inputs.map((p) => new Uint8Array(p.positions.length));
  const sequenced = inputs.map((p) => ({
    table: p.table,
    sequence: storedSequence(p.table, p.entry.file.sequenceBase),
  }));
  if (sequenced.length === 0) return live;
  const order = {
    keyColumns: table.schema.primaryKeys,
    sequenceFields: engine.config.sequenceFields,
    sequenceDescending: engine.config.sequenceDescending,
  };
  const versions =
    sequenced.length === 1
      ? singleRunVersions(table.schema, sequenced[0])
      : versionsOfRuns(table.schema, sequenced, order);
  const result = engine.merge(versions, { rawInput: false, dropRetracts: true });
  if (result.mode !== 'take')
    throw new Error(
      `the ${engine.name} merge engine computes values; deletion vectors need an engine that keeps one stored row`,
    );
  for (let k = 0; k < result.count; k++) {
    const v = result.version[k];
    live[versions.source[v]][versions.row[v]] = 1;
  }
  return live;
}

/**
 * The merge columns of the rows of `entry` whose key one of the probes holds (a sorted semi-join
 * per probe), of the row groups whose key statistics overlap `range` (all without it).
 */
async function probeKeys(
  table: Table,
  entry: ManifestEntry,
  columns: string[],
  probes: KeyIndex[],
  range: RowSpanFilter | undefined,
): Promise<Probed> {
  const { table: t, positions: filePositions } = await lookupColumns(table, entry, columns, range);
  const keys = keyIndex(t, table.schema.primaryKeys);
  const hit = new Uint8Array(t.numRows);
  let hits = 0;
  for (const probe of probes) {
    let i = 0;
    let j = 0;
    while (i < keys.count && j < probe.count) {
      const c = compareKeysAt(keys, i, probe, j);
      if (c < 0) i++;
      else if (c > 0) j++;
      else {
        if (hit[i] === 0) hits++;
        hit[i] = 1;
        i++;
        j++;
      }
    }
  }
  const rows = new Uint32Array(hits);
  for (let i = 0, n = 0; i < hit.length; i++) if (hit[i] === 1) rows[n++] = i;
  const positions = filePositions === undefined ? rows : rows.map((r) => filePositions[r]);
  return { entry, table: hits === t.numRows ? t : takeRows(t, rows), positions, whole: false };
}
