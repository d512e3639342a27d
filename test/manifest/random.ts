/** A seeded PRNG for randomized tests: the seed is printed and replayed from VARVE_SEED. */
export function seededRandom(label: string): { seed: number; next: () => number; int: (n: number) => number } {
  const seed = process.env.VARVE_SEED ? Number(process.env.VARVE_SEED) : Math.floor(Math.random() * 2 ** 31);
  console.log(`${label}: seed ${seed} (replay with VARVE_SEED=${seed})`);
  let a = seed >>> 0;
  // mulberry32
  const next = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { seed, next, int: (n: number) => Math.floor(next() * n) };
}
