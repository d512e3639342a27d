/**
 * Which string columns of a file are written without a dictionary. parquet-rs dictionary-encodes
 * a column by hashing every value into the dictionary and falls back to plain pages only past the
 * dictionary page limit (1 MB): a string column whose values are nearly all distinct (ids, names
 * unique per key) fits the limit at 65,536 or 131,072 rows, so every value is hashed and stored once
 * in the dictionary plus once as an index, for nothing. On the compaction bench's output (892,678
 * rows, two such columns of 131,072-row groups) the encode costs 1,013 ms CPU with dictionaries and
 * 685 ms without, and the file is 15.6 MB against 14.8 MB (zstd compresses the plain strings as well).
 */
import * as arrow from 'apache-arrow';
import { validityOf } from './column-layout.js';

/** Rows of a file's first piece looked at (at most). */
export const DICTIONARY_SAMPLE_ROWS = 65_536;
/** Fewer non-null values than this decide nothing: the default (a dictionary) stays. */
const MIN_SAMPLE_VALUES = 4_096;
/** A column whose sampled values are at least this share distinct is written plain. */
const UNIQUE_SHARE = 0.9;

/**
 * The Utf8 columns of `rows` (system columns excluded: never dictionary-encoded) whose first
 * DICTIONARY_SAMPLE_ROWS rows hold at least 90 % distinct values among at least 4,096 non-null ones:
 * what WriteDataFileOptions.uniqueColumns takes for the file `rows` start.
 */
export function uniqueStringColumns(rows: arrow.Table, systemColumns = 2): string[] {
  const out: string[] = [];
  const fields = rows.schema.fields;
  for (let c = 0; c < fields.length - systemColumns; c++) {
    const f = fields[c];
    if (!arrow.DataType.isUtf8(f.type)) continue;
    const data = rows.getChildAt(c)?.data[0];
    if (data !== undefined && mostlyDistinct(data)) out.push(f.name);
  }
  return out;
}

/** True when the first DICTIONARY_SAMPLE_ROWS values of a Utf8 chunk are at least UNIQUE_SHARE distinct. */
function mostlyDistinct(data: arrow.Data): boolean {
  const n = Math.min(data.length, DICTIONARY_SAMPLE_ROWS);
  const offsets = data.valueOffsets as Int32Array;
  const bytes = data.values as Uint8Array;
  const validity = validityOf(data);
  // Open addressing over row numbers (+1; 0 is empty), at most half full.
  let size = 1;
  while (size < 2 * n) size <<= 1;
  const slots = new Int32Array(size);
  const mask = size - 1;
  let values = 0;
  let distinct = 0;
  for (let i = 0; i < n; i++) {
    // A slice's offsets start at its first row; its validity bitmap at the parent's.
    const bit = data.offset + i;
    if (validity !== null && (validity[bit >> 3] & (1 << (bit & 7))) === 0) continue;
    values++;
    const start = offsets[i];
    const end = offsets[i + 1];
    let h = 0x811c9dc5;
    for (let b = start; b < end; b++) h = Math.imul(h ^ bytes[b], 0x01000193);
    for (let s = h & mask; ; s = (s + 1) & mask) {
      const held = slots[s];
      if (held === 0) {
        slots[s] = i + 1;
        distinct++;
        break;
      }
      if (sameBytes(bytes, offsets[held - 1], offsets[held], start, end)) break;
    }
  }
  return values >= MIN_SAMPLE_VALUES && distinct >= UNIQUE_SHARE * values;
}

function sameBytes(bytes: Uint8Array, a: number, aEnd: number, b: number, bEnd: number): boolean {
  if (aEnd - a !== bEnd - b) return false;
  for (; a < aEnd; a++, b++) if (bytes[a] !== bytes[b]) return false;
  return true;
}
