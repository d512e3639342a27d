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

/**
 * "Decorrelated jitter" (AWS Architecture Blog, "Exponential Backoff And Jitter"): the next wait is
 * drawn between `baseMs` and three times the previous one, capped at `maxMs`. Waits still grow
 * about geometrically while a writer keeps losing, but each draw starts again from the floor with
 * some probability, so a writer that lost many times is not parked for seconds while fresh
 * writers take every id (the starvation plain exponential backoff shows across processes).
 * `previousMs` is undefined before the first retry.
 */
export function decorrelatedBackoff(previousMs: number | undefined, baseMs: number, maxMs: number): number {
  const prev = Math.max(baseMs, previousMs ?? baseMs);
  return Math.min(maxMs, baseMs + Math.random() * (prev * 3 - baseMs));
}
