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
        const order = radixSortWords(hi.slice(), lo.slice(), Uint32Array.from({ length: n }, (_, i) => i));

        // Assess
        expect(Array.from(order), `n=${n} spread=${spread} seed=${seed}`).toEqual(expected);
      }
    }
  });
});
