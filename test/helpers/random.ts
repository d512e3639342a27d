/** Seeded randomness for randomized tests: every test prints its seed and replays from VARVE_SEED. */
import { mulberry32 } from '../../bench/lib/random.js';

export { mulberry32 };

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
