/**
 * A generic Thrift compact-protocol codec, just enough to rewrite a Parquet footer: a struct decodes
 * into its fields in wire order (id, type, value), untouched fields encode back to the same bytes.
 * Parquet's footer (FileMetaData) is a compact-protocol struct; row-group-reader.ts edits offsets in
 * it. Field semantics stay with the caller; this file knows only the wire format.
 */

/** Compact-protocol element types (bool is one type on the wire: TRUE / FALSE). */
export const T = {
  STOP: 0,
  TRUE: 1,
  FALSE: 2,
  BYTE: 3,
  I16: 4,
  I32: 5,
  I64: 6,
  DOUBLE: 7,
  BINARY: 8,
  LIST: 9,
  SET: 10,
  MAP: 11,
  STRUCT: 12,
} as const;

/** A decoded value: numbers as bigint (i16/i32/i64/byte), bool, bytes, double, list, map or struct. */
export type ThriftValue = bigint | boolean | number | Uint8Array | ThriftList | ThriftMap | ThriftStruct;

export interface ThriftField {
  id: number;
  /** The wire type; TRUE and FALSE both mean bool (the value says which). */
  type: number;
  value: ThriftValue;
}

export interface ThriftStruct {
  kind: 'struct';
  fields: ThriftField[];
}

export interface ThriftList {
  kind: 'list';
  /** LIST or SET. */
  wire: number;
  elemType: number;
  items: ThriftValue[];
}

export interface ThriftMap {
  kind: 'map';
  keyType: number;
  valueType: number;
  entries: [ThriftValue, ThriftValue][];
}

/** Thrown when the bytes are not a well-formed compact-protocol struct. */
export class ThriftDecodeError extends Error {}

class Reader {
  pos = 0;
  constructor(private readonly buf: Uint8Array) {}

  byte(): number {
    if (this.pos >= this.buf.length) throw new ThriftDecodeError(`footer ends early at byte ${this.pos}`);
    return this.buf[this.pos++];
  }

  varint(): bigint {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const b = this.byte();
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
      shift += 7n;
      if (shift > 70n) throw new ThriftDecodeError(`varint longer than 10 bytes at byte ${this.pos}`);
    }
  }

  /** A small unsigned varint as a number (lengths, sizes). */
  size(): number {
    const v = this.varint();
    if (v > BigInt(this.buf.length))
      throw new ThriftDecodeError(`length ${v} exceeds the footer (${this.buf.length} bytes)`);
    return Number(v);
  }

  zigzag(): bigint {
    const v = this.varint();
    return (v >> 1n) ^ -(v & 1n);
  }

  bytes(n: number): Uint8Array {
    if (this.pos + n > this.buf.length)
      throw new ThriftDecodeError(`footer ends early: ${n} bytes wanted at byte ${this.pos}`);
    const out = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  value(type: number, depth: number): ThriftValue {
    if (depth > 64) throw new ThriftDecodeError('footer nests deeper than 64 levels');
    switch (type) {
      case T.TRUE:
        return true;
      case T.FALSE:
        return false;
      case T.BYTE: {
        const b = this.byte();
        return BigInt(b > 127 ? b - 256 : b);
      }
      case T.I16:
      case T.I32:
      case T.I64:
        return this.zigzag();
      case T.DOUBLE: {
        const b = this.bytes(8);
        return new DataView(b.buffer, b.byteOffset, 8).getFloat64(0, true);
      }
      case T.BINARY:
        return this.bytes(this.size());
      case T.LIST:
      case T.SET: {
        const h = this.byte();
        const elemType = h & 0x0f;
        const n = h >> 4 === 0x0f ? this.size() : h >> 4;
        const items: ThriftValue[] = [];
        // A bool element is one byte (1 = true) in a list, unlike a bool field.
        for (let i = 0; i < n; i++)
          items.push(elemType === T.TRUE || elemType === T.FALSE ? this.byte() === 1 : this.value(elemType, depth + 1));
        return { kind: 'list', wire: type, elemType, items };
      }
      case T.MAP: {
        const n = this.size();
        if (n === 0) return { kind: 'map', keyType: 0, valueType: 0, entries: [] };
        const kv = this.byte();
        const keyType = kv >> 4;
        const valueType = kv & 0x0f;
        const entries: [ThriftValue, ThriftValue][] = [];
        for (let i = 0; i < n; i++) entries.push([this.value(keyType, depth + 1), this.value(valueType, depth + 1)]);
        return { kind: 'map', keyType, valueType, entries };
      }
      case T.STRUCT:
        return this.struct(depth + 1);
      default:
        throw new ThriftDecodeError(`unknown compact type ${type} at byte ${this.pos}`);
    }
  }

  struct(depth: number): ThriftStruct {
    const fields: ThriftField[] = [];
    let last = 0;
    for (;;) {
      const h = this.byte();
      const type = h & 0x0f;
      if (type === T.STOP) return { kind: 'struct', fields };
      const delta = h >> 4;
      const id = delta === 0 ? Number(this.zigzag()) : last + delta;
      fields.push({ id, type, value: this.value(type, depth) });
      last = id;
    }
  }
}

