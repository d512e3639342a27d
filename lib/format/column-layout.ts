/**
 * The physical layout of the Arrow types varve stores, and raw views of a column chunk's buffers.
 *
 * apache-arrow's conventions, which every kernel here relies on: for fixed-width types `values` is
 * already sliced to the chunk (row i is at element i·stride); for Bool values and for every null
 * bitmap, row i is bit `offset + i` (LSB-first, 1 = valid); for Utf8/Binary `valueOffsets` is
 * sliced to the chunk (length + 1 entries) and indexes the unsliced `values` bytes.
 */
import * as arrow from 'apache-arrow';
import { SchemaMismatchError } from '../errors.js';

/** How a column's values are laid out: bit-packed, fixed width in bytes, or offsets + bytes. */
export type ColumnLayout = { kind: 'bool' } | { kind: 'fixed'; width: 1 | 2 | 4 | 8 | 16 } | { kind: 'var' };

/** The layout of an Arrow type; SchemaMismatchError naming `column` for a type without a kernel. */
export function layoutOf(type: arrow.DataType, column: string): ColumnLayout {
  if (arrow.DataType.isBool(type)) return { kind: 'bool' };
  if (arrow.DataType.isUtf8(type) || arrow.DataType.isBinary(type)) return { kind: 'var' };
  if (arrow.DataType.isInt(type)) return { kind: 'fixed', width: (type.bitWidth / 8) as 1 | 2 | 4 | 8 };
  if (arrow.DataType.isFloat(type) && type.precision !== arrow.Precision.HALF) {
    return { kind: 'fixed', width: type.precision === arrow.Precision.SINGLE ? 4 : 8 };
  }
  if (arrow.DataType.isDecimal(type) && type.bitWidth === 128) return { kind: 'fixed', width: 16 };
  if (arrow.DataType.isDate(type)) return { kind: 'fixed', width: type.unit === arrow.DateUnit.DAY ? 4 : 8 };
  if (arrow.DataType.isTimestamp(type)) return { kind: 'fixed', width: 8 };
  throw new SchemaMismatchError(
    `column ${column} has Arrow type ${String(type)}, which varve's column kernels do not handle; read it through readDataFile, which normalises types`,
    column,
  );
}

/**
 * Where a kernel's output buffers come from: zeroed memory of `bytes` bytes, a buffer of its own
 * or an 8-byte aligned region of a larger one (RegionRing). `ownMemory` (the default) is this
 * thread's; `sharedMemory` is memory other threads can read without a copy.
 */
export type Allocate = (bytes: number) => ArrayBufferLike | Uint8Array;

type TypedArrayOf<T> = {
  new (buffer: ArrayBufferLike, byteOffset?: number, length?: number): T;
  BYTES_PER_ELEMENT: number;
};

/** A typed array of `length` elements over zeroed memory from `alloc`. */
export function typedFrom<T>(Type: TypedArrayOf<T>, alloc: Allocate, length: number): T {
  const m = alloc(length * Type.BYTES_PER_ELEMENT);
  return ArrayBuffer.isView(m) ? new Type(m.buffer, m.byteOffset, length) : new Type(m);
}

/**
 * Zeroed regions carved from two slabs used in turn, for output that is consumed before the
 * one after next is made: `turn()` starts carving the other slab, so what one turn allocated
 * stays valid through the next turn and is overwritten in the turn after. A slab too small for a
 * turn is replaced by a larger one (the regions it gave out keep the old one alive), so after
 * the first turns nothing is allocated: new ArrayBuffers are what set off V8's full collections.
 */
export class RegionRing {
  private readonly slabs = [new Uint8Array(0), new Uint8Array(0)];
  private current = 0;
  private at = 0;

  /** Starts the next turn; returns the allocator of its regions. */
  turn(): Allocate {
    this.current ^= 1;
    this.at = 0;
    return this.alloc;
  }

  private readonly alloc: Allocate = (bytes) => {
    let start = (this.at + 7) & ~7;
    let slab = this.slabs[this.current];
    if (start + bytes > slab.length) {
      slab = new Uint8Array(Math.max(2 * slab.length, bytes, 1 << 20));
      this.slabs[this.current] = slab;
      start = 0;
    }
    this.at = start + bytes;
    const region = slab.subarray(start, start + bytes);
    region.fill(0);
    return region;
  };
}

/** Fresh memory of this thread. */
export const ownMemory: Allocate = (bytes) => new ArrayBuffer(bytes);

/** Fresh shared memory (posted to a worker, it is the same memory there, not a copy). */
export const sharedMemory: Allocate = (bytes) => new SharedArrayBuffer(bytes);

/** A fresh, zeroed values array of the type's own ArrayType for `n` rows (`n` bits for Bool). */
export function allocValues(
  type: arrow.DataType,
  layout: ColumnLayout,
  n: number,
  alloc: Allocate = ownMemory,
): ArrayBufferView {
  if (layout.kind === 'bool') return typedFrom(Uint8Array, alloc, (n + 7) >> 3);
  if (layout.kind === 'var') return typedFrom(Uint8Array, alloc, n);
  const ArrayType = type.ArrayType as unknown as TypedArrayOf<ArrayBufferView>;
  return typedFrom(ArrayType, alloc, (n * layout.width) / ArrayType.BYTES_PER_ELEMENT);
}

/**
 * The values of a fixed-width chunk as the integer words the kernels copy: bytes for width 1,
 * 16-bit words for width 2, 32-bit words for widths 4, 8 and 16. Copying bit patterns as integers
 * keeps NaN payloads and -0.0 exact; a view never needs more alignment than the values already have.
 */
export function wordView(values: ArrayBufferView, width: number): Uint8Array | Uint16Array | Int32Array {
  if (width === 1) return new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
  if (width === 2) return new Uint16Array(values.buffer, values.byteOffset, values.byteLength >> 1);
  return new Int32Array(values.buffer, values.byteOffset, values.byteLength >> 2);
}

/** The chunk's null bitmap when it has nulls, else null (every row valid). */
export function validityOf(d: arrow.Data): Uint8Array | null {
  return d.nullCount > 0 && d.nullBitmap && d.nullBitmap.length > 0 ? d.nullBitmap : null;
}

/** Makes a Data from buffers the kernels produced; omits the bitmap when nothing is null. */
export function makeColumn(
  type: arrow.DataType,
  length: number,
  values: ArrayBufferView,
  validity: Uint8Array | null,
  nullCount: number,
  valueOffsets?: Int32Array,
): arrow.Data {
  const props: Record<string, unknown> = { type, length, data: values, nullCount };
  if (nullCount > 0) props.nullBitmap = validity;
  if (valueOffsets) props.valueOffsets = valueOffsets;
  return arrow.makeData(props as unknown as Parameters<typeof arrow.makeData>[0]) as arrow.Data;
}

/** A zero-row column of the type. */
export function emptyColumn(type: arrow.DataType, column: string): arrow.Data {
  const layout = layoutOf(type, column);
  return makeColumn(
    type,
    0,
    allocValues(type, layout, 0),
    null,
    0,
    layout.kind === 'var' ? new Int32Array(1) : undefined,
  );
}

/** A table of one RecordBatch from per-column Data of `length` rows. */
export function tableFromColumns(schema: arrow.Schema, children: arrow.Data[], length: number): arrow.Table {
  const data = arrow.makeData({ type: new arrow.Struct(schema.fields), length, nullCount: 0, children });
  return new arrow.Table(schema, new arrow.RecordBatch(schema, data));
}

/** Largest byte length a Utf8/Binary chunk can hold (Int32 offsets). */
export const MAX_VAR_BYTES = 0x7fffffff;
