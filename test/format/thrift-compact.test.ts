/**
 * The compact-protocol encoder against a reference that writes every varint with BigInt
 * arithmetic (the encoder's number fast path for values within 32 bits must give the same bytes),
 * and decode(encode(s)) = s, over random structs whose integers sit at and around every varint
 * length boundary, the 32-bit edges and the 64-bit extremes.
 */
import { describe, expect, it } from 'vitest';
import {
  decodeStruct,
  encodeStruct,
  T,
  type ThriftList,
  type ThriftMap,
  type ThriftStruct,
  type ThriftValue,
} from '../../lib/format/thrift-compact.js';
import { rng, testSeed, type Rng } from '../helpers/random.js';

/** The reference: the protocol written with BigInt for every varint. */
function reference(s: ThriftStruct): Uint8Array {
  const out: number[] = [];
  const varint = (v: bigint) => {
    let x = BigInt.asUintN(64, v);
    while (x >= 0x80n) {
      out.push(Number(x & 0x7fn) | 0x80);
      x >>= 7n;
    }
    out.push(Number(x));
  };
  const zigzag = (v: bigint) => varint((v << 1n) ^ (v >> 63n));
  const value = (type: number, v: ThriftValue): void => {
    if (type === T.TRUE || type === T.FALSE) return;
    if (type === T.BYTE) out.push(Number(v as bigint) & 0xff);
    else if (type === T.I16 || type === T.I32 || type === T.I64) zigzag(v as bigint);
    else if (type === T.DOUBLE) {
      const b = new Uint8Array(8);
      new DataView(b.buffer).setFloat64(0, v as number, true);
      out.push(...b);
    } else if (type === T.BINARY) {
      varint(BigInt((v as Uint8Array).length));
      out.push(...(v as Uint8Array));
    } else if (type === T.LIST || type === T.SET) {
      const l = v as ThriftList;
      if (l.items.length < 15) out.push((l.items.length << 4) | l.elemType);
      else {
        out.push(0xf0 | l.elemType);
        varint(BigInt(l.items.length));
      }
      for (const item of l.items) {
        if (l.elemType === T.TRUE || l.elemType === T.FALSE) out.push(item ? 1 : 2);
        else value(l.elemType, item);
      }
    } else if (type === T.MAP) {
      const m = v as ThriftMap;
      varint(BigInt(m.entries.length));
      if (m.entries.length === 0) return;
      out.push((m.keyType << 4) | m.valueType);
      for (const [k, x] of m.entries) {
        value(m.keyType, k);
        value(m.valueType, x);
      }
    } else struct(v as ThriftStruct);
  };
  const struct = (st: ThriftStruct): void => {
    let last = 0;
    for (const f of st.fields) {
      const type = f.type === T.TRUE || f.type === T.FALSE ? (f.value ? T.TRUE : T.FALSE) : f.type;
      const delta = f.id - last;
      if (delta > 0 && delta <= 15) out.push((delta << 4) | type);
      else {
        out.push(type);
        zigzag(BigInt(f.id));
      }
      value(type, f.value);
      last = f.id;
    }
    out.push(T.STOP);
  };
  struct(s);
  return Uint8Array.from(out);
}

/** Integers around every 7-bit varint boundary, the 32-bit edges and the 64-bit extremes. */
function randomInt(r: Rng, bits: 8 | 16 | 32 | 64): bigint {
  const max = (1n << BigInt(bits - 1)) - 1n;
  const edge = BigInt(r.pick([0, 7, 14, 21, 28, 31, 32, 35, 42, 49, 56, 62, 63]));
  let v = (1n << edge) + BigInt(r.int(-3, 3));
  if (r.chance(0.5)) v = -v;
  if (r.chance(0.2)) v = r.chance(0.5) ? max : -max - 1n;
  return v > max ? max : v < -max - 1n ? -max - 1n : v;
}

