/**
 * Parsing a raw option map (strings, as stored in the schema) against the declaration: each value
 * type-checked, per-column options split into column and suffix, unknown keys answered with the
 * closest known names. Cross-option and schema checks are in option-checks.ts.
 */
import { OptionError } from '../errors.js';
import {
  COLUMN_FORM_OPTIONS,
  FIELD_OPTIONS,
  TABLE_OPTIONS,
  UNSUPPORTED_OPTIONS,
  type ColumnFormOptionDecl,
  type FieldOptionDecl,
  type OptionDecl,
} from './option-catalog.js';
import { editDistance, parseList, parseOptionValue, TYPE_FORMATS, type OptionValue } from './option-values.js';

/** Table option declarations by key. */
export const OPTION_BY_KEY: ReadonlyMap<string, OptionDecl> = new Map(TABLE_OPTIONS.map((d) => [d.key, d]));

/** One `fields.<col>.<suffix>` option, parsed. */
export interface FieldOptionValue {
  decl: FieldOptionDecl;
  /** The `<col>` part as written (for sequence groups, the comma list). */
  target: string;
  /** The columns it names: one, or the list of a sequence group. */
  columns: string[];
  value: OptionValue;
}

/** One `<key>#<col>` option (a Parquet writer option for one column), parsed. */
export interface ColumnFormValue {
  decl: ColumnFormOptionDecl;
  column: string;
  value: OptionValue;
}

/** A raw option map after type checks. */
export interface ParsedOptions {
  table: Map<string, OptionValue>;
  /** Per-column options by full key. */
  fields: Map<string, FieldOptionValue>;
  /** `<key>#<col>` options by full key. */
  columnForms: Map<string, ColumnFormValue>;
}

/** The per-column declaration and target of `key`, or undefined when it is not a `fields.<col>.<suffix>` key. */
export function matchFieldOption(key: string): { decl: FieldOptionDecl; target: string } | undefined {
  if (!key.startsWith('fields.') || OPTION_BY_KEY.has(key)) return undefined;
  for (const decl of FIELD_OPTIONS) {
    const tail = `.${decl.suffix}`;
    if (key.endsWith(tail) && key.length > 'fields.'.length + tail.length) {
      return { decl, target: key.slice('fields.'.length, key.length - tail.length) };
    }
  }
  return undefined;
}

/**
 * The declaration and column of a `<key>#<col>` key, or undefined when `key` has no `#`. Throws
 * OptionError for a `#` form of an option that has none, or one naming no column.
 */
export function matchColumnFormOption(key: string): { decl: ColumnFormOptionDecl; column: string } | undefined {
  const at = key.indexOf('#');
  if (at < 0) return undefined;
  const base = key.slice(0, at);
  const decl = COLUMN_FORM_OPTIONS.find((d) => d.key === base);
  if (decl === undefined) return undefined;
  const column = key.slice(at + 1);
  if (column === '') throw new OptionError(`option ${key} names no column; write it like ${decl.pattern}`, key);
  return { decl, column };
}

/** Type-checks every entry of `raw`; throws OptionError for an unknown key or an ill-typed value. */
export function parseOptionMap(raw: Record<string, string>): ParsedOptions {
  const out: ParsedOptions = { table: new Map(), fields: new Map(), columnForms: new Map() };
  if (raw === null || typeof raw !== 'object')
    throw new OptionError('table options must be a map of option name to text value', '');
  for (const [key, text] of Object.entries(raw)) {
    if (typeof text !== 'string') {
      throw new OptionError(
        `option ${key} must be given as text, e.g. "${key}": "${String(text)}"; got ${typeof text}`,
        key,
      );
    }
    const decl = OPTION_BY_KEY.get(key);
    if (decl) {
      out.table.set(key, parseDeclared(decl, text));
      continue;
    }
    const field = matchFieldOption(key);
    if (field) {
      const value = parseTyped(key, field.decl.type, text, field.decl.allowed);
      const columns = field.decl.columnList ? parseList(field.target) : [field.target];
      if (columns === undefined || columns.length === 0) {
        throw new OptionError(`option ${key} names no column list; write it like ${field.decl.pattern}`, key);
      }
      if (field.decl.columnList && (value as string[]).length === 0) {
        throw new OptionError(`option ${key} needs the columns of the group as its value, e.g. "${key}": "a,b"`, key);
      }
      out.fields.set(key, { decl: field.decl, target: field.target, columns, value });
      continue;
    }
    const column = matchColumnFormOption(key);
    if (column) {
      out.columnForms.set(key, { ...column, value: parseTyped(key, column.decl.type, text) });
      continue;
    }
    const unsupported = UNSUPPORTED_OPTIONS[key] ?? UNSUPPORTED_OPTIONS[key.split('#')[0]];
    if (unsupported !== undefined)
      throw new OptionError(`option ${key} is not supported by varve: ${unsupported}`, key);
    if (key.startsWith('parquet.')) throw unknownParquetOption(key);
    throw unknownOption(key);
  }
  return out;
}