/** Decodes one struct from the start of `buf`; returns it and the bytes it took. */
export function decodeStruct(buf: Uint8Array): { struct: ThriftStruct; length: number } {
  const r = new Reader(buf);
  const struct = r.struct(0);
  return { struct, length: r.pos };
}

class Writer {
  private buf = new Uint8Array(1024);
  pos = 0;

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.pos));
    this.buf = next;
  }

  byte(b: number): void {
    this.ensure(1);
    this.buf[this.pos++] = b & 0xff;
  }

  varint(v: bigint): void {
    // Offsets, sizes and counts fit in 32 bits: number arithmetic then, not a BigInt per byte.
    if (v >= 0n && v <= 0xffffffffn) {
      this.varint32(Number(v));
      return;
    }
    let x = BigInt.asUintN(64, v);
    while (x >= 0x80n) {
      this.byte(Number(x & 0x7fn) | 0x80);
      x >>= 7n;
    }
    this.byte(Number(x));
  }

  /** An unsigned varint of a number in [0, 2^32). */
  varint32(v: number): void {
    this.ensure(5);
    let x = v;
    while (x >= 0x80) {
      this.buf[this.pos++] = (x & 0x7f) | 0x80;
      x >>>= 7;
    }
    this.buf[this.pos++] = x;
  }

  zigzag(v: bigint): void {
    if (v >= -0x80000000n && v <= 0x7fffffffn) {
      const n = Number(v);
      this.varint32(n >= 0 ? 2 * n : -2 * n - 1);
      return;
    }
    this.varint((v << 1n) ^ (v >> 63n));
  }

  bytes(b: Uint8Array): void {
    this.ensure(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
  }

  value(type: number, v: ThriftValue): void {
    switch (type) {
      case T.TRUE:
      case T.FALSE:
        return; // carried in the field header
      case T.BYTE:
        this.byte(Number(v as bigint));
        return;
      case T.I16:
      case T.I32:
      case T.I64:
        this.zigzag(v as bigint);
        return;
      case T.DOUBLE: {
        const b = new Uint8Array(8);
        new DataView(b.buffer).setFloat64(0, v as number, true);
        this.bytes(b);
        return;
      }
      case T.BINARY: {
        const b = v as Uint8Array;
        this.varint32(b.length);
        this.bytes(b);
        return;
      }
      case T.LIST:
      case T.SET: {
        const l = v as ThriftList;
        if (l.items.length < 15) this.byte((l.items.length << 4) | l.elemType);
        else {
          this.byte(0xf0 | l.elemType);
          this.varint32(l.items.length);
        }
        for (const item of l.items) {
          if (l.elemType === T.TRUE || l.elemType === T.FALSE) this.byte(item ? 1 : 2);
          else this.value(l.elemType, item);
        }
        return;
      }
      case T.MAP: {
        const m = v as ThriftMap;
        this.varint32(m.entries.length);
        if (m.entries.length === 0) return;
        this.byte((m.keyType << 4) | m.valueType);
        for (const [k, val] of m.entries) {
          this.value(m.keyType, k);
          this.value(m.valueType, val);
        }
        return;
      }
      case T.STRUCT:
        this.struct(v as ThriftStruct);
        return;
      default:
        throw new ThriftDecodeError(`cannot encode compact type ${type}`);
    }
  }

  struct(s: ThriftStruct): void {
    let last = 0;
    for (const f of s.fields) {
      const type = f.type === T.TRUE || f.type === T.FALSE ? (f.value ? T.TRUE : T.FALSE) : f.type;
      const delta = f.id - last;
      if (delta > 0 && delta <= 15) this.byte((delta << 4) | type);
      else {
        this.byte(type);
        this.zigzag(BigInt(f.id));
      }
      this.value(type, f.value);
      last = f.id;
    }
    this.byte(T.STOP);
  }

  result(): Uint8Array {
    return this.buf.subarray(0, this.pos);
  }
}

/** The compact-protocol bytes of a struct. */
export function encodeStruct(s: ThriftStruct): Uint8Array {
  const w = new Writer();
  w.struct(s);
  return w.result();
}

/** The field `id` of a struct, if present. */
export function getField(s: ThriftStruct, id: number): ThriftField | undefined {
  return s.fields.find((f) => f.id === id);
}

/** The struct with field `id` set to an i64 (replacing the old value, or added in id order). */
export function setI64(s: ThriftStruct, id: number, value: bigint): void {
  setField(s, { id, type: T.I64, value });
}

/** Sets (replaces or inserts in id order) a field. */
export function setField(s: ThriftStruct, field: ThriftField): void {
  const i = s.fields.findIndex((f) => f.id === field.id);
  if (i >= 0) s.fields[i] = field;
  else {
    const at = s.fields.findIndex((f) => f.id > field.id);
    if (at < 0) s.fields.push(field);
    else s.fields.splice(at, 0, field);
  }
}

/** Removes field `id` from a struct (no-op if absent). */
export function removeField(s: ThriftStruct, id: number): void {
  const i = s.fields.findIndex((f) => f.id === id);
  if (i >= 0) s.fields.splice(i, 1);
}
