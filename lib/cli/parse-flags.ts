/** Parsing of CLI flag values shared by the commands. */
import { InvalidArgumentError } from '../errors.js';

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
