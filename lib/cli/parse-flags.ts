/** Parsing of CLI flag values shared by the commands. */
import { InvalidArgumentError } from '../errors.js';
import { parseDuration } from '../schema/options.js';

export interface GlobalOptions {
  warehouse?: string;
}

/** Epoch ms from an ISO-8601 time or an integer of epoch milliseconds. */
export function parseTimestamp(text: string): number {
  if (/^\d+$/.test(text.trim())) return Number(text.trim());
  const ms = Date.parse(text);
  if (Number.isNaN(ms)) {
    throw new InvalidArgumentError(`"${text}" is not a time; use ISO-8601 (2024-05-01T12:00:00Z) or epoch milliseconds`);
  }
  return ms;
}

/** A positive integer flag value, or a clear error naming the flag. */
export function parsePositiveInt(flag: string, text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`${flag} must be a non-negative integer, got "${text}"`);
  return n;
}

/**
 * Milliseconds from a duration flag, in the one form every duration of varve takes (option values
 * too): `500 ms`, `30 s`, `8s`, `10 min`, `2 h`, `7 d`; a bare integer is milliseconds.
 */
export function parseDurationFlag(flag: string, text: string): number {
  const ms = /^\s*\d+\s*$/.test(text) ? Number(text) : parseDuration(text);
  if (ms === undefined || !Number.isFinite(ms) || ms < 0) {
    throw new InvalidArgumentError(`${flag} "${text}" is not a duration; use e.g. 500 ms, 8s, 10 min, 2 h, 7 d (a bare number is milliseconds)`);
  }
  return ms;
}
