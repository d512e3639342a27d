/**
 * Arrow tables across a thread boundary without an IPC encode: a table's batches as their
 * buffers (views of the Data tree) posted with a transfer list, so the receiving thread gets the
 * very memory the sender built, and rebuilt there over the receiver's schema. A buffer that is a
 * small view of a larger region (or a region another thread may not take) is copied first; a
 * region several views share is transferred once.
 */
import * as arrow from 'apache-arrow';
import { SchemaMismatchError } from '../errors.js';
import { tableFromColumns } from './column-layout.js';

/** One Data node: its length, offset, null count, buffers and children (types come from the schema). */
export interface PackedData {
  length: number;
  offset: number;
  nullCount: number;
  valueOffsets?: ArrayBufferView;
  values?: ArrayBufferView;
  nullBitmap?: ArrayBufferView;
  typeIds?: ArrayBufferView;
  children: PackedData[];
}

/** A table as its batches' packed columns (see packTable). */
export interface PackedTable {
  batches: { length: number; columns: PackedData[] }[];
}

/** A view shorter than this share of its region is copied rather than moving the whole region. */
const COPY_BELOW_SHARE = 0.5;

/**
 * The table's buffers and the list of regions to transfer with them. After posting with that list,
 * the table's memory is gone from this thread: do not read it again.
 */
export function packTable(t: arrow.Table): { packed: PackedTable; transfer: ArrayBuffer[] } {
  const transfer = new Set<ArrayBuffer>();
  const own = (v: ArrayBufferView | undefined): ArrayBufferView | undefined => {
    if (v === undefined || v === null || v.byteLength === 0) return undefined;
    const region = v.buffer;
    if (!(region instanceof ArrayBuffer) || v.byteLength < region.byteLength * COPY_BELOW_SHARE) {
      // A slice of a large region (or shared memory): copy the bytes into a region of their own.
      const copy = new Uint8Array(v.byteLength);
      copy.set(new Uint8Array(v.buffer, v.byteOffset, v.byteLength));
      transfer.add(copy.buffer);
      return retype(v, copy.buffer, 0);
    }
    transfer.add(region);
    return v;
  };
  const packed = packBuffers(t, own, 'a merged read returns plain columns');
  return { packed, transfer: [...transfer] };
}

/**
 * The table's layout with each buffer put where `place` puts it (undefined: no buffer); `plain`
 * says why a dictionary-encoded column is refused.
 */
function packBuffers(
  t: arrow.Table,
  place: (v: ArrayBufferView | undefined) => ArrayBufferView | undefined,
  plain: string,
): PackedTable {
  const pack = (d: arrow.Data): PackedData => {
    if (d.dictionary !== undefined)
      throw new SchemaMismatchError(`column of type ${String(d.type)} is dictionary-encoded; ${plain}`);
    return {
      length: d.length,
      offset: d.offset,
      nullCount: d.nullCount,
      valueOffsets: place(d.valueOffsets as ArrayBufferView | undefined),
      values: place(d.values as ArrayBufferView | undefined),
      nullBitmap: d.nullCount > 0 ? place(d.nullBitmap as ArrayBufferView | undefined) : undefined,
      typeIds: place(d.typeIds as ArrayBufferView | undefined),
      children: d.children.map(pack),
    };
  };
  return { batches: t.batches.map((b) => ({ length: b.numRows, columns: b.data.children.map(pack) })) };
}

/**
 * The table's buffers in shared memory, for threads that read it without a copy: views already on
 * a SharedArrayBuffer as they are (a table gathered with `sharedMemory`), any other buffer copied
 * once into one SharedArrayBuffer per table. Posting the result shares the memory, copies nothing;
 * unpackTable rebuilds the table over it. Nobody may change those buffers while they are shared.
 */
export function shareTable(t: arrow.Table): PackedTable {
  const visit = (d: arrow.Data, f: (v: ArrayBufferView | undefined) => void): void => {
    f(d.valueOffsets as ArrayBufferView | undefined);
    f(d.values as ArrayBufferView | undefined);
    if (d.nullCount > 0) f(d.nullBitmap as ArrayBufferView | undefined);
    f(d.typeIds as ArrayBufferView | undefined);
    for (const c of d.children) visit(c, f);
  };
  const unshared = (v: ArrayBufferView | undefined): v is ArrayBufferView =>
    v !== undefined && v !== null && v.byteLength > 0 && !(v.buffer instanceof SharedArrayBuffer);
  // One region for every buffer that is not shared yet, each at an 8-byte aligned offset.
  let size = 0;
  for (const b of t.batches)
    for (const d of b.data.children) visit(d, (v) => unshared(v) && (size += align8(v.byteLength)));
  const region = new SharedArrayBuffer(size);
  let at = 0;
  const share = (v: ArrayBufferView | undefined): ArrayBufferView | undefined => {
    if (v === undefined || v === null || v.byteLength === 0) return undefined;
    if (!unshared(v)) return v;
    new Uint8Array(region, at, v.byteLength).set(new Uint8Array(v.buffer, v.byteOffset, v.byteLength));
    const view = retype(v, region, at);
    at += align8(v.byteLength);
    return view;
  };
  return packBuffers(t, share, 'buffered rows are plain columns');
}

function align8(n: number): number {
  return (n + 7) & ~7;
}

/** The table a packTable (or shareTable) built, over `schema` (the sender's table had exactly its fields, in order). */
export function unpackTable(p: PackedTable, schema: arrow.Schema): arrow.Table {
  const unpack = (d: PackedData, type: arrow.DataType): arrow.Data => {
    const childTypes = (type.children ?? []) as arrow.Field[];
    if (childTypes.length !== d.children.length)
      throw new SchemaMismatchError(
        `a transferred column of type ${String(type)} has ${d.children.length} children, expected ${childTypes.length}`,
      );
    return arrow.makeData({
      type,
      length: d.length,
      offset: d.offset,
      nullCount: d.nullCount,
      valueOffsets: d.valueOffsets,
      data: d.values,
      nullBitmap: d.nullBitmap,
      typeIds: d.typeIds,
      children: d.children.map((c, i) => unpack(c, childTypes[i].type)),
    } as never) as arrow.Data;
  };
  const batches = p.batches.map((b) => {
    if (b.columns.length !== schema.fields.length)
      throw new SchemaMismatchError(
        `a transferred batch has ${b.columns.length} columns, the schema ${schema.fields.length}`,
      );
    return tableFromColumns(
      schema,
      b.columns.map((c, i) => unpack(c, schema.fields[i].type)),
      b.length,
    ).batches[0];
  });
  return new arrow.Table(schema, batches);
}

/** A view of the same kind as `v` over `region` from `byteOffset`. */
function retype(v: ArrayBufferView, region: ArrayBufferLike, byteOffset: number): ArrayBufferView {
  const Kind = v.constructor as {
    new (b: ArrayBufferLike, o: number, n: number): ArrayBufferView;
    BYTES_PER_ELEMENT?: number;
  };
  const per = Kind.BYTES_PER_ELEMENT ?? 1;
  return new Kind(region, byteOffset, v.byteLength / per);
}
