/** Reading test/durations.json (wall ms per test file, written by scripts/record-test-durations.ts). */
import { existsSync, readFileSync } from 'node:fs';

/** The recorded durations at `file`: {} when it is missing or unreadable, and only numeric entries. */
export function readDurations(file: string): Record<string, number> {
  if (!existsSync(file)) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    // A broken file only costs the ordering: the suite runs in vitest's own order.
    return {};
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return {};
  return Object.fromEntries(Object.entries(parsed).filter((e): e is [string, number] => typeof e[1] === 'number'));
}