/** The OptionError for a `parquet.*` key varve does not know: which Parquet writer options it supports. */
function unknownParquetOption(key: string): OptionError {
  const base = key.split('#')[0];
  const supported = [
    ...TABLE_OPTIONS.filter((d) => d.key.startsWith('parquet.')).map((d) => d.key),
    ...COLUMN_FORM_OPTIONS.map((d) => d.pattern),
  ];
  const what = OPTION_BY_KEY.has(base)
    ? `option ${base} has no per-column form`
    : `${key} is not a Parquet writer option varve supports`;
  return new OptionError(
    `${what}; the parquet.* options varve supports are ${supported.join(', ')} (docs/OPTIONS.md)`,
    key,
  );
}

function parseDeclared(decl: OptionDecl, text: string): OptionValue {
  if (decl.key === 'bucket' && /^\s*-2\s*$/.test(text)) {
    throw new OptionError(
      `option bucket = -2 (Paimon's postpone bucket mode) is not supported: varve has fixed buckets only, so a key's bucket never moves; set bucket to a number ≥ 1, e.g. bucket=4`,
      decl.key,
    );
  }
  const value = parseTyped(decl.key, decl.type, text, decl.allowed);
  if (typeof value === 'number') {
    if ((decl.min !== undefined && value < decl.min) || (decl.max !== undefined && value > decl.max)) {
      const range = decl.max === undefined ? `at least ${decl.min}` : `from ${decl.min} to ${decl.max}`;
      throw new OptionError(
        `option ${decl.key} = "${text}" is out of range; it must be ${range}${unitHint(decl)}`,
        decl.key,
      );
    }
  }
  const problem = decl.check?.(value);
  if (problem !== undefined) throw new OptionError(`option ${decl.key} = "${text}" is not valid: ${problem}`, decl.key);
  return value;
}

function unitHint(decl: OptionDecl): string {
  return decl.type === 'duration' ? ' milliseconds' : decl.type === 'memory' ? ' bytes' : '';
}

function parseTyped(key: string, type: OptionDecl['type'], text: string, allowed?: readonly string[]): OptionValue {
  const value = parseOptionValue(type, text, allowed);
  if (value !== undefined) return value;
  const expected = type === 'enum' ? `one of ${allowed!.join(', ')}` : TYPE_FORMATS[type];
  throw new OptionError(`option ${key} = "${text}" is not valid; expected ${expected}`, key);
}

/** The OptionError for an unknown key, suggesting the closest known names. */
function unknownOption(key: string): OptionError {
  const close = suggestKeys(key);
  const hint = close.length ? ` (did you mean ${close.join(' or ')}?)` : '';
  return new OptionError(`unknown table option "${key}"${hint}; every option is listed in docs/OPTIONS.md`, key);
}

/** Up to three known option names closest to `key` (per-column options with `key`'s column). */
function suggestKeys(key: string): string[] {
  const candidates: string[] = TABLE_OPTIONS.map((d) => d.key);
  const m = /^fields\.(.+)\.[^.]+$/.exec(key);
  if (m) candidates.push(...FIELD_OPTIONS.map((d) => `fields.${m[1]}.${d.suffix}`));
  const limit = Math.max(2, Math.floor(key.length / 3));
  return candidates
    .map((c) => {
      const edit = editDistance(key.toLowerCase(), c);
      let d = edit;
      // A fragment of a real name ("compaction-trigger") is as good a lead as a typo.
      if (key.length >= 4 && (c.includes(key.toLowerCase()) || key.toLowerCase().includes(c))) d = Math.min(d, 1);
      // So are its words, abbreviated or not ("consumer.expire", "target-size").
      else if (sharesWords(key, c)) d = Math.min(d, 2);
      return { c, d, edit };
    })
    .filter((x) => x.d <= limit)
    .sort((a, b) => a.d - b.d || a.edit - b.edit || a.c.localeCompare(b.c))
    .slice(0, 3)
    .map((x) => x.c);
}

const words = (s: string) =>
  s
    .toLowerCase()
    .split(/[-._,]/)
    .filter((w) => w.length > 0);

/** True when every word of `key` (3+ letters) starts a word of `candidate` with its first 4 letters. */
function sharesWords(key: string, candidate: string): boolean {
  const mine = words(key).filter((w) => w.length >= 3);
  const theirs = words(candidate);
  return mine.length > 0 && mine.every((w) => theirs.some((t) => t.startsWith(w.slice(0, 4))));
}

/** The value of `key` with its default (plain or derived) applied; undefined when unset without default. */
export function resolveOption(parsed: ParsedOptions, key: string): OptionValue | undefined {
  const decl = OPTION_BY_KEY.get(key);
  if (decl) {
    const set = parsed.table.get(key);
    if (set !== undefined) return set;
    if (decl.default === undefined) return undefined;
    if (typeof decl.default === 'string') return parseOptionValue(decl.type, decl.default, decl.allowed);
    return decl.default.compute((k) => resolveOption(parsed, k));
  }
  if (matchColumnFormOption(key)) return parsed.columnForms.get(key)?.value;
  const field = matchFieldOption(key);
  if (field) {
    const set = parsed.fields.get(key);
    if (set !== undefined) return set.value;
    return field.decl.default === undefined
      ? undefined
      : parseOptionValue(field.decl.type, field.decl.default, field.decl.allowed);
  }
  throw unknownOption(key);
}
