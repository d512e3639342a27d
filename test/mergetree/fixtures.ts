/** Small factories for merge-tree tests: schemas, physical tables from rows, and rows back. */
import type * as arrow from 'apache-arrow';
import { KIND_FIELD, SEQUENCE_FIELD } from '../../lib/format/arrow-schema.js';
import { rowsToTable, tableToRows } from '../../lib/format/columns.js';
import { mergeConfig, type MergeConfig } from '../../lib/mergetree/merge-config.js';
import { mergeEngineFor } from '../../lib/mergetree/merge-function.js';
import { mergeSortedRuns } from '../../lib/mergetree/sort-merge-reader.js';
import { WriteBuffer } from '../../lib/mergetree/write-buffer.js';
import type { DataFileMeta } from '../../lib/manifest/types.js';
import type { DataType, Row, TableSchema, TypeRoot } from '../../lib/schema/types.js';

/** A column spec: "name TYPE" with optional "NOT NULL", e.g. "id BIGINT NOT NULL", "amount DECIMAL(10,2)". */
export function schemaOf(columns: string[], primaryKeys: string[]): TableSchema {
  const fields = columns.map((spec, i) => {
    const m = /^(\w+)\s+(\w+)(?:\((\d+)(?:,(\d+))?\))?(\s+NOT NULL)?$/.exec(spec.trim());
    if (!m) throw new Error(`bad column spec ${spec}`);
    const type: DataType = { root: m[2] as TypeRoot, nullable: !m[5] && !primaryKeys.includes(m[1]) };
    if (m[3] !== undefined) type.precision = Number(m[3]);
    if (m[4] !== undefined) type.scale = Number(m[4]);
    return { id: i + 1, name: m[1], type };
  });
  return {
    version: 1,
    id: 0,
    fields,
    highestFieldId: fields.length,
    partitionKeys: [],
    primaryKeys,
    options: {},
    timeMillis: 0,
  };
}

/** A record as tests see it: the row plus its kind and sequence number. */
export interface Rec {
  row: Row;
  kind: number;
  seq: number;
}

/** A physical-layout table (columns, _SEQUENCE_NUMBER, _VALUE_KIND) from records, in the given order. */
export function physicalTable(schema: TableSchema, recs: Rec[]): arrow.Table {
  return rowsToTable(
    schema.fields,
    recs.map((r) => r.row),
    { sequence: recs.map((r) => r.seq), kind: recs.map((r) => r.kind) },
  );
}

/** Records of a physical-layout table, in table order. */
export function recordsOf(schema: TableSchema, table: arrow.Table): Rec[] {
  return tableToRows(table, [...schema.fields, SEQUENCE_FIELD, KIND_FIELD]).map((r) => {
    const { _SEQUENCE_NUMBER: seq, _VALUE_KIND: kind, ...row } = r;
    return { row, kind: Number(kind), seq: Number(seq) };
  });
}

/** A write buffer with defaults suited to tests (large buffer, no spill). */
export function bufferOf(
  schema: TableSchema,
  merge: Partial<MergeConfig>,
  opts: { writeBufferSize?: number; spillable?: boolean; keepRawChangelog?: boolean } = {},
): WriteBuffer {
  return new WriteBuffer({
    schema,
    merge: mergeConfig(merge),
    writeBufferSize: opts.writeBufferSize ?? 64 << 20,
    spillable: opts.spillable ?? false,
    keepRawChangelog: opts.keepRawChangelog,
  });
}

/** Writes rows (kinds default +I) through a fresh write buffer and returns the flushed records. */
export function writeAndFlush(schema: TableSchema, merge: Partial<MergeConfig>, rows: Row[], kinds?: number[]): Rec[] {
  const b = bufferOf(schema, merge);
  b.add(rows, kinds);
  return recordsOf(schema, b.flush().data);
}

/** Merges runs given as records (each run: one record per key, sorted; seqs absolute, base 0). */
export function mergeRecords(
  schema: TableSchema,
  merge: Partial<MergeConfig>,
  runs: Rec[][],
  opts: { dropDeletes?: boolean; keepKinds?: boolean } = {},
): Rec[] {
  const out = mergeSortedRuns(
    runs.map((recs) => ({ table: physicalTable(schema, recs), sequenceBase: 0 })),
    {
      schema,
      keyColumns: schema.primaryKeys,
      engine: mergeEngineFor(mergeConfig(merge)),
      dropDeletes: opts.dropDeletes ?? true,
      keepKinds: opts.keepKinds,
    },
  );
  return recordsOf(schema, out);
}

/** `+I` etc. as kind bytes. */
export const I = 0,
  UB = 1,
  UA = 2,
  D = 3;

/** A file covering keys [min, max]. */
export function file(name: string, min: number, max: number, extra: Partial<DataFileMeta> = {}): DataFileMeta {
  return {
    fileName: name,
    fileSize: 100,
    rowCount: max - min + 1,
    minKey: [min],
    maxKey: [max],
    sequenceBase: 0,
    minSequenceNumber: 0,
    maxSequenceNumber: 0,
    schemaId: 0,
    level: 0,
    creationTime: 0,
    deleteRowCount: 0,
    fileSource: 'APPEND',
    ...extra,
  };
}
