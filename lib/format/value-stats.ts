/**
 * Value statistics of a data file: per column (by field id) the smallest and largest non-null
 * value and the number of nulls (Paimon's `valueStats` of DataFileMeta). Collected for append
 * tables, whose reads never merge, so a file whose range cannot match a filter can be skipped
 * unread (lib/table/read-pruning.ts); a primary-key table prunes by key only. BYTES columns get
 * a null count only.
 */
import type * as arrow from 'apache-arrow';
import { compareValues } from '../schema/compare.js';
import type { DataField, DataType, Value } from '../schema/types.js';
import { fromJsonValue, toJsonValue, type JsonValue } from '../schema/value-codec.js';
import { tableToRows } from './columns.js';

/** One column's statistics as stored (JSON values, see toJsonValue). */
export interface ColumnValueStats {
  /** The column's type root when written: a reader of a widened column compares nothing with it. */
  type: string;
  min: JsonValue;
  max: JsonValue;
  nullCount: number;
}

/** A file's value statistics by field id (as a string). */
export type ValueStats = Record<string, ColumnValueStats>;

/** Statistics being collected: decoded values, merged piece by piece. */
export interface ValueStatsAcc {
  fields: DataField[];
  min: Value[];
  max: Value[];
  nulls: number[];
}

/** The statistics of `fields` over the rows of `data` (whose columns carry the fields' names). */
export function valueStatsOf(fields: DataField[], data: arrow.Table): ValueStatsAcc {
  const acc: ValueStatsAcc = {
    fields,
    min: fields.map(() => null),
    max: fields.map(() => null),
    nulls: fields.map(() => 0),
  };
  const rows = tableToRows(data, fields);
  fields.forEach((f, i) => {
    const ordered = f.type.root !== 'BYTES';
    for (const r of rows) {
      const v = r[f.name] ?? null;
      if (v === null) {
        acc.nulls[i]++;
        continue;
      }
      if (!ordered) continue;
      if (acc.min[i] === null || compareValues(f.type, v, acc.min[i]) < 0) acc.min[i] = v;
      if (acc.max[i] === null || compareValues(f.type, v, acc.max[i]) > 0) acc.max[i] = v;
    }
  });
  return acc;
}

/** The statistics of two pieces of one file. */
export function mergeValueStats(a: ValueStatsAcc | undefined, b: ValueStatsAcc | undefined): ValueStatsAcc | undefined {
  if (a === undefined || b === undefined) return a ?? b;
  const pick = (t: DataType, x: Value, y: Value, sign: number) =>
    x === null ? y : y === null ? x : compareValues(t, y, x) * sign < 0 ? y : x;
  return {
    fields: a.fields,
    min: a.fields.map((f, i) => pick(f.type, a.min[i], b.min[i], 1)),
    max: a.fields.map((f, i) => pick(f.type, a.max[i], b.max[i], -1)),
    nulls: a.nulls.map((n, i) => n + b.nulls[i]),
  };
}

/** The stored form of collected statistics. */
export function storedValueStats(acc: ValueStatsAcc): ValueStats {
  const out: ValueStats = {};
  acc.fields.forEach((f, i) => {
    out[String(f.id)] = {
      type: f.type.root,
      min: toJsonValue(f.type, acc.min[i]),
      max: toJsonValue(f.type, acc.max[i]),
      nullCount: acc.nulls[i],
    };
  });
  return out;
}

/**
 * A column's bounds in a file, decoded for `field` as the reader's schema has it, or undefined
 * when the file has no statistics for it (written before statistics, or its type changed since).
 */
export function columnBounds(
  stats: ValueStats | undefined,
  field: DataField,
): { min: Value; max: Value; nullCount: number } | undefined {
  const s = stats?.[String(field.id)];
  if (s === undefined || s.type !== field.type.root) return undefined;
  return { min: fromJsonValue(field.type, s.min), max: fromJsonValue(field.type, s.max), nullCount: s.nullCount };
}
