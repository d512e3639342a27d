/**
 * The input of a merge engine: every version of every key, in merge order (key, sequence
 * fields, sequence number), as a plan of (source table, row) pairs, cut into key groups. Engines
 * read columns through `column(c)`, which resolves a version to its source's typed buffers.
 */
import type * as arrow from 'apache-arrow';
import type { DataField, TableSchema, Value } from '../schema/types.js';
import {
  boolAt,
  columnChunk,
  comparatorFor,
  decimalUnscaledAt,
  int64At,
  isNullAt,
  stringAt,
  valueAt,
  type ChunkComparator,
  type ColumnChunk,
} from './column-access.js';

/** One column across all sources, addressed by version index. */
export class VersionColumn {
  private readonly cmp: ChunkComparator;

  constructor(
    readonly field: DataField,
    readonly chunks: ColumnChunk[],
    private readonly source: Uint16Array,
    private readonly row: Uint32Array,
  ) {
    this.cmp = comparatorFor(chunks[0].kind);
  }

  /** True when the column is NULL in version `v`. */
  isNull(v: number): boolean {
    return isNullAt(this.chunks[this.source[v]], this.row[v]);
  }

  /** Compares the column's values of versions `v` and `w`, NULL first. */
  compare(v: number, w: number): number {
    return this.cmp(this.chunks[this.source[v]], this.row[v], this.chunks[this.source[w]], this.row[w]);
  }

  /** The value of an int or float column (caller checked non-null). */
  number(v: number): number {
    return this.chunks[this.source[v]].num![this.row[v]];
  }

  /** The value of a BIGINT or TIMESTAMP column. */
  int64(v: number): bigint {
    return int64At(this.chunks[this.source[v]], this.row[v]);
  }

  /** The unscaled value of a DECIMAL column. */
  decimal(v: number): bigint {
    return decimalUnscaledAt(this.chunks[this.source[v]], this.row[v]);
  }

  /** The text of a STRING column. */
  string(v: number): string {
    return stringAt(this.chunks[this.source[v]], this.row[v]);
  }

  /** The value of a BOOLEAN column. */
  bool(v: number): boolean {
    return boolAt(this.chunks[this.source[v]], this.row[v]);
  }

  /** The row-API value (off the hot path: tests, error messages). */
  value(v: number): Value {
    return valueAt(this.chunks[this.source[v]], this.row[v]);
  }
}

/** The versions of a merge, grouped by key. */
export class VersionSet {
  private readonly columns: (VersionColumn | undefined)[] = [];

  constructor(
    readonly schema: TableSchema,
    /** Single-batch tables: the schema's columns, then _SEQUENCE_NUMBER and _VALUE_KIND. */
    readonly sources: arrow.Table[],
    /** Per version, in merge order: its source table and row. */
    readonly source: Uint16Array,
    readonly row: Uint32Array,
    /** Per version: its row kind and its sequence number (absolute in reads, arrival in buffers). */
    readonly kind: Uint8Array,
    readonly sequence: Float64Array,
    /** Exclusive end of each key group (positions in the version arrays). */
    readonly groupEnd: Uint32Array,
    readonly groupCount: number,
  ) {}

  /** Number of versions. */
  get size(): number {
    return this.source.length;
  }

  /** Groups [from, to) as a VersionSet of their own, sharing this one's arrays. */
  slice(from: number, to: number): VersionSet {
    const start = from === 0 ? 0 : this.groupEnd[from - 1];
    const end = to === 0 ? 0 : this.groupEnd[to - 1];
    const groupEnd = new Uint32Array(to - from);
    for (let g = from; g < to; g++) groupEnd[g - from] = this.groupEnd[g] - start;
    return new VersionSet(
      this.schema,
      this.sources,
      this.source.subarray(start, end),
      this.row.subarray(start, end),
      this.kind.subarray(start, end),
      this.sequence.subarray(start, end),
      groupEnd,
      to - from,
    );
  }

  /** Column `c` (schema order) across sources, built on first use. */
  column(c: number): VersionColumn {
    let col = this.columns[c];
    if (!col) {
      const chunks = this.sources.map((t) => columnChunk(t, c));
      this.columns[c] = col = new VersionColumn(this.schema.fields[c], chunks, this.source, this.row);
    }
    return col;
  }
}
