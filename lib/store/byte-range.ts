/** The byte range of `getRange`: [start, end), clamped to the object's size by every store. */
import { InvalidArgumentError } from '../errors.js';

/** Throws `InvalidArgumentError` unless 0 <= start <= end are safe integers. */
export function checkByteRange(key: string, start: number, end: number): void {
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start < 0 || end < start) {
    throw new InvalidArgumentError(
      `invalid byte range [${start}, ${end}) for ${key}: pass integers with 0 <= start <= end (end exclusive)`,
    );
  }
}

/** The part of [start, end) that lies inside an object of `size` bytes, as [from, to). */
export function clampByteRange(start: number, end: number, size: number): [number, number] {
  const from = Math.min(start, size);
  return [from, Math.max(from, Math.min(end, size))];
}
