/**
 * Statistics of a key-sorted data table about to be (or just) written as a data file: the first
 * and last key, the range of stored sequence numbers and the retractions it holds.
 */
import type * as arrow from 'apache-arrow';
import { toJsonValue } from '../schema/values.js';
import { KIND_COLUMN, RowKind, SEQUENCE_COLUMN, type DataField } from '../schema/types.js';
import type { JsonValue } from '../schema/value-codec.js';
import { tableToRows } from './columns.js';
import { valueStatsOf, type ValueStatsAcc } from './value-stats.js';

export interface FileStats {
  rowCount: number;
  minKey: JsonValue[];
  maxKey: JsonValue[];
  /** Smallest and largest stored `_SEQUENCE_NUMBER` (before the file's sequence base is added). */
  minStoredSequence: number;
  maxStoredSequence: number;
  /** Rows of kind -U or -D. */
  deleteRowCount: number;
  /** Per-column min / max / null count, when asked for (append tables: value-stats.ts). */
  valueStats?: ValueStatsAcc;
}

/** The statistics of `data`, which is sorted by `keyFields`; with `valueFields`, their value statistics too. */
export function fileStatsOf(keyFields: DataField[], data: arrow.Table, valueFields?: DataField[]): FileStats {
  const n = data.numRows;
  const first = tableToRows(data.slice(0, 1), keyFields)[0];
  const last = tableToRows(data.slice(n - 1, n), keyFields)[0];
  let minSeq = Number.MAX_SAFE_INTEGER;
  let maxSeq = -1;
  let deletes = 0;
  for (const chunk of data.getChild(SEQUENCE_COLUMN)!.data) {
    // Arrow has already applied the slice offset to `values`. Read as 32-bit word pairs (sequence
    // numbers are below 2^53): a BigInt per row costs more than the rest of the statistics.
    const values = chunk.values as BigInt64Array;
    const words = new Int32Array(values.buffer, values.byteOffset, 2 * chunk.length);
    for (let i = 0; i < chunk.length; i++) {
      const v = words[2 * i + 1] * 4294967296 + (words[2 * i] >>> 0);
      if (v < minSeq) minSeq = v;
      if (v > maxSeq) maxSeq = v;
    }
  }
  for (const chunk of data.getChild(KIND_COLUMN)!.data) {
    const values = chunk.values as Int8Array;
    for (let i = 0; i < chunk.length; i++) {
      const k = values[i];
      if (k === RowKind.UPDATE_BEFORE || k === RowKind.DELETE) deletes++;
    }
  }
  return {
    rowCount: n,
    minKey: keyFields.map((k) => toJsonValue(k.type, first[k.name])),
    maxKey: keyFields.map((k) => toJsonValue(k.type, last[k.name])),
    minStoredSequence: minSeq,
    maxStoredSequence: maxSeq,
    deleteRowCount: deletes,
    ...(valueFields === undefined ? {} : { valueStats: valueStatsOf(valueFields, data) }),
  };
}
