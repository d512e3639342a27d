/**
 * Value syntax of table options: integers, booleans, enums, lists, durations (`1 h`, `30 min`,
 * `500 ms`, a plain number is milliseconds) and memory sizes (`256 mb`, `1 gb`, a plain number is
 * bytes; units are powers of 1024, as in Paimon's MemorySize).
 */

/** The value types an option can have. */
export type OptionType = 'int' | 'long' | 'boolean' | 'string' | 'enum' | 'duration' | 'memory' | 'list';

/** The parsed value of an option: numbers for int/long/duration (ms)/memory (bytes), string[] for lists. */
export type OptionValue = number | boolean | string | string[];

const DURATION_UNITS: Record<string, number> = {};
for (const [ms, names] of [
  [1, ['ms', 'milli', 'millis', 'millisecond', 'milliseconds']],
  [1000, ['s', 'sec', 'secs', 'second', 'seconds']],
  [60_000, ['m', 'min', 'mins', 'minute', 'minutes']],
  [3_600_000, ['h', 'hour', 'hours']],
  [86_400_000, ['d', 'day', 'days']],
] as const) {
  for (const n of names) DURATION_UNITS[n] = ms;
}

const MEMORY_UNITS: Record<string, number> = {};
for (const [bytes, names] of [
  [1, ['b', 'bytes']],
  [1024, ['k', 'kb', 'kib', 'kibibytes']],
  [1024 ** 2, ['m', 'mb', 'mib', 'mebibytes']],
  [1024 ** 3, ['g', 'gb', 'gib', 'gibibytes']],
  [1024 ** 4, ['t', 'tb', 'tib', 'tebibytes']],
] as const) {
  for (const n of names) MEMORY_UNITS[n] = bytes;
}

const AMOUNT = /^\s*(\d+)\s*([A-Za-z]*)\s*$/;

/** Milliseconds of `1 h`, `30 min`, `10 s`, `500 ms`, `1d`, `2 hours`, `250` (ms); undefined when malformed. */
export function parseDuration(text: string): number | undefined {
  return parseAmount(text, DURATION_UNITS);
}

/** Bytes of `256 mb`, `64MB`, `1 gb`, `512 kb`, `1048576`; undefined when malformed. */
export function parseMemory(text: string): number | undefined {
  return parseAmount(text, MEMORY_UNITS);
}

function parseAmount(text: string, units: Record<string, number>): number | undefined {
  const m = AMOUNT.exec(text);
  if (m === null) return undefined;
  const unit = m[2] === '' ? 1 : units[m[2].toLowerCase()];
  if (unit === undefined) return undefined;
  const v = Number(m[1]) * unit;
  return Number.isSafeInteger(v) ? v : undefined;
}

/** The items of a comma-separated list, trimmed; undefined when an item is empty (`a,,b`). */
export function parseList(text: string): string[] | undefined {
  if (text.trim() === '') return [];
  const items = text.split(',').map((s) => s.trim());
  return items.some((s) => s === '') ? undefined : items;
}

const INTEGER = /^\s*[+-]?\d+\s*$/;

/** How each type's values are written, for error messages and the generated docs. */
export const TYPE_FORMATS: Record<OptionType, string> = {
  int: 'an integer',
  long: 'an integer',
  boolean: 'true or false',
  string: 'text',
  enum: 'one of the allowed values',
  duration: 'a duration such as "10 s", "30 min", "1 h", "1 d" or a number of milliseconds',
  memory: 'a size such as "512 kb", "64 mb", "1 gb" or a number of bytes',
  list: 'a comma-separated list such as "a,b"',
};

/**
 * Parses `text` as a value of `type`; returns undefined when it is not one. Enums are matched
 * case-insensitively and returned in their declared spelling; int is 32-bit, long a safe integer.
 */
export function parseOptionValue(type: OptionType, text: string, allowed?: readonly string[]): OptionValue | undefined {
  switch (type) {
    case 'int':
    case 'long': {
      if (!INTEGER.test(text)) return undefined;
      const n = Number(text);
      const ok = type === 'int' ? n >= -2147483648 && n <= 2147483647 : Number.isSafeInteger(n);
      return ok ? n : undefined;
    }
    case 'boolean': {
      const t = text.trim().toLowerCase();
      return t === 'true' ? true : t === 'false' ? false : undefined;
    }
    case 'enum': {
      const t = text.trim().toLowerCase();
      return allowed?.find((a) => a.toLowerCase() === t);
    }
    case 'duration':
      return parseDuration(text);
    case 'memory':
      return parseMemory(text);
    case 'list':
      return parseList(text);
    case 'string':
      return text;
  }
}

/** Edit distance between two strings (Levenshtein), for "did you mean" suggestions. */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length];
}
