/**
 * Which files a filtered read can skip unread. In a primary-key table only what every version of
 * a key shares may prune: its partition and its primary key. A file whose partition values or key
 * range cannot satisfy the predicate holds no version of a matching key, so skipping it changes
 * no merge. Value columns never prune a file there (another file's older version of the same key
 * would then win the merge and resurrect); they are filtered after the merge. An append table
 * never merges, so its files are also pruned by the value statistics of any column
 * (lib/format/value-stats.ts): a file none of whose rows can match is skipped.
 */
import type { ManifestEntry } from '../manifest/types.js';
import { parsePartitionPath } from '../schema/partition.js';
import { compareValues } from '../schema/compare.js';
import { coerceText, fromJsonValue } from '../schema/values.js';
import type { DataField, DataType, Value } from '../schema/types.js';
import { columnBounds } from '../format/value-stats.js';
import { bucketOf } from '../schema/bucket.js';
import { tableToRows } from '../format/columns.js';
import type { IntRange, RowSpanFilter } from '../format/row-group-reader.js';
import type * as arrow from 'apache-arrow';
import type { JsonValue } from '../schema/value-codec.js';
import { mayMatch, predicateColumns, type ColumnBounds, type Predicate } from './predicate.js';
import type { Table } from './table.js';
import { bucketKeyFields } from './write-routing.js';

/** What a read's pruning did, for `--explain`. */
export interface ReadExplain {
  snapshotId?: number;
  schemaId: number;
  /** The predicate as parsed, or undefined for an unfiltered read. */
  predicate?: Predicate;
  /** Live files of the snapshot (in the requested partitions). */
  liveFiles: number;
  skippedByPartition: number;
  /** Files of buckets the predicate's bucket-key values do not hash to (an equality or IN on every bucket-key column). */
  skippedByBucket: number;
  skippedByKeyRange: number;
  /** Append tables: files whose column min / max / null counts cannot match. */
  skippedByValueStats: number;
  filesRead: number;
  /**
   * Row groups of the files read that a key range (from the predicate or `keyRange`) skipped by
   * their key statistics or by their decoded keys, those read, and the rows decoded of them
   * (undefined without a key range: every row group is read whole).
   */
  rowGroups?: { skippedByStats: number; skippedByKeys: number; read: number; rowsRead: number };
  /** Rows after the merge, and after the predicate. */
  mergedRows: number;
  matchingRows: number;
}

/** Prunes by partition values and by file key ranges. */
export class ReadPruning {
  private readonly types: Map<string, DataType>;
  private readonly partitionCache = new Map<string, boolean>();
  private readonly usesPartition: boolean;
  private readonly usesKey: boolean;
  /** Append table: the predicate's columns, for pruning by value statistics. */
  private readonly valueFields: DataField[];
  /** The bucket-key tuples a matching row may have (undefined: any), and the buckets they hash to per bucket count. */
  private readonly bucketTuples: Value[][] | undefined;
  private readonly bucketsByCount = new Map<number, Set<number> | undefined>();
  private readonly bucketTypes: DataType[];

  constructor(
    private readonly table: Table,
    readonly predicate: Predicate,
  ) {
    this.types = new Map(table.schema.fields.map((f) => [f.name, f.type]));
    const used = predicateColumns(predicate);
    this.usesPartition = table.schema.partitionKeys.some((k) => used.includes(k));
    this.usesKey = table.schema.primaryKeys.some((k) => used.includes(k) && !table.schema.partitionKeys.includes(k));
    const append = table.schema.primaryKeys.length === 0;
    this.valueFields = append
      ? table.schema.fields.filter((f) => used.includes(f.name) && !table.schema.partitionKeys.includes(f.name))
      : [];
    // A bucket-unaware table (`bucket = -1`) hashes nothing: no bucket pruning.
    const bucketFields = table.options.bucket === -1 ? [] : bucketKeyFields(table);
    this.bucketTypes = bucketFields.map((f) => f.type);
    this.bucketTuples =
      bucketFields.length === 0
        ? undefined
        : keyTuples(
            predicate,
            bucketFields.map((f) => f.name),
          );
  }

