/**
 * Stream splits: what one (partition, bucket) of one snapshot contributes to a stream (Paimon's
 * DataSplit, one per bucket per snapshot, files not split), and how a split is read into rows with
 * their row kinds, in the order the changes happened.
 */
import * as arrow from 'apache-arrow';
import { physicalArrowSchema } from '../format/arrow-schema.js';
import { emptyTable, gatherRows, singleBatch, tableToRows } from '../format/columns.js';
import { compareKeyTuples, compareValues } from '../schema/compare.js';
import { makeColumn, tableFromColumns } from '../format/column-layout.js';
import type { DataFileMeta, ManifestEntry } from '../manifest/types.js';
import { radixSortWords } from '../mergetree/radix-sort.js';
import { KIND_COLUMN, RowKind, SEQUENCE_COLUMN, type DataType, type Row, type Value } from '../schema/types.js';
import { mergeBuckets, readEntry } from '../table/read.js';
import type { Table } from '../table/table.js';

/**
 * `full`: the merged state of the bucket at the snapshot, every row +I (a stream's first plan).
 * `delta`: the level-0 files an APPEND snapshot added, with the kinds they were written with.
 * `changelog`: the changelog files the snapshot produced.
 * `overwrite`: an OVERWRITE snapshot read as changes (`streaming-read-overwrite`): the bucket's
 * state before (`beforeFiles`, which the snapshot removed) against after (`files`): -D for a key
 * that is gone, +I for a new one, -U/+U for a changed one (Paimon's diff read).
 */
export type SplitKind = 'full' | 'delta' | 'changelog' | 'overwrite';

/** One (partition, bucket) of one snapshot, with the files to read. */
export interface Split {
  snapshotId: number;
  /** Partition path (`dt=2024-05-01`), '' for an unpartitioned table. */
  partition: string;
  bucket: number;
  totalBuckets: number;
  kind: SplitKind;
  files: DataFileMeta[];
  /** Schema id of the split's snapshot (absent in messages of older versions). */
  schemaId?: number;
  /** `overwrite` splits: the bucket's files before the snapshot (it removed them). */
  beforeFiles?: DataFileMeta[];
}

/** One split per (partition, bucket) of the entries (ADD entries only), in (partition, bucket) order. */
export function splitsOf(snapshotId: number, kind: SplitKind, entries: readonly ManifestEntry[]): Split[] {
  const byBucket = new Map<string, Split>();
  for (const e of entries) {
    if (e.kind !== 'ADD') continue;
    const id = `${e.partition}\u0000${e.bucket}`;
    let s = byBucket.get(id);
    if (!s)
      byBucket.set(
        id,
        (s = { snapshotId, partition: e.partition, bucket: e.bucket, totalBuckets: e.totalBuckets, kind, files: [] }),
      );
    s.files.push(e.file);
  }
  return [...byBucket.values()].sort((a, b) =>
    a.partition < b.partition ? -1 : a.partition > b.partition ? 1 : a.bucket - b.bucket,
  );
}

/** A short readable name of a split, for logs and errors. */
export function describeSplit(s: Pick<Split, 'snapshotId' | 'partition' | 'bucket' | 'kind'>): string {
  return `${s.kind} split of snapshot ${s.snapshotId}, ${s.partition ? `partition ${s.partition}, ` : ''}bucket ${s.bucket}`;
}

/**
 * The rows of a split in the table's physical layout (columns, `_SEQUENCE_NUMBER` absolute,
 * `_VALUE_KIND`). Full splits: the merged state, all +I, in key order. Delta and changelog
 * splits: every row as written, ordered by sequence number, so that each key's changes come in
 * the order they were made.
 */
export async function readSplit(table: Table, split: Split): Promise<arrow.Table> {
  const schema = physicalArrowSchema(table.schema);
  if (split.kind === 'overwrite') {
    const [before, after] = await Promise.all([
      readSplit(table, { ...split, kind: 'full', files: split.beforeFiles ?? [], beforeFiles: undefined }),
      readSplit(table, { ...split, kind: 'full', beforeFiles: undefined }),
    ]);
    return diffStates(table, before, after);
  }
  if (split.files.length === 0) return emptyTable(schema);
  const entries = split.files.map((file) => ({
    kind: 'ADD' as const,
    partition: split.partition,
    bucket: split.bucket,
    totalBuckets: split.totalBuckets,
    file,
  }));
  if (split.kind === 'full') {
    const merged = await mergeBuckets(table, entries, { dropDeletes: true });
    if (merged.length === 0) return emptyTable(schema);
    if (merged.length === 1) return merged[0];
    // Sections are key-disjoint and come in key order: concatenating keeps the key order.
    return singleBatch(new arrow.Table(merged.flatMap((t) => t.batches)));
  }
  // Files in sequence order; a file's rows are read whole, in file order.
  const files = [...entries].sort(
    (a, b) =>
      a.file.minSequenceNumber - b.file.minSequenceNumber || a.file.maxSequenceNumber - b.file.maxSequenceNumber,
  );
  const tables = await Promise.all(files.map((e) => readEntry(table, e).then(singleBatch)));
  if (tables.every((t) => t.numRows === 0)) return emptyTable(schema);
  return orderBySequence(
    tables,
    files.map((e) => e.file.sequenceBase),
  );
}

/**
 * One table of every row of `tables`, with absolute sequence numbers, stably sorted by sequence.
 * A single file keeps its own (key) order: it holds at most one change per key per version run.
 */
