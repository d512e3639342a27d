import { describe, expect, it } from 'vitest';
import {
  formatDate,
  formatTimestamp,
  MAX_DAY,
  MIN_DAY,
  parseDateText,
  parseTimestampText,
} from '../../lib/schema/temporal.js';
import { rng, testSeed } from '../helpers/random.js';

const DAY_MS = 86_400_000;

describe('calendar arithmetic', () => {
  it('agrees with the platform Date (UTC) over years 0001-9999', () => {
    const seed = testSeed('schema.temporal');
    const r = rng(seed);
    for (let k = 0; k < 2000; k++) {
      // Prepare
      const days = r.int(MIN_DAY, MAX_DAY);
      const ms = days * DAY_MS + r.int(0, DAY_MS - 1);
      const iso = new Date(ms).toISOString();

      // Act + Assess
      expect(formatDate(days), `seed ${seed}`).toBe(iso.slice(0, 10));
      expect(parseDateText(iso.slice(0, 10)), `seed ${seed}`).toBe(days);
      expect(formatTimestamp(BigInt(ms), 3), `seed ${seed}`).toBe(iso);
      expect(parseTimestampText(iso, 3), `seed ${seed}`).toEqual({ value: BigInt(ms) });
    }
  });

  it('spans exactly 0001-01-01 to 9999-12-31', () => {
    expect(formatDate(MIN_DAY)).toBe('0001-01-01');
    expect(formatDate(MAX_DAY)).toBe('9999-12-31');
    expect(parseDateText('0000-12-31')).toBeUndefined();
  });

  it('keeps microseconds and applies offsets', () => {
    expect(formatTimestamp(1n, 6)).toBe('1970-01-01T00:00:00.000001Z');
    expect(parseTimestampText('1970-01-01T01:00:00.000001+01:00', 6)).toEqual({ value: 1n });
    expect(parseTimestampText('1970-01-01T00:00:00-00:30', 3)).toEqual({ value: 1_800_000n });
  });
});
