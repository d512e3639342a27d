/**
 * Built-in sinks of a stream: a user callback, JSON lines to a writer, and another varve table
 * (streaming ETL). The table sink is exactly-once: each split is one commit whose identifier is
 * the split's id (`<consumer>/<snapshot>/<partition>/<bucket>`), so a split delivered again after
 * a crash between the commit and the acknowledgement finds its commit and writes nothing.
 */
import { InvalidArgumentError } from '../errors.js';
import { tableToRows } from '../format/columns.js';
import { ROW_KIND_NAMES, type Row, type RowKindByte, type RowKindName } from '../schema/types.js';
import { toDisplayValue } from '../schema/values.js';
import type { Table } from '../table/table.js';
import type { ChangeBatch, StreamSink } from './delivery.js';
import { kindsOf } from './split.js';

/** One change as a user sees it. */
export interface Change {
  snapshot: number;
  kind: RowKindName;
  /** Column name → JS value (lib/schema/types.ts: BIGINT as bigint, DECIMAL as text, …). */
  row: Row;
  partition: string;
  bucket: number;
}

/** The changes of a batch as row objects, in order. */
export function changesOf(batch: ChangeBatch): Change[] {
  const rows = tableToRows(batch.data, batch.table.schema.fields);
  const kinds = kindsOf(batch.data);
  return rows.map((row, i) => ({
    snapshot: batch.snapshotId,
    kind: ROW_KIND_NAMES[kinds[i]],
    row,
    partition: batch.partition,
    bucket: batch.bucket,
  }));
}

/** A sink calling `fn` with each split's changes (an empty split is not passed on). */
export function callbackSink(fn: (changes: Change[], batch: ChangeBatch) => unknown): StreamSink {
  return {
    async write(batch) {
      if (batch.data.numRows === 0) return;
      await fn(changesOf(batch), batch);
    },
  };
}

/** One JSON line per change: `{"snapshot": N, "kind": "+I", "row": {…}}`, values in display form. */
export function changeToJsonLine(table: Table, change: Change): string {
  return `${JSON.stringify({ snapshot: change.snapshot, kind: change.kind, row: displayRow(table, change) })}\n`;
}

/** The row of a change as a JSON line shows it (columns in schema order, display values). */
export function displayRow(table: Table, change: Change): Record<string, unknown> {
  const row: Record<string, unknown> = {};
  for (const f of table.schema.fields) {
    const v = change.row[f.name];
    row[f.name] = v === null || v === undefined ? null : toDisplayValue(f.type, v);
  }
  return row;
}

/** A sink writing one JSON line per change to `write` (e.g. stdout), a split at a time. */
export function jsonlSink(write: (text: string) => unknown): StreamSink {
  return callbackSink(async (changes, batch) => {
    await write(changes.map((c) => changeToJsonLine(batch.table, c)).join(''));
  });
}

/** Options of a table sink. */
export interface TableSinkOptions {
  /** Stable across restarts: commits are idempotent per (commitUser, commitIdentifier). @default `stream:<source>:<consumer>` */
  commitUser?: string;
}

/**
 * A sink writing every change, with its row kind, into `target` — one commit per split, its
 * identifier the split id. The target's columns must all exist in the source.
 */
export function tableSink(target: Table, opts: TableSinkOptions = {}): StreamSink {
  return {
    async write(batch) {
      if (batch.data.numRows === 0) return;
      const source = batch.table;
      const { rows, kinds } = rowsForTarget(target, batch);
      await target.write(rows, {
        kinds,
        commitUser: opts.commitUser ?? `stream:${source.name}:${batch.consumerId}`,
        commitIdentifier: batch.splitId,
      });
    },
  };
}

/**
 * The rows of a split for a target table, by column name, with their row kinds. Throws
 * InvalidArgumentError when the target has a column the source lacks.
 */
export function rowsForTarget(target: Table, batch: ChangeBatch): { rows: Row[]; kinds: RowKindByte[] } {
  const source = batch.table;
  const fields = target.schema.fields.map((f) => {
    const s = source.schema.fields.find((x) => x.name === f.name);
    if (!s)
      throw new InvalidArgumentError(
        `column ${f.name} of the sink table ${target.name} is not a column of ${source.name}; the sink writes the source's columns by name`,
      );
    return s;
  });
  return { rows: tableToRows(batch.data, fields), kinds: Array.from(kindsOf(batch.data)) as RowKindByte[] };
}
