/** Waiting between retries inside the stores (S3 409s, local lock contention). */

/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Milliseconds to wait before retry number `attempt` (0-based): exponential from `baseMs`, capped at
 * `maxMs`, with full jitter so that writers that collided once do not collide again in lockstep.
 */
export function jitteredBackoff(attempt: number, baseMs: number, maxMs: number): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** attempt);
  return ceiling / 2 + Math.random() * (ceiling / 2);
}
