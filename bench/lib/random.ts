/** The one seeded PRNG of the repository: the benchmarks' data generators and the randomized tests (test/helpers/random.ts) share it. */

/** A small, fast, seedable PRNG (mulberry32): the same seed gives the same stream on every machine (bench/lib/data.ts relies on it). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
