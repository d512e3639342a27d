/** Small factories for the lib/format tests: a field of every type, edge-value rows, random rows. */
import type { DataField, DataType, Row, TypeRoot } from '../../lib/schema/types.js';
import type { Rng } from '../helpers/random.js';

/** A DataField with id `id`. */
export function field(id: number, name: string, root: TypeRoot, extra: Partial<DataType> = {}): DataField {
  return { id, name, type: { root, nullable: true, ...extra } };
}

/** One column of every type varve stores; `id` is the non-null key. */
export function allTypeFields(): DataField[] {
  return [
    field(1, 'id', 'BIGINT', { nullable: false }),
    field(2, 'b', 'BOOLEAN'),
    field(3, 'i8', 'TINYINT'),
    field(4, 'i16', 'SMALLINT'),
    field(5, 'i32', 'INT'),
    field(6, 'i64', 'BIGINT'),
    field(7, 'f32', 'FLOAT'),
    field(8, 'f64', 'DOUBLE'),
    field(9, 'dec38', 'DECIMAL', { precision: 38, scale: 10 }),
    field(10, 'dec10', 'DECIMAL', { precision: 10, scale: 2 }),
    field(11, 'dec0', 'DECIMAL', { precision: 18, scale: 0 }),
    field(12, 's', 'STRING'),
    field(13, 'bin', 'BYTES'),
    field(14, 'day', 'DATE'),
    field(15, 'ts3', 'TIMESTAMP', { precision: 3 }),
    field(16, 'ts6', 'TIMESTAMP', { precision: 6 }),
  ];
}

const MAX38 = '9999999999999999999999999999.9999999999';

/** Rows with the edge values of every type, a row of nulls, -0.0, NaN and pre-1970 instants. */
export function edgeRows(): Row[] {
  return [
    {
      id: 1n,
      b: false,
      i8: -128,
      i16: -32768,
      i32: -2147483648,
      i64: -(2n ** 63n),
      f32: -Infinity,
      f64: NaN,
      dec38: `-${MAX38}`,
      dec10: '-99999999.99',
      dec0: '-999999999999999999',
      s: '',
      bin: new Uint8Array(0),
      day: -719162,
      ts3: -62135596800000n,
      ts6: -62135596800000000n,
    },
    {
      id: 2n,
      b: true,
      i8: 127,
      i16: 32767,
      i32: 2147483647,
      i64: 2n ** 63n - 1n,
      f32: Infinity,
      f64: Infinity,
      dec38: MAX38,
      dec10: '99999999.99',
      dec0: '999999999999999999',
      s: 'héllo 🌍 日本 \u0000 end',
      bin: new Uint8Array([0, 255, 1, 128]),
      day: 2932896,
      ts3: 253402300799999n,
      ts6: 253402300799999999n,
    },
    {
      id: 3n,
      b: null,
      i8: null,
      i16: null,
      i32: null,
      i64: null,
      f32: null,
      f64: null,
      dec38: null,
      dec10: null,
      dec0: null,
      s: null,
      bin: null,
      day: null,
      ts3: null,
      ts6: null,
    },
    {
      id: 4n,
      b: true,
      i8: 0,
      i16: -1,
      i32: 0,
      i64: 0n,
      f32: -0,
      f64: -0,
      dec38: '-0.0000000001',
      dec10: '-0.01',
      dec0: '0',
      s: 'plain ascii',
      bin: new Uint8Array([7]),
      day: -1,
      ts3: -1n,
      ts6: -1n,
    },
    {
      id: 5n,
      b: false,
      i8: 1,
      i16: 2,
      i32: 3,
      i64: 9007199254740993n,
      f32: Math.fround(1.1),
      f64: -Infinity,
      dec38: '12345678901234567.8900000000',
      dec10: '0.50',
      dec0: '-1',
      s: 'x'.repeat(100),
      bin: new Uint8Array(40).fill(9),
      day: 0,
      ts3: 0n,
      ts6: 1700000000123456n,
    },
  ];
}

/** A random value of the field's type (null with probability 0.2 when nullable). */
export function randomValue(r: Rng, f: DataField): Row[string] {
  if (f.type.nullable && r.chance(0.2)) return null;
  switch (f.type.root) {
    case 'BOOLEAN':
      return r.chance(0.5);
    case 'TINYINT':
      return r.int(-128, 127);
    case 'SMALLINT':
      return r.int(-32768, 32767);
    case 'INT':
      return r.int(-2147483648, 2147483647);
    case 'DATE':
      return r.int(-800000, 2900000);
    case 'TIMESTAMP': {
      // Within JS Date's range (±8.64e15 ms), so other readers' Date values can be compared.
      const ms = BigInt(r.int(-4e15, 4e15));
      return f.type.precision === 6 ? ms * 1000n + BigInt(r.int(0, 999)) : ms;
    }
    case 'BIGINT':
      return BigInt.asIntN(
        64,
        (BigInt(r.int(0, 2 ** 31)) << 33n) ^ BigInt(r.int(0, 2 ** 31)) ^ (r.chance(0.5) ? -1n : 0n),
      );
    case 'FLOAT':
      return Math.fround((r.next() - 0.5) * 1e6);
    case 'DOUBLE':
      return r.pick([NaN, -0, Infinity, (r.next() - 0.5) * 1e12]);
    case 'DECIMAL': {
      const p = f.type.precision ?? 10;
      const s = f.type.scale ?? 0;
      let digits = '';
      const len = r.int(1, p);
      for (let i = 0; i < len; i++) digits += String(r.int(0, 9));
      digits = digits.padStart(s + 1, '0');
      const int = digits.slice(0, digits.length - s).replace(/^0+(?=\d)/, '');
      const text = s > 0 ? `${int}.${digits.slice(digits.length - s)}` : int;
      return r.chance(0.5) && /[1-9]/.test(text) ? `-${text}` : text;
    }
    case 'STRING':
      return r.pick(['', 'a', 'ünï', '🌍🌍', 'key-' + r.int(0, 1e6), 'z'.repeat(r.int(30, 80))]);
    case 'BYTES':
      return Uint8Array.from({ length: r.int(0, 40) }, () => r.int(0, 255));
  }
}

/** `n` random rows of the fields; the first field gets ascending unique bigint keys. */
export function randomRows(r: Rng, fields: DataField[], n: number): Row[] {
  return Array.from({ length: n }, (_, i) => {
    const row: Row = {};
    for (const f of fields) row[f.name] = f === fields[0] ? BigInt(i) : randomValue(r, f);
    return row;
  });
}
