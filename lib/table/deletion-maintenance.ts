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
 */
import type * as arrow from 'apache-arrow';
import { runLimited } from '../concurrency.js';
import { takeRows } from '../format/columns.js';
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
import type { Snapshot } from '../snapshot/snapshot.js';
import {
  addedKeyRange,
  keepsDeletionVectors,
  lookupColumns,
  lookupVector,
  mergeColumnsOf,
  rememberVectors,
} from './deletion-lookup.js';
import type { Table } from './table.js';

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
  const columns = mergeColumnsOf(table);
  const added = await Promise.all(adds.map((e) => probeWhole(table, e, columns)));
  const probes = added.map((p) => keyIndex(p.table, table.schema.primaryKeys));
  const candidates = others.filter((o) =>
    adds.some(
      (a) =>
        table.compareKeys(o.file.maxKey, a.file.minKey) >= 0 && table.compareKeys(o.file.minKey, a.file.maxKey) <= 0,
    ),
  );
  // A few files at a time: each one's decoded columns are held only until its matching rows are taken.
  const range = addedKeyRange(table, adds);
  const looked = await runLimited(
    candidates.map((o) => () => probeKeys(table, o, columns, probes, range)),
    LOOKUP_FILES_AT_ONCE,
  );
  const inputs = [...added, ...looked.filter((p) => p.positions.length > 0)];
  const live = winners(table, engine, inputs);
  const vectors = new Map<string, Uint32Array>();
  const replaced: string[] = [];
  await Promise.all(
    inputs.map(async (p, i) => {
      const id = dvFileIdentity(p.entry.partition, p.entry.bucket, p.entry.file.fileName);
      const ref = refOf.get(id);
      const before = ref === undefined ? new Uint32Array() : await lookupVector(table, ref);
      const after = nextVector(before, p, live[i]);
      if (sameVector(before, after)) return;
      replaced.push(id);
      if (after.length > 0) vectors.set(p.entry.file.fileName, after);
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

/**
 * The vector of a probed file: its earlier one less the positions looked at, plus those that lost
 * (a merge of the two ascending lists; an added file had no earlier vector).
 */
function nextVector(before: Uint32Array, p: Probed, live: Uint8Array): Uint32Array {
  const earlier = p.whole ? new Uint32Array() : before;
  const positions = p.positions;
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

/** The merge columns of every row of an added file. */
async function probeWhole(table: Table, entry: ManifestEntry, columns: string[]): Promise<Probed> {
  const { table: t } = await lookupColumns(table, entry, columns);
  const positions = new Uint32Array(t.numRows);
  for (let i = 0; i < positions.length; i++) positions[i] = i;
  return { entry, table: t, positions, whole: true };
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
