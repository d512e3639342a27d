/**
 * DATE and TIMESTAMP values as text. A DATE is days since 1970-01-01; a TIMESTAMP(3|6) is a bigint
 * of milliseconds or microseconds since the epoch, UTC. Calendar arithmetic is done on integers
 * (proleptic Gregorian, years 0001-9999), never through the host's time zone.
 */

/** Day number of 0001-01-01, the first day a DATE or TIMESTAMP may have. */
export const MIN_DAY = daysFromCivil(1, 1, 1);
/** Day number of 9999-12-31, the last day a DATE or TIMESTAMP may have. */
export const MAX_DAY = daysFromCivil(9999, 12, 31);

/** Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil). */
function daysFromCivil(y: number, m: number, d: number): number {
  y -= m <= 2 ? 1 : 0;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

/** [year, month, day] of a day number (inverse of daysFromCivil). */
function civilFromDays(days: number): [number, number, number] {
  const z = days + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp + (mp < 10 ? 3 : -9);
  return [yoe + era * 400 + (m <= 2 ? 1 : 0), m, d];
}

function daysInMonth(y: number, m: number): number {
  if (m === 2) return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(m) ? 30 : 31;
}

const DATE_TEXT = /^(\d{4})-(\d{2})-(\d{2})$/;

/** Day number of `YYYY-MM-DD`; undefined when malformed or not a real calendar date. */
export function parseDateText(text: string): number | undefined {
  const m = DATE_TEXT.exec(text);
  if (m === null) return undefined;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > daysInMonth(y, mo)) return undefined;
  return daysFromCivil(y, mo, d);
}

const pad = (n: number, w: number) => String(n).padStart(w, '0');

/** `YYYY-MM-DD` of a day number. */
export function formatDate(days: number): string {
  const [y, m, d] = civilFromDays(days);
  return `${pad(y, 4)}-${pad(m, 2)}-${pad(d, 2)}`;
}

/** Units per second and per day of a TIMESTAMP precision (3 = ms, 6 = µs). */
function timestampUnits(precision: number): { perSecond: bigint; perDay: bigint } {
  const perSecond = precision === 3 ? 1000n : 1_000_000n;
  return { perSecond, perDay: perSecond * 86_400n };
}

/** Smallest and largest TIMESTAMP value of a precision (0001-01-01T00:00 to the end of 9999-12-31). */
export function timestampRange(precision: number): { min: bigint; max: bigint } {
  const { perDay } = timestampUnits(precision);
  return { min: BigInt(MIN_DAY) * perDay, max: BigInt(MAX_DAY + 1) * perDay - 1n };
}

const TIMESTAMP_TEXT =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?)?\s*(Z|z|[+-]\d{2}(?::?\d{2})?)?$/;

/**
 * Parses an ISO-8601 timestamp (`2024-01-02T03:04:05.123Z`, a space instead of T, an offset such
 * as `+02:00`, or none = UTC; a bare date is midnight) into units of `precision`. Returns an
 * error text when it is malformed, has more fractional digits than the precision keeps (only
 * zeros may be dropped), or falls outside years 0001-9999.
 */
export function parseTimestampText(text: string, precision: number): { value: bigint } | { error: string } {
  const m = TIMESTAMP_TEXT.exec(text);
  if (m === null) return { error: 'is not an ISO-8601 timestamp such as "2024-01-02T03:04:05.123Z"' };
  const days = parseDateText(`${m[1]}-${m[2]}-${m[3]}`);
  if (days === undefined) return { error: 'has an impossible date' };
  const [h, mi, s] = [Number(m[4] ?? 0), Number(m[5] ?? 0), Number(m[6] ?? 0)];
  if (h > 23 || mi > 59 || s > 59) return { error: 'has an impossible time of day' };
  const frac = m[7] ?? '';
  if (frac.length > precision && !/^0*$/.test(frac.slice(precision))) {
    const unit = precision === 3 ? 'milliseconds' : 'microseconds';
    return {
      error: `has more than ${precision} fractional digits, but TIMESTAMP(${precision}) keeps ${unit}; truncate it or declare a finer TIMESTAMP`,
    };
  }
  let offsetMinutes = 0;
  const zone = m[8];
  if (zone !== undefined && zone.toUpperCase() !== 'Z') {
    const digits = zone.slice(1).replace(':', '');
    const [oh, om] = [Number(digits.slice(0, 2)), Number(digits.slice(2) || 0)];
    if (oh > 23 || om > 59) return { error: 'has an impossible time zone offset' };
    offsetMinutes = (zone[0] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  const { perSecond, perDay } = timestampUnits(precision);
  const fracUnits = BigInt(frac.slice(0, precision).padEnd(precision, '0'));
  const seconds = h * 3600 + mi * 60 + s - offsetMinutes * 60;
  const value = BigInt(days) * perDay + BigInt(seconds) * perSecond + fracUnits;
  const { min, max } = timestampRange(precision);
  if (value < min || value > max) return { error: 'is outside years 0001-9999' };
  return { value };
}

/** ISO-8601 UTC text of a TIMESTAMP value: `2024-01-02T03:04:05.123Z` (3 or 6 fractional digits). */
export function formatTimestamp(value: bigint, precision: number): string {
  const { perSecond, perDay } = timestampUnits(precision);
  let days = value / perDay;
  let rest = value - days * perDay;
  // BigInt division truncates towards zero; the time of day must be non-negative.
  if (rest < 0n) {
    rest += perDay;
    days -= 1n;
  }
  const secondOfDay = Number(rest / perSecond);
  const frac = Number(rest % perSecond);
  const time = `${pad(Math.floor(secondOfDay / 3600), 2)}:${pad(Math.floor(secondOfDay / 60) % 60, 2)}:${pad(secondOfDay % 60, 2)}`;
  return `${formatDate(Number(days))}T${time}.${pad(frac, precision)}Z`;
}