  /**
   * False when the file's bucket is none of those the predicate's bucket-key values hash to (by the
   * frozen bucket function, with the bucket count the file was written for: a rescaled partition
   * has its own). Every version of a key is in its key's bucket, so skipping others changes no merge.
   */
  bucketMay = (e: ManifestEntry): boolean => {
    if (this.bucketTuples === undefined || !(e.totalBuckets >= 1)) return true;
    let buckets = this.bucketsByCount.get(e.totalBuckets);
    if (!this.bucketsByCount.has(e.totalBuckets)) {
      buckets = this.bucketsOf(e.totalBuckets);
      this.bucketsByCount.set(e.totalBuckets, buckets);
    }
    return buckets === undefined || buckets.has(e.bucket);
  };

  private bucketsOf(count: number): Set<number> | undefined {
    const out = new Set<number>();
    try {
      for (const t of this.bucketTuples!) out.add(bucketOf(this.bucketTypes, t, count));
    } catch {
      return undefined; // a literal the bucket function does not take (e.g. NULL in a typed slot): prune nothing
    }
    return out;
  }

  /** Append tables: false when the file's value statistics show no row can match. */
  fileValuesMay = (e: ManifestEntry): boolean => {
    if (this.valueFields.length === 0 || e.file.valueStats === undefined) return true;
    const out = new Map<string, ColumnBounds>();
    for (const f of this.valueFields) {
      const b = columnBounds(e.file.valueStats, f);
      if (b === undefined) continue; // no statistics for it in this file: know nothing
      const nonNull = b.nullCount < e.file.rowCount;
      out.set(f.name, {
        ...(nonNull && f.type.root !== 'BYTES' ? { min: b.min, max: b.max } : {}),
        mayBeNull: b.nullCount > 0,
        mayBeNonNull: nonNull,
      });
    }
    return mayMatch(this.predicate, out, this.types);
  };

  /** False when no row of this partition can match. */
  partitionMay = (partition: string): boolean => {
    if (!this.usesPartition) return true;
    let ok = this.partitionCache.get(partition);
    if (ok === undefined) {
      ok = mayMatch(this.predicate, this.partitionBounds(partition), this.types);
      this.partitionCache.set(partition, ok);
    }
    return ok;
  };

  /** False when no key in the file's key range can match (the partition is checked separately). */
  fileMay = (e: ManifestEntry): boolean => {
    if (!this.usesKey) return true;
    return mayMatch(this.predicate, this.keyBounds(e), this.types);
  };

  private partitionBounds(partition: string): Map<string, ColumnBounds> {
    const out = new Map<string, ColumnBounds>();
    const texts = parsePartitionPath(partition);
    const defaultName = this.table.options.partitionDefaultName;
    for (const k of this.table.schema.partitionKeys) {
      const f = this.table.schema.fields.find((x) => x.name === k)!;
      const text = texts[k];
      if (text === undefined) continue;
      if (text === defaultName) {
        // The default name stands for NULL (and for '' of a STRING column).
        out.set(
          k,
          f.type.root === 'STRING'
            ? { min: '', max: '', mayBeNull: true, mayBeNonNull: true }
            : { mayBeNull: true, mayBeNonNull: false },
        );
        continue;
      }
      let v: Value;
      try {
        v = coerceText({ ...f, type: { ...f.type, nullable: true } }, text, undefined, { quoted: true });
      } catch {
        continue; // not readable as the column's type: know nothing, prune nothing
      }
      out.set(k, { min: v, max: v, mayBeNull: false, mayBeNonNull: true });
    }
    return out;
  }

  private keyBounds(e: ManifestEntry): Map<string, ColumnBounds> {
    const out = new Map<string, ColumnBounds>();
    const keys = this.table.keyFields;
    for (let i = 0; i < keys.length; i++) {
      const t = keys[i].type;
      const min = fromJsonValue(t, e.file.minKey[i]);
      const max = fromJsonValue(t, e.file.maxKey[i]);
      out.set(keys[i].name, { min, max, mayBeNull: false, mayBeNonNull: true });
      // Files are sorted by the whole key: a later column is bounded only while the earlier ones are fixed.
      if (compareValues(t, min, max) !== 0) break;
    }
    return out;
  }
}

