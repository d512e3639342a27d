/**
 * The changelog between two images of the same keys, as Paimon's changelog wrappers emit it: a
 * key absent before and present after is +I; present before and absent after is -D (the before
 * row); present in both is -U (before) then +U (after), or nothing when the values are equal and
 * `changelog-producer.row-deduplicate` is on. A retract record (-U/-D) in an image means absent.
 */
import type * as arrow from 'apache-arrow';
import { physicalArrowSchema } from '../../format/arrow-schema.js';
import { tableFromColumns } from '../../format/column-layout.js';
import { emptyTable, gatherRows, singleBatch, takeRows } from '../../format/columns.js';
import { RowKind, isRetract, type TableSchema } from '../../schema/types.js';
import { kindColumn } from '../arrow-build.js';
import { columnChunk, compareAt, type ColumnChunk } from '../column-access.js';
import { compareKeysAt, keyIndex, type KeyIndex } from '../key-order.js';
import { kindValues } from '../merge-plan.js';

export interface ChangelogDiffOptions {
  schema: TableSchema;
  /** Emit nothing for a key whose value did not change (`changelog-producer.row-deduplicate`). */
  rowDeduplicate: boolean;
}

/**
 * Changelog rows, key-sorted, in the physical layout with the sequence number of the row each
 * came from. `before` and `after` are key-sorted with one record per key.
 */
export function diffChangelog(before: arrow.Table, after: arrow.Table, opts: ChangelogDiffOptions): arrow.Table {
  const physical = physicalArrowSchema(opts.schema);
  const b = singleBatch(before);
  const a = singleBatch(after);
  if (a.numRows === 0 && b.numRows === 0) return emptyTable(physical);
  const keys = opts.schema.primaryKeys;
  const kb = keyIndex(b, keys);
  const ka = keyIndex(a, keys);
  const kindAt = kindValues(b);
  const afterKindAt = kindValues(a);
  const nf = opts.schema.fields.length;
  const bCols = Array.from({ length: nf }, (_, c) => columnChunk(b, c));
  const aCols = Array.from({ length: nf }, (_, c) => columnChunk(a, c));

  // At most two rows per key (-U and +U).
  const cap = 2 * (a.numRows + b.numRows);
  const source = new Uint16Array(cap);
  const row = new Uint32Array(cap);
  const kind = new Uint8Array(cap);
  let n = 0;
  const emit = (src: number, r: number, k: number) => {
    source[n] = src;
    row[n] = r;
    kind[n] = k;
    n++;
  };

  let i = 0;
  let j = 0;
  // Table.numRows sums the batches on every call: read once, not per row.
  const bRows = b.numRows;
  const aRows = a.numRows;
  while (i < bRows || j < aRows) {
    const cmp = i >= bRows ? 1 : j >= aRows ? -1 : compareKeysAt(kb, i, ka, j);
    const hasBefore = cmp <= 0 && !isRetract(kindAt[i]);
    const hasAfter = cmp >= 0 && !isRetract(afterKindAt[j]);
    if (!hasBefore && hasAfter) emit(1, j, RowKind.INSERT);
    else if (hasBefore && !hasAfter) emit(0, i, RowKind.DELETE);
    else if (hasBefore && hasAfter && !(opts.rowDeduplicate && sameValues(bCols, i, aCols, j))) {
      emit(0, i, RowKind.UPDATE_BEFORE);
      emit(1, j, RowKind.UPDATE_AFTER);
    }
    if (cmp <= 0) i++;
    if (cmp >= 0) j++;
  }
  if (n === 0) return emptyTable(physical);
  const gathered = gatherRows([b, a], source.subarray(0, n), row.subarray(0, n));
  const children = gathered.batches[0].data.children.slice();
  children[children.length - 1] = kindColumn(kind, n);
  return tableFromColumns(gathered.schema, children, n);
}

function sameValues(b: ColumnChunk[], i: number, a: ColumnChunk[], j: number): boolean {
  for (let c = 0; c < b.length; c++) if (compareAt(b[c], i, a[c], j) !== 0) return false;
  return true;
}

/**
 * The rows of key-sorted `t` whose key is among the keys of key-sorted `probe` (a semi-join), in
 * order; `t` itself when every row matches.
 */
export function rowsWithKeys(t: arrow.Table, probe: arrow.Table | KeyIndex, keyColumns: string[]): arrow.Table {
  const flat = singleBatch(t);
  const tk = keyIndex(flat, keyColumns);
  const pk = 'count' in probe ? probe : keyIndex(singleBatch(probe), keyColumns);
  const keep: number[] = [];
  let i = 0;
  let j = 0;
  while (i < tk.count && j < pk.count) {
    const c = compareKeysAt(tk, i, pk, j);
    if (c < 0) i++;
    else if (c > 0) j++;
    else {
      keep.push(i);
      i++;
      j++;
    }
  }
  return keep.length === flat.numRows ? flat : takeRows(flat, Uint32Array.from(keep));
}
