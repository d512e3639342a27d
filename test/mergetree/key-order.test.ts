import { describe, expect, it } from 'vitest';
import { rowsToTable } from '../../lib/format/columns.js';
import { keyComparator, keyIndex, sortByKey, sortPermutation } from '../../lib/mergetree/key-order.js';
import type { Row } from '../../lib/schema/types.js';
import { rng, testSeed } from '../helpers/random.js';
import { schemaOf } from './fixtures.js';

function tableOf(columns: string[], rows: Row[]) {
  return rowsToTable(schemaOf(columns, []).fields, rows);
}

/** Unicode code-point order, the order STRING keys must follow (UTF-8 byte order). */
function codePointCompare(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

describe('sortPermutation', () => {
  it('orders BIGINT keys numerically, negatives and 64-bit extremes included', () => {
    const seed = testSeed('key-order bigint');
    const r = rng(seed);
    const values: bigint[] = [-(2n ** 63n), 2n ** 63n - 1n, 0n, -1n, 1n, 2n ** 32n, -(2n ** 32n)];
    for (let i = 0; i < 5000; i++) values.push(BigInt(r.int(-1e9, 1e9)) * BigInt(r.int(-1e9, 1e9)));
    const t = tableOf(
      ['k BIGINT'],
      values.map((k) => ({ k })),
    );

    const order = sortPermutation(t, ['k']);

    const expected = values
      .map((v, i) => [v, i] as const)
      .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] - b[1]));
    expect(Array.from(order)).toEqual(expected.map((e) => e[1]));
  });

  it('is stable: equal keys keep arrival order, and groups mark them', () => {
    const t = tableOf(
      ['k INT'],
      [3, 1, 3, 2, 1, 3].map((k) => ({ k })),
    );

    const sorted = sortByKey(t, ['k']);

    expect(Array.from(sorted.order)).toEqual([1, 4, 3, 0, 2, 5]);
    expect(Array.from(sorted.groupEnd)).toEqual([2, 3, 6]);
  });

  it('orders DOUBLE keys with -0 before +0', () => {
    const t = tableOf(
      ['k DOUBLE'],
      [1.5, 0, -0, -2.25, Infinity, -Infinity].map((k) => ({ k })),
    );

    const order = Array.from(sortPermutation(t, ['k']));

    expect(order).toEqual([5, 3, 2, 1, 0, 4]);
  });

  it('orders STRING keys in code-point order, not UTF-16 order (non-BMP characters)', () => {
    // U+1F600 is a surrogate pair (0xD83D…) in UTF-16, so JS `<` puts it before U+FFFF; code-point order after.
    const keys = ['\u{1F600}', '\uFFFF', 'a', '', 'a\u0000', 'a\u0000b', 'ab', '\u00e9', 'z'];
    const t = tableOf(
      ['k STRING'],
      keys.map((k) => ({ k })),
    );

    const order = Array.from(sortPermutation(t, ['k'])).map((i) => keys[i]);

    expect(order).toEqual([...keys].sort(codePointCompare));
    expect(order.indexOf('\uFFFF')).toBeLessThan(order.indexOf('\u{1F600}'));
  });

  it('orders long strings with shared prefixes (refinement beyond the first 8 bytes)', () => {
    const seed = testSeed('key-order long strings');
    const r = rng(seed);
    const alphabet = ['a', 'b', '\u0000', '\u00e9', '\u{1F600}', 'z'];
    const keys: string[] = [];
    for (let i = 0; i < 3000; i++) {
      let s = 'user-000000-';
      const len = r.int(0, 12);
      for (let j = 0; j < len; j++) s += r.pick(alphabet);
      keys.push(s);
    }
    const t = tableOf(
      ['k STRING'],
      keys.map((k) => ({ k })),
    );

    const order = Array.from(sortPermutation(t, ['k']));

    const expected = keys.map((k, i) => [k, i] as const).sort((a, b) => codePointCompare(a[0], b[0]) || a[1] - b[1]);
    expect(order).toEqual(expected.map((e) => e[1]));
  });

  it('orders DECIMAL keys exactly, beyond double precision', () => {
    const keys = [
      '12345678901234567890.12',
      '12345678901234567890.11',
      '-0.01',
      '0.00',
      '-12345678901234567890.12',
      '0.10',
    ];
    const t = tableOf(
      ['k DECIMAL(22,2)'],
      keys.map((k) => ({ k })),
    );

    const order = Array.from(sortPermutation(t, ['k'])).map((i) => keys[i]);

    expect(order).toEqual([
      '-12345678901234567890.12',
      '-0.01',
      '0.00',
      '0.10',
      '12345678901234567890.11',
      '12345678901234567890.12',
    ]);
  });

  it('orders composite (STRING, INT, DATE) keys column by column', () => {
    const seed = testSeed('key-order composite');
    const r = rng(seed);
    const rows = Array.from({ length: 2000 }, () => ({
      s: r.pick(['', 'a', 'ab', '\u{1F600}', '\uFFFF', 'a\u0000']),
      n: r.int(-3, 3),
      d: r.int(-2, 2),
    }));
    const t = tableOf(['s STRING', 'n INT', 'd DATE'], rows);

    const order = Array.from(sortPermutation(t, ['s', 'n', 'd']));

    const cmp = (a: (typeof rows)[0], b: (typeof rows)[0]) => codePointCompare(a.s, b.s) || a.n - b.n || a.d - b.d;
    const expected = rows.map((row, i) => [row, i] as const).sort((a, b) => cmp(a[0], b[0]) || a[1] - b[1]);
    expect(order).toEqual(expected.map((e) => e[1]));
  });

  it('applies the tie-break inside groups of equal keys only', () => {
    const t = tableOf(
      ['k INT', 'v INT'],
      [
        { k: 1, v: 9 },
        { k: 0, v: 5 },
        { k: 1, v: 2 },
        { k: 1, v: 2 },
      ],
    );
    const v = [9, 5, 2, 2];

    const order = Array.from(sortPermutation(t, ['k'], (i, j) => v[j] - v[i]));

    expect(order).toEqual([1, 0, 2, 3]);
  });

  it('rejects a NULL in a key column', () => {
    const t = tableOf(['k STRING'], [{ k: 'a' }, { k: null }]);

    expect(() => sortPermutation(t, ['k'])).toThrow(/contains NULL/);
  });
});

