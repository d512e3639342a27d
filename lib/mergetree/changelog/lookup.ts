/**
 * `changelog-producer = lookup`: when a compaction takes level-0 files up, every key they hold
 * is looked up in the bucket's levels ≥ 1 for its before image; the after image is that before
 * image merged with the level-0 records. Level-0 files are exactly the data no changelog has
 * covered yet (this producer forces all of them up after every write), so the changelog of
 * successive compactions, replayed in order, is the table's history.
 *
 * varve departs from Paimon here in one way: the compaction output stays an ordinary merge of its
 * inputs (Paimon writes the looked-up value into it and then needs lookup-aware reads); the
 * before image is used for the changelog only, so batch reads merge every level as usual.
 */
import type * as arrow from 'apache-arrow';
import { emptyTable, singleBatch } from '../../format/columns.js';
import { physicalArrowSchema } from '../../format/arrow-schema.js';
import type { DataFileMeta } from '../../manifest/types.js';
import type { TableSchema } from '../../schema/types.js';
import { sectionRuns, type SectionInput } from '../compact-task.js';
import { keyIndex } from '../key-order.js';
import type { MergeFunction } from '../merge-function.js';
import { mergeSortedRuns, type RunInput } from '../sort-merge-reader.js';
import type { KeyComparator } from '../sorted-run.js';
import { diffChangelog, rowsWithKeys } from './diff.js';

export interface LookupChangelogOptions {
  schema: TableSchema;
  engine: MergeFunction;
  rowDeduplicate: boolean;
}

/**
 * The level ≥ 1 files that may hold a key of `level0` (their key ranges overlap the level-0
 * files' overall range); only these need reading for the before images.
 */
export function lookupCandidates(level0: DataFileMeta[], higher: DataFileMeta[], compareKeys: KeyComparator): DataFileMeta[] {
  if (level0.length === 0) return [];
  let min = level0[0].minKey;
  let max = level0[0].maxKey;
  for (const f of level0) {
    if (compareKeys(f.minKey, min) < 0) min = f.minKey;
    if (compareKeys(f.maxKey, max) > 0) max = f.maxKey;
  }
  return higher.filter((f) => f.level > 0 && compareKeys(f.maxKey, min) >= 0 && compareKeys(f.minKey, max) <= 0);
}

/**
 * The changelog of taking `level0` up: for each of its keys, before = the merge of the key's
 * records in `higher` (every level ≥ 1 file that may hold it), after = before merged with the
 * level-0 records; +I, -U/+U or -D by `diffChangelog`.
 */
export function lookupChangelog(level0: SectionInput[], higher: SectionInput[], opts: LookupChangelogOptions): arrow.Table {
  const physical = physicalArrowSchema(opts.schema);
  if (level0.length === 0) return emptyTable(physical);
  const keys = opts.schema.primaryKeys;
  const merge = (runs: RunInput[]) =>
    mergeSortedRuns(runs, { schema: opts.schema, keyColumns: keys, engine: opts.engine, dropDeletes: false, keepKinds: true });

  const fresh = singleBatch(merge(sectionRuns(level0)));
  const freshKeys = keyIndex(fresh, keys);
  // Only the looked-up keys of each higher file are merged: a semi-join first keeps the merge
  // proportional to the level-0 data, not to the bucket.
  const before = merge(higher.map((h) => ({ table: rowsWithKeys(h.table, freshKeys, keys), sequenceBase: h.file.sequenceBase })));
  // Both inputs now carry absolute sequence numbers (merge output has base 0).
  const after = merge([
    { table: before, sequenceBase: 0 },
    { table: fresh, sequenceBase: 0 },
  ]);
  // first-row keeps the first value: a key seen before never changes, so it never logs an update.
  const rowDeduplicate = opts.rowDeduplicate || opts.engine.name === 'first-row';
  return diffChangelog(before, after, { schema: opts.schema, rowDeduplicate });
}
