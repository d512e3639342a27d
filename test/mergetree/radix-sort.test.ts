import { describe, expect, it } from 'vitest';
import { radixSortWords } from '../../lib/mergetree/radix-sort.js';
import { rng, testSeed } from '../helpers/random.js';

function reference(hi: Uint32Array, lo: Uint32Array): number[] {
  return Array.from(hi, (_, i) => i).sort((a, b) => hi[a] - hi[b] || lo[a] - lo[b] || a - b);
}

describe('radixSortWords', () => {
  it('sorts (hi, lo) pairs stably, small and large inputs, constant and varying digits', () => {
    const seed = testSeed('radix-sort');
    const r = rng(seed);
    for (const n of [0, 1, 2, 63, 64, 65, 1000, 20000]) {
      for (const spread of [1, 3, 0xffff, 0xffffffff]) {
        // Prepare: few distinct values (many ties) up to full 32-bit words.
        const hi = Uint32Array.from({ length: n }, () => Math.floor(r.next() * spread) >>> 0);
        const lo = Uint32Array.from({ length: n }, () => Math.floor(r.next() * spread) >>> 0);
        const expected = reference(hi, lo);

        // Act
        const order = radixSortWords(
          hi.slice(),
          lo.slice(),
          Uint32Array.from({ length: n }, (_, i) => i),
        );

        // Assess
        expect(Array.from(order), `n=${n} spread=${spread} seed=${seed}`).toEqual(expected);
      }
    }
  });

  it('returns each sort in its own index array: later sorts (reusing scratch, or beyond it) leave earlier results alone', () => {
    const seed = testSeed('radix-sort-scratch');
    const r = rng(seed);
    const done: [Uint32Array, number[]][] = [];
    // Odd and even numbers of digit passes, sizes within the reused scratch and beyond it (300,000).
    // [rows, spread of the low word, of the high word]: 1, 2, 3 and 4 digit passes.
    for (const [n, spread, hiSpread] of [
      [5000, 0xffff, 1],
      [5000, 0xffffffff, 1],
      [300_000, 0xffffffff, 0xffff],
      [70_000, 0xffffffff, 0xffffffff],
      [5000, 0xffff, 1],
    ] as const) {
      const hi = Uint32Array.from({ length: n }, () => Math.floor(r.next() * hiSpread) >>> 0);
      const lo = Uint32Array.from({ length: n }, () => Math.floor(r.next() * spread) >>> 0);
      const expected = reference(hi, lo);
      const index = Uint32Array.from({ length: n }, (_, i) => i);
      const order = radixSortWords(hi.slice(), lo.slice(), index);
      expect(order, `n=${n} seed=${seed}`).toBe(index);
      done.push([order, expected]);
    }
    for (const [order, expected] of done) expect(Array.from(order), `n=${order.length} seed=${seed}`).toEqual(expected);
  });
});