function randomValue(r: Rng, type: number, depth: number): ThriftValue {
  switch (type) {
    case T.BYTE:
      return randomInt(r, 8);
    case T.I16:
      return randomInt(r, 16);
    case T.I32:
      return randomInt(r, 32);
    case T.I64:
      return randomInt(r, 64);
    case T.DOUBLE:
      return r.pick([0, -1.5, Math.PI, 1e300, -Number.MIN_VALUE]);
    case T.BINARY:
      return Uint8Array.from({ length: r.pick([0, 1, 127, 128, 300]) }, () => r.int(0, 255));
    case T.LIST: {
      const elemType = r.pick([T.I32, T.I64, T.BINARY, T.TRUE, ...(depth < 3 ? [T.STRUCT] : [])]);
      const n = elemType === T.STRUCT ? r.int(0, 3) : r.pick([0, 3, 14, 15, 40]);
      const items = Array.from({ length: n }, () =>
        elemType === T.TRUE ? r.chance(0.5) : randomValue(r, elemType, depth + 1),
      );
      return { kind: 'list', wire: T.LIST, elemType, items };
    }
    case T.MAP: {
      const n = r.pick([0, 2, 20]);
      const entries: [ThriftValue, ThriftValue][] = Array.from({ length: n }, () => [
        randomValue(r, T.BINARY, depth + 1),
        randomValue(r, T.I64, depth + 1),
      ]);
      return n === 0
        ? { kind: 'map', keyType: 0, valueType: 0, entries }
        : { kind: 'map', keyType: T.BINARY, valueType: T.I64, entries };
    }
    default:
      return randomStruct(r, depth + 1);
  }
}

function randomStruct(r: Rng, depth: number): ThriftStruct {
  const fields: ThriftStruct['fields'] = [];
  let id = 0;
  const n = r.int(0, depth < 3 ? 8 : 3);
  for (let i = 0; i < n; i++) {
    // Mostly short deltas (one header byte), sometimes long ones (the id as a zigzag varint).
    id += r.chance(0.8) ? r.int(1, 15) : r.int(16, 20_000);
    const nested = depth < 3 ? [T.LIST, T.MAP, T.STRUCT] : [];
    const type = r.pick([T.TRUE, T.BYTE, T.I16, T.I32, T.I64, T.DOUBLE, T.BINARY, ...nested]);
    if (type === T.TRUE) fields.push({ id, type: r.chance(0.5) ? T.TRUE : T.FALSE, value: r.chance(0.5) });
    else fields.push({ id, type, value: randomValue(r, type, depth) });
  }
  return { kind: 'struct', fields };
}

/** The struct as decoding gives it back (bool fields carry their value in the type). */
function normalized(s: ThriftStruct): ThriftStruct {
  const field = (f: ThriftStruct['fields'][number]) =>
    f.type === T.TRUE || f.type === T.FALSE
      ? { ...f, type: f.value ? T.TRUE : T.FALSE }
      : { ...f, value: normalizedValue(f.value) };
  return { kind: 'struct', fields: s.fields.map(field) };
}

function normalizedValue(v: ThriftValue): ThriftValue {
  if (typeof v !== 'object' || v instanceof Uint8Array) return v;
  if (v.kind === 'struct') return normalized(v);
  if (v.kind === 'list') return { ...v, items: v.items.map(normalizedValue) };
  return v;
}

describe('thrift compact encoder', () => {
  it('writes the bytes of the BigInt reference and decodes back to the same struct (random structs)', () => {
    const seed = testSeed('thrift compact encoder');
    const r = rng(seed);
    for (let i = 0; i < 200; i++) {
      const s = randomStruct(r, 0);
      const bytes = encodeStruct(s);
      expect(Buffer.from(bytes).equals(Buffer.from(reference(s))), `struct ${i} (seed ${seed})`).toBe(true);
      const back = decodeStruct(bytes);
      expect(back.length, `struct ${i} (seed ${seed})`).toBe(bytes.length);
      expect(back.struct, `struct ${i} (seed ${seed})`).toEqual(normalized(s));
    }
  });
});