/** At most this many bucket-key tuples are hashed (an IN list on several columns multiplies). */
const MAX_KEY_TUPLES = 1024;

/**
 * Every tuple of `columns` values a row satisfying `p` may have, when `p` fixes each of them to
 * listed values (`=` or IN, through AND and OR); undefined when some column may hold anything.
 * A superset is always safe: the tuples only decide which buckets are read.
 */
function keyTuples(p: Predicate, columns: readonly string[]): Value[][] | undefined {
  if (p.kind === 'or') {
    const out: Value[][] = [];
    for (const a of p.args) {
      const t = keyTuples(a, columns);
      if (t === undefined) return undefined;
      out.push(...t);
      if (out.length > MAX_KEY_TUPLES) return undefined;
    }
    return out;
  }
  const fixed = new Map<string, Value[]>();
  const leaves = p.kind === 'and' ? p.args : [p];
  for (const a of leaves) {
    const values =
      a.kind === 'compare' && a.op === '=' ? [a.value] : a.kind === 'in' && !a.negated ? a.values : undefined;
    if (values === undefined || !columns.includes(a.kind === 'compare' || a.kind === 'in' ? a.column : '')) continue;
    const column = (a as { column: string }).column;
    const known = fixed.get(column);
    if (known === undefined || values.length < known.length) fixed.set(column, values);
  }
  if (columns.every((c) => fixed.has(c))) return product(columns.map((c) => fixed.get(c)!));
  // A conjunct that fixes them on its own (an OR of full keys inside an AND) is enough.
  if (p.kind === 'and') {
    for (const a of p.args) {
      if (a.kind !== 'and' && a.kind !== 'or') continue;
      const t = keyTuples(a, columns);
      if (t !== undefined) return t;
    }
  }
  return undefined;
}

/** Every combination of one value per list (undefined when more than MAX_KEY_TUPLES). */
function product(lists: Value[][]): Value[][] | undefined {
  let out: Value[][] = [[]];
  for (const l of lists) {
    if (out.length * l.length > MAX_KEY_TUPLES) return undefined;
    out = out.flatMap((t) => l.map((v) => [...t, v]));
  }
  return out;
}

/** Key-range bounds over the key columns outside the partition: inclusive prefixes of a key tuple. */
interface KeyBounds {
  lower: Value[];
  upper: Value[];
}

/** Integer types whose Parquet chunk statistics (INT32 / INT64) are the values themselves. */
const INT_STATS_TYPES = new Set(['TINYINT', 'SMALLINT', 'INT', 'DATE', 'BIGINT']);

/**
 * The rows of each sorted data file a read needs, when the predicate (or `keyRange`) bounds the
 * primary key: row groups whose key statistics or decoded keys lie outside are skipped, and only
 * the rows inside are decoded. Sound for any merge: every version of a key carries the key, so
 * dropping rows of other keys before the merge changes no merged row a filter keeps. Undefined
 * when nothing bounds the key (or the table has none).
 */
export function keySpanFilter(
  table: Table,
  predicate: Predicate | undefined,
  keyRange: { min?: JsonValue[]; max?: JsonValue[] } | undefined,
): RowSpanFilter | undefined {
  const s = table.schema;
  // In a file every row has the same partition values: its rows are sorted by the other key columns.
  const fields = s.primaryKeys
    .filter((k) => !s.partitionKeys.includes(k))
    .map((k) => s.fields.find((f) => f.name === k)!);
  if (fields.length === 0) return undefined;
  let bounds = predicate === undefined ? undefined : predicateBounds(predicate, fields);
  // keyRange tuples are whole keys: usable as prefixes only when no partition column is in them.
  if (bounds === undefined && keyRange !== undefined && fields.length === s.primaryKeys.length) {
    const typed = (k?: JsonValue[]) => (k ?? []).map((v, i) => fromJsonValue(fields[i].type, v));
    bounds = { lower: typed(keyRange.min), upper: typed(keyRange.max) };
  }
  if (bounds === undefined || (bounds.lower.length === 0 && bounds.upper.length === 0)) return undefined;
  return spanFilter(fields, bounds);
}

