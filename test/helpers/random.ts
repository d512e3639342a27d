/** Seeded randomness for randomized tests: every test prints its seed and replays from VARVE_SEED. */

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

/** The seed to use: VARVE_SEED when set (replay), else a fresh one; printed either way. */
export function testSeed(name: string): number {
  const seed = process.env.VARVE_SEED ? Number(process.env.VARVE_SEED) : Math.floor(Math.random() * 2 ** 31);
  console.log(`[${name}] seed=${seed} (replay with VARVE_SEED=${seed})`);
  return seed;
}

export interface Rng {
  next(): number;
  int(lo: number, hi: number): number;
  pick<T>(xs: readonly T[]): T;
  chance(p: number): boolean;
}

/** Convenience wrapper over a seeded PRNG. */
export function rng(seed: number): Rng {
  const next = mulberry32(seed);
  return {
    next,
    int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)),
    pick: (xs) => xs[Math.floor(next() * xs.length)],
    chance: (p) => next() < p,
  };
}
