/**
 * A piece of a flush's merged output gathered from the buffered tables it names (the encoder
 * pool's workers do this beside the thread that sorted and merged; see encoder-pool.ts
 * `openGathered`). Output row k is row `row[k]` of `sources[source[k]]` (of `sources[0]` when
 * `source` is null) with `_SEQUENCE_NUMBER` `sequence[k]` and `_VALUE_KIND` `kind[k]`: the rows
 * the flush would have materialized on the calling thread, the same values in the same order.
 */
import * as arrow from 'apache-arrow';
import { InvalidArgumentError } from '../errors.js';
import { unpackTable, type PackedTable } from './arrow-transfer.js';
import { tableFromColumns } from './column-layout.js';
import { gatherRows, takeRows } from './columns.js';

/** The rows of one piece, by source table and row, with their stored sequence numbers and kinds. */
export interface GatherPiece {
  source: Uint16Array | null;
  row: Uint32Array;
  /** Stored `_SEQUENCE_NUMBER`s (Int64). */
  sequence: BigInt64Array;
  /** `_VALUE_KIND`s. */
  kind: Int8Array;
}

/**
 * The piece as a table of `schema` (the physical layout: the table's columns, then
 * `_SEQUENCE_NUMBER` and `_VALUE_KIND`), gathered from `sources` (single-batch tables of the
 * table's columns, with or without the system columns after them).
 */
export function gatherPiece(schema: arrow.Schema, sources: arrow.Table[], piece: GatherPiece): arrow.Table {
  const count = piece.row.length;
  const nf = schema.fields.length - 2;
  if (
    piece.sequence.length !== count ||
    piece.kind.length !== count ||
    (piece.source !== null && piece.source.length !== count)
  ) {
    throw new InvalidArgumentError(
      `a gathered piece of ${count} rows came with ${piece.sequence.length} sequence numbers and ${piece.kind.length} kinds; pass one of each per row`,
    );
  }
  const indexes = Array.from({ length: nf }, (_, c) => c);
  const values =
    piece.source === null
      ? takeRows(sources[0].selectAt(indexes), piece.row)
      : gatherRows(
          sources.map((t) => t.selectAt(indexes)),
          piece.source,
          piece.row,
        );
  const children = values.batches[0].data.children.slice();
  children.push(
    arrow.makeData({ type: schema.fields[nf].type as arrow.Int64, length: count, nullCount: 0, data: piece.sequence }),
  );
  children.push(
    arrow.makeData({ type: schema.fields[nf + 1].type as arrow.Int8, length: count, nullCount: 0, data: piece.kind }),
  );
  return tableFromColumns(schema, children, count);
}

/** The source tables shared with this thread (shareTable), over the table's columns of `schema` (the physical layout). */
export function gatherSources(schema: arrow.Schema, sources: PackedTable[]): arrow.Table[] {
  const columns = new arrow.Schema(schema.fields.slice(0, schema.fields.length - 2));
  return sources.map((p) => {
    if (p.batches.length !== 1)
      throw new InvalidArgumentError(
        `a shared source table came in ${p.batches.length} batches; share single-batch tables`,
      );
    return unpackTable(p, columns);
  });
}
