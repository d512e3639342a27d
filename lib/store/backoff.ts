/** Waiting between retries inside the stores (S3 409s, local lock contention). */
export { sleep } from '../retry-budget.js';

/**
 * Milliseconds to wait before retry number `attempt` (0-based): exponential from `baseMs`, capped at
 * `maxMs`, with full jitter so that writers that collided once do not collide again in lockstep.
 */
export function jitteredBackoff(attempt: number, baseMs: number, maxMs: number): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** attempt);
  return ceiling / 2 + Math.random() * (ceiling / 2);
}
