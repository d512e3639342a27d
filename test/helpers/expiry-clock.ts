/**
 * Expiry keeps every snapshot whose successor is younger than EXPIRY_FLOOR_MS (the committers'
 * bet, lib/snapshot/commit-steps.ts). A test that expires what it has just committed runs expiry
 * a floor later: by its `now` option, or, for code that reads the clock itself (the `varve`
 * command, the Lambda handlers), with Date moved forward.
 */
import { vi } from 'vitest';
import { EXPIRY_FLOOR_MS } from '../../lib/snapshot/commit-steps.js';

/** A time at which expiry may take every snapshot committed so far (`ms` later than the floor). */
export function pastFloor(ms = 1000): number {
  return Date.now() + EXPIRY_FLOOR_MS + ms;
}

/** Runs `run` with Date (only Date: timers stay real) a floor later than now, then restores it. */
export async function afterFloor<T>(run: () => Promise<T>): Promise<T> {
  const at = pastFloor();
  vi.useFakeTimers({ toFake: ['Date'], now: at });
  try {
    return await run();
  } finally {
    vi.useRealTimers();
  }
}
