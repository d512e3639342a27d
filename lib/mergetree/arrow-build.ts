/**
 * Arrow columns the merge path makes itself: the system columns of a result (sequence numbers
 * and row kinds from typed arrays), a one-row NULL column (the source of "take NULL"), and the
 * columns of computed aggregate values. Each is built with makeData over fresh typed arrays.
 */
import * as arrow from 'apache-arrow';
import { SchemaMismatchError } from '../errors.js';
import type { Value } from '../schema/types.js';
import { ownMemory, typedFrom, type Allocate } from '../format/column-layout.js';

const encoder = new TextEncoder();
type MakeDataProps = Parameters<typeof arrow.makeData>[0];
const TWO_32 = 4294967296;

/** An Int64 column of `count` sequence numbers (non-negative integers below 2^53), in memory from `alloc`. */
export function sequenceColumn(sequence: Float64Array, count: number, alloc: Allocate = ownMemory): arrow.Data {
  const words = typedFrom(Int32Array, alloc, count * 2);
  for (let i = 0; i < count; i++) {
    const s = sequence[i];
    // Split into words arithmetically: BigInt per row would allocate a million objects.
    const hi = Math.floor(s / TWO_32);
    words[2 * i] = s - hi * TWO_32;
    words[2 * i + 1] = hi;
  }
  return arrow.makeData({
    type: new arrow.Int64(),
    length: count,
    nullCount: 0,
    data: new BigInt64Array(words.buffer, words.byteOffset, count),
  });
}

/** An Int8 column of `count` row kinds, in memory from `alloc`. */
export function kindColumn(kind: Uint8Array, count: number, alloc: Allocate = ownMemory): arrow.Data {
  const data = typedFrom(Int8Array, alloc, count);
  data.set(kind.subarray(0, count));
  return arrow.makeData({ type: new arrow.Int8(), length: count, nullCount: 0, data });
}

/** A one-row column of `type` holding NULL. */
export function nullColumn(type: arrow.DataType): arrow.Data {
  const nullBitmap = new Uint8Array(1);
  const props = { type, length: 1, nullCount: 1, nullBitmap } as Record<string, unknown>;
  if (arrow.DataType.isUtf8(type) || arrow.DataType.isBinary(type)) {
    props.valueOffsets = new Int32Array(2);
    props.data = new Uint8Array(0);
  } else if (arrow.DataType.isBool(type)) {
    props.data = new Uint8Array(1);
  } else {
    const ArrayType = type.ArrayType as unknown as { new (n: number): ArrayBufferView };
    props.data = new ArrayType(arrow.DataType.isDecimal(type) ? 4 : 1);
  }
  return arrow.makeData(props as unknown as MakeDataProps);
}

/**
 * A column of computed values: numbers for 8–32-bit integers, floats and DATE; bigint for BIGINT
 * and TIMESTAMP; unscaled bigint for DECIMAL; string for STRING; boolean for BOOLEAN.
 */
export function valuesColumn(type: arrow.DataType, name: string, values: Value[], count: number): arrow.Data {
  const validity = new Uint8Array((count + 7) >> 3);
  let nullCount = 0;
  for (let i = 0; i < count; i++) {
    if (values[i] === null || values[i] === undefined) nullCount++;
    else validity[i >> 3] |= 1 << (i & 7);
  }
  const base = { type, length: count, nullCount, nullBitmap: nullCount > 0 ? validity : undefined } as Record<
    string,
    unknown
  >;
  const make = (props: Record<string, unknown>) => arrow.makeData({ ...base, ...props } as unknown as MakeDataProps);
  if (arrow.DataType.isUtf8(type)) {
    const parts: Uint8Array[] = new Array(count);
    const offsets = new Int32Array(count + 1);
    let total = 0;
    for (let i = 0; i < count; i++) {
      const v = values[i];
      parts[i] = typeof v === 'string' ? encoder.encode(v) : new Uint8Array(0);
      total += parts[i].length;
      offsets[i + 1] = total;
    }
    const bytes = new Uint8Array(total);
    for (let i = 0; i < count; i++) bytes.set(parts[i], offsets[i]);
    return make({ data: bytes, valueOffsets: offsets });
  }
  if (arrow.DataType.isBool(type)) {
    const bits = new Uint8Array((count + 7) >> 3);
    for (let i = 0; i < count; i++) if (values[i] === true) bits[i >> 3] |= 1 << (i & 7);
    return make({ data: bits });
  }
  if (arrow.DataType.isDecimal(type)) {
    const words = new Uint32Array(count * 4);
    for (let i = 0; i < count; i++) {
      const v = values[i];
      if (typeof v !== 'bigint') continue;
      let u = BigInt.asUintN(128, v);
      for (let k = 0; k < 4; k++, u >>= 32n) words[4 * i + k] = Number(u & 0xffffffffn);
    }
    return make({ data: words });
  }
  const ArrayType = type.ArrayType as unknown as {
    new (n: number): ArrayLike<number | bigint> & { [i: number]: number | bigint };
  };
  if (ArrayType === (BigInt64Array as unknown)) {
    const data = new BigInt64Array(count);
    for (let i = 0; i < count; i++) {
      const v = values[i];
      if (typeof v === 'bigint') data[i] = v;
    }
    return make({ data });
  }
  if (arrow.DataType.isInt(type) || arrow.DataType.isFloat(type) || arrow.DataType.isDate(type)) {
    const data = new ArrayType(count);
    for (let i = 0; i < count; i++) {
      const v = values[i];
      if (typeof v === 'number') data[i] = v;
    }
    return make({ data });
  }
  throw new SchemaMismatchError(
    `column ${name} has Arrow type ${String(type)}, for which computed values cannot be built`,
    name,
  );
}
