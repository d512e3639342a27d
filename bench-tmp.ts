import { bucketOf } from './lib/schema/bucket';
const t = [{ root: 'BIGINT' as const, nullable: false }];
const ti = [{ root: 'INT' as const, nullable: false }];
const vals = Array.from({ length: 1_000_000 }, (_, i) => BigInt(i * 7919));
const nums = Array.from({ length: 1_000_000 }, (_, i) => i * 7919);
const box = [null as any];
for (let round = 0; round < 5; round++) {
  let s = 0; let t0 = performance.now();
  for (let i = 0; i < vals.length; i++) { box[0] = vals[i]; s += bucketOf(t, box, 16); }
  const a = performance.now() - t0; t0 = performance.now();
  for (let i = 0; i < nums.length; i++) { box[0] = nums[i]; s += bucketOf(ti, box, 16); }
  const b = performance.now() - t0;
  console.log(`bigint ${a.toFixed(0)} ms, int ${b.toFixed(0)} ms (${s})`);
}