function spanFilter(fields: DataField[], { lower, upper }: KeyBounds): RowSpanFilter {
  const types = fields.map((f) => f.type);
  const prefix = (row: Value[], bound: Value[]): number => {
    for (let i = 0; i < bound.length; i++) {
      const c = compareValues(types[i], row[i], bound[i]);
      if (c !== 0) return c;
    }
    return 0;
  };
  const first = fields[0];
  const asBig = (v: Value) => (typeof v === 'bigint' ? v : BigInt(v as number));
  return {
    columns: fields.map((f) => f.name),
    counts: { skippedByStats: 0, skippedByKeys: 0, read: 0, rowsRead: 0 },
    closed: lower.length > 0 && upper.length > 0,
    rowGroupMay(stats: ReadonlyMap<string, IntRange>): boolean {
      const r = INT_STATS_TYPES.has(first.type.root) ? stats.get(first.name) : undefined;
      if (r === undefined) return true;
      if (lower.length > 0 && lower[0] !== null && r.max < asBig(lower[0])) return false;
      if (upper.length > 0 && upper[0] !== null && r.min > asBig(upper[0])) return false;
      return true;
    },
    span(keys: arrow.Table): [number, number] {
      const n = keys.numRows;
      const ordered = keys.select(fields.map((f) => f.name));
      const at = (i: number): Value[] => {
        const row = tableToRows(ordered.slice(i, i + 1), fields)[0];
        return fields.map((f) => row[f.name]);
      };
      // The first row at or after the lower bound, the first after the upper one (binary searches).
      const search = (after: (row: Value[]) => boolean): number => {
        let lo = 0;
        let hi = n;
        while (lo < hi) {
          const mid = (lo + hi) >>> 1;
          if (after(at(mid))) hi = mid;
          else lo = mid + 1;
        }
        return lo;
      };
      const start = lower.length === 0 ? 0 : search((row) => prefix(row, lower) >= 0);
      const end = upper.length === 0 ? n : search((row) => prefix(row, upper) > 0);
      return [start, Math.max(start, end)];
    },
  };
}

/**
 * Inclusive bounds on the key (`fields` in key order) that every row satisfying `p` lies in: from
 * the comparisons and IN lists ANDed at its top, column by column while each earlier one is fixed
 * to one value. Undefined when the first column is not bounded.
 */
function predicateBounds(p: Predicate, fields: DataField[]): KeyBounds | undefined {
  const leaves = p.kind === 'and' ? p.args : [p];
  const lower: Value[] = [];
  const upper: Value[] = [];
  for (const f of fields) {
    let lo: Value | undefined;
    let hi: Value | undefined;
    const cmp = (a: Value, b: Value) => compareValues(f.type, a, b);
    for (const a of leaves) {
      if ((a.kind !== 'compare' && a.kind !== 'in') || a.column !== f.name) continue;
      let l: Value | undefined;
      let h: Value | undefined;
      if (a.kind === 'in') {
        if (a.negated || a.values.length === 0 || a.values.some((v) => v === null)) continue;
        const sorted = [...a.values].sort(cmp);
        [l, h] = [sorted[0], sorted[sorted.length - 1]];
      } else if (a.value === null || a.op === '!=') {
        continue;
      } else {
        if (a.op !== '<' && a.op !== '<=') l = a.value;
        if (a.op !== '>' && a.op !== '>=') h = a.value;
      }
      if (l !== undefined && (lo === undefined || cmp(l, lo) > 0)) lo = l;
      if (h !== undefined && (hi === undefined || cmp(h, hi) < 0)) hi = h;
    }
    if (lo !== undefined) lower.push(lo);
    if (hi !== undefined) upper.push(hi);
    if (lo === undefined || hi === undefined || cmp(lo, hi) !== 0 || lower.length !== upper.length) break;
  }
  return lower.length === 0 && upper.length === 0 ? undefined : { lower, upper };
}
