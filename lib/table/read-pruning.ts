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
import { mayMatch, predicateColumns, type ColumnBounds, type Predicate } from './predicate.js';
import type { Table } from './table.js';

/** What a read's pruning did, for `--explain`. */
export interface ReadExplain {
  snapshotId?: number;
  schemaId: number;
  /** The predicate as parsed, or undefined for an unfiltered read. */
  predicate?: Predicate;
  /** Live files of the snapshot (in the requested partitions). */
  liveFiles: number;
  skippedByPartition: number;
  skippedByKeyRange: number;
  /** Append tables: files whose column min / max / null counts cannot match. */
  skippedByValueStats: number;
  filesRead: number;
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

  constructor(
    private readonly table: Table,
    readonly predicate: Predicate,
  ) {
    this.types = new Map(table.schema.fields.map((f) => [f.name, f.type]));
    const used = predicateColumns(predicate);
    this.usesPartition = table.schema.partitionKeys.some((k) => used.includes(k));
    this.usesKey = table.schema.primaryKeys.some((k) => used.includes(k) && !table.schema.partitionKeys.includes(k));
    const append = table.schema.primaryKeys.length === 0;
    this.valueFields = append ? table.schema.fields.filter((f) => used.includes(f.name) && !table.schema.partitionKeys.includes(f.name)) : [];
  }

  /** Append tables: false when the file's value statistics show no row can match. */
  fileValuesMay = (e: ManifestEntry): boolean => {
    if (this.valueFields.length === 0 || e.file.valueStats === undefined) return true;
    const out = new Map<string, ColumnBounds>();
    for (const f of this.valueFields) {
      const b = columnBounds(e.file.valueStats, f);
      if (b === undefined) continue; // no statistics for it in this file: know nothing
      const nonNull = b.nullCount < e.file.rowCount;
      out.set(f.name, { ...(nonNull && f.type.root !== 'BYTES' ? { min: b.min, max: b.max } : {}), mayBeNull: b.nullCount > 0, mayBeNonNull: nonNull });
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
        out.set(k, f.type.root === 'STRING' ? { min: '', max: '', mayBeNull: true, mayBeNonNull: true } : { mayBeNull: true, mayBeNonNull: false });
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