describe('compareRows', () => {
  it('compares keys across tables, strings and decimals included', () => {
    const cols = ['s STRING', 'm DECIMAL(20,3)'];
    const a = tableOf(cols, [
      { s: 'abcdefghij', m: '1.000' },
      { s: '\uFFFF', m: '0.000' },
    ]);
    const b = tableOf(cols, [
      { s: 'abcdefghij', m: '1.001' },
      { s: '\u{1F600}', m: '0.000' },
      { s: 'abcdefghij', m: '1.000' },
    ]);
    const { compareRows } = keyComparator(['s', 'm']);

    expect(compareRows(a, 0, b, 0)).toBeLessThan(0);
    expect(compareRows(a, 0, b, 2)).toBe(0);
    expect(compareRows(a, 1, b, 1)).toBeLessThan(0);
    expect(compareRows(b, 1, a, 1)).toBeGreaterThan(0);
  });

  it('marks indexes of short keys exact (equal prefix words mean equal keys)', () => {
    expect(keyIndex(tableOf(['k BIGINT'], [{ k: 1n }]), ['k']).exact).toBe(true);
    expect(keyIndex(tableOf(['a INT', 'b INT'], [{ a: 1, b: 2 }]), ['a', 'b']).exact).toBe(true);
    expect(keyIndex(tableOf(['k STRING'], [{ k: 'abcdefgh' }]), ['k']).exact).toBe(false);
  });
});