function orderBySequence(tables: arrow.Table[], bases: number[]): arrow.Table {
  const schema = tables[0].schema;
  const seqIndex = schema.fields.findIndex((f) => f.name === SEQUENCE_COLUMN);
  let total = 0;
  for (const t of tables) total += t.numRows;
  const source = new Uint16Array(total);
  const row = new Uint32Array(total);
  const hi = new Uint32Array(total);
  const lo = new Uint32Array(total);
  let at = 0;
  let sorted = true;
  let last = -1;
  tables.forEach((t, k) => {
    // Table.numRows sums the batches on every call: read once, not per row.
    const rows = t.numRows;
    if (rows === 0) return;
    const stored = t.batches[0].data.children[seqIndex].values as BigInt64Array;
    let fileMin = Infinity;
    for (let i = 0; i < rows; i++) {
      const v = bases[k] + Number(stored[i]);
      source[at] = k;
      row[at] = i;
      hi[at] = Math.floor(v / 4294967296);
      lo[at] = v >>> 0;
      if (v < fileMin) fileMin = v;
      at++;
    }
    // Files whose sequence ranges do not interleave need no sort: file order is sequence order.
    if (fileMin <= last) sorted = false;
    for (let i = 0; i < rows; i++) last = Math.max(last, bases[k] + Number(stored[i]));
  });
  let order: Uint32Array;
  if (sorted) {
    order = new Uint32Array(total);
    for (let i = 0; i < total; i++) order[i] = i;
  } else {
    const index = new Uint32Array(total);
    for (let i = 0; i < total; i++) index[i] = i;
    order = radixSortWords(hi.slice(), lo.slice(), index);
  }
  const src = new Uint16Array(total);
  const rows = new Uint32Array(total);
  const sequence = new BigInt64Array(total);
  for (let i = 0; i < total; i++) {
    const j = order[i];
    src[i] = source[j];
    rows[i] = row[j];
    sequence[i] = BigInt(hi[j]) * 4294967296n + BigInt(lo[j]);
  }
  const gathered = gatherRows(tables, src, rows);
  return withSequence(gathered, sequence, seqIndex);
}

/** The table with its sequence column replaced by `sequence` (absolute numbers). */
function withSequence(t: arrow.Table, sequence: BigInt64Array, seqIndex: number): arrow.Table {
  const children = t.batches[0].data.children.slice();
  children[seqIndex] = makeColumn(new arrow.Int64(), t.numRows, sequence, null, 0);
  return tableFromColumns(t.schema, children, t.numRows);
}

/**
 * The changes from one merged state of a bucket to another (both in key order, all +I): -D for
 * a key only `before` has, +I for a key only `after` has, -U then +U for a key whose row changed.
 */
function diffStates(table: Table, before: arrow.Table, after: arrow.Table): arrow.Table {
  const fields = table.schema.fields;
  const b = tableToRows(before, fields);
  const a = tableToRows(after, fields);
  const keys = table.schema.primaryKeys;
  const keyOf = (r: Row) => keys.map((k) => r[k] ?? null);
  const src: number[] = [];
  const rows: number[] = [];
  const kinds: number[] = [];
  const push = (s: number, r: number, k: number) => {
    src.push(s);
    rows.push(r);
    kinds.push(k);
  };
  let i = 0;
  let j = 0;
  if (keys.length === 0) {
    // An append table has no key to pair rows by: every row removed, then every row written.
    for (; i < b.length; i++) push(0, i, RowKind.DELETE);
    for (; j < a.length; j++) push(1, j, RowKind.INSERT);
  }
  while (i < b.length || j < a.length) {
    const c = i >= b.length ? 1 : j >= a.length ? -1 : compareKeyTuples(table.keyTypes, keyOf(b[i]), keyOf(a[j]));
    if (c < 0) push(0, i++, RowKind.DELETE);
    else if (c > 0) push(1, j++, RowKind.INSERT);
    else {
      if (!fields.every((f) => sameValue(f.type, b[i][f.name] ?? null, a[j][f.name] ?? null))) {
        push(0, i, RowKind.UPDATE_BEFORE);
        push(1, j, RowKind.UPDATE_AFTER);
      }
      i++;
      j++;
    }
  }
  const out = gatherRows([before, after], Uint16Array.from(src), Uint32Array.from(rows));
  const kindIndex = out.schema.fields.findIndex((f) => f.name === KIND_COLUMN);
  const children = out.batches.length > 0 ? out.batches[0].data.children.slice() : [];
  if (children.length === 0) return emptyTable(out.schema);
  children[kindIndex] = makeColumn(new arrow.Int8(), out.numRows, Int8Array.from(kinds), null, 0);
  return tableFromColumns(out.schema, children, out.numRows);
}

function sameValue(type: DataType, x: Value, y: Value): boolean {
  if (x === null || y === null) return x === y;
  if (typeof x === 'object' && !(x instanceof Uint8Array)) return stableJson(x) === stableJson(y);
  return compareValues(type, x, y) === 0;
}

function stableJson(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) =>
    typeof x === 'bigint' ? `${x}n` : x instanceof Uint8Array ? Array.from(x) : x,
  );
}

/** Row kinds of a split's rows (a view of the `_VALUE_KIND` column of a single-batch table). */
export function kindsOf(t: arrow.Table): Int8Array {
  const flat = singleBatch(t);
  if (flat.numRows === 0) return new Int8Array(0);
  const idx = flat.schema.fields.findIndex((f) => f.name === KIND_COLUMN);
  return flat.batches[0].data.children[idx].values as Int8Array;
}
