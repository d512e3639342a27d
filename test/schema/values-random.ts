/** Random values of every column type, for round-trip and order tests (seeded; see test/helpers/random.ts). */
import { parseSchemaText } from '../../lib/schema/parse.js';
import type { DataField, Value } from '../../lib/schema/types.js';
import type { Rng } from '../helpers/random.js';

/** One nullable column of each type (and each TIMESTAMP precision). */
export const ALL_TYPES: DataField[] = parseSchemaText(
  'b BOOLEAN, i8 TINYINT, i16 SMALLINT, i32 INT, i64 BIGINT, f FLOAT, d DOUBLE, dec DECIMAL(12,3), big DECIMAL(38,10), ' +
    's STRING, bin BYTES, day DATE, ms TIMESTAMP(3), us TIMESTAMP(6)',
);

const STRING_PARTS = ['', 'a', 'Z', 'é', '世', '😀', '\u0000', '/', '=', '%', ' ', '\uffff', '\ue000', 'x'.repeat(40)];

function digits(r: Rng, n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) s += String(r.int(0, 9));
  return s;
}

function int64(r: Rng): bigint {
  const v = (BigInt(r.int(0, 0xffffffff)) << 32n) | BigInt(r.int(0, 0xffffffff));
  return BigInt.asIntN(64, v);
}

/** A random non-null value of `f`'s type in its JS representation (edge cases included often). */
export function randomValue(r: Rng, f: DataField): Value {
  const t = f.type;
  switch (t.root) {
    case 'BOOLEAN':
      return r.chance(0.5);
    case 'TINYINT':
      return r.int(-128, 127);
    case 'SMALLINT':
      return r.int(-32768, 32767);
    case 'INT':
      return r.pick([-2147483648, 2147483647, 0, r.int(-2147483648, 2147483647)]);
    case 'BIGINT':
      return r.pick([-(2n ** 63n), 2n ** 63n - 1n, 0n, BigInt(r.int(-1000, 1000)), int64(r)]);
    case 'FLOAT':
      return r.pick([0, -0, NaN, Infinity, -Infinity, Math.fround((r.next() - 0.5) * 10 ** r.int(-30, 30))]);
    case 'DOUBLE':
      return r.pick([0, -0, NaN, -Infinity, Number.MIN_VALUE, (r.next() - 0.5) * 10 ** r.int(-300, 300)]);
    case 'DECIMAL': {
      const scale = t.scale!;
      const int = digits(r, r.int(0, t.precision! - scale)).replace(/^0+/, '') || '0';
      const frac = digits(r, scale);
      const zero = /^0*$/.test(int + frac);
      return `${!zero && r.chance(0.5) ? '-' : ''}${int}${scale ? `.${frac}` : ''}`;
    }
    case 'STRING': {
      let s = '';
      for (let i = r.int(0, 4); i > 0; i--) s += r.pick(STRING_PARTS);
      return s;
    }
    case 'BYTES':
      return Uint8Array.from({ length: r.int(0, 9) }, () => r.int(0, 255));
    case 'DATE':
      return r.pick([-719162, 2932896, 0, r.int(-719162, 2932896)]);
    case 'TIMESTAMP': {
      const perDay = t.precision === 3 ? 86_400_000n : 86_400_000_000n;
      const min = -719162n * perDay;
      const max = 2932897n * perDay - 1n;
      const span = max - min;
      return r.pick([min, max, 0n, -1n, min + (span * BigInt(r.int(0, 1_000_000))) / 1_000_000n]);
    }
  }
}
