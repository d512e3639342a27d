/**
 * The one way varve reads JSON. Every file varve saves (snapshots, schemas, consumers, progress,
 * leases, fences, journals, indexes, …) and every message it sends itself (commit, split and
 * compaction messages) is parsed by `parseJsonFile` / `parseJsonMessage` against a valibot schema
 * of its shape, kept beside the type it validates: a file holding `null`, an array or an object
 * of the wrong shape is a CorruptMetadataError naming the file and the first thing that is wrong,
 * never "Cannot read properties of null" three calls later. Schemas accept unknown extra fields,
 * so a file written by a newer varve still reads in an older one.
 *
 * `parseJsonText` is for text a user hands over (input records, schema flags): it returns
 * `unknown`, which the caller checks with its own, user-facing errors.
 */
import * as v from 'valibot';
import { CorruptMetadataError } from './errors.js';

/** A schema whose output is `T`, whatever its input. */
export type JsonSchema<T> = v.GenericSchema<unknown, T>;

/** A JSON number that is a safe integer (ids, counts, epoch ms, tokens). */
export const jsonInt = v.pipe(v.number(), v.safeInteger());

/** A JSON number that is a time in epoch ms (finite; a store's modification time may carry a fraction). */
export const jsonTime = v.pipe(v.number(), v.finite());

/** A JSON object of string values (snapshot properties, table options). */
export const jsonStringMap = v.record(v.string(), v.string());

/** A JSON object of integer values (per-bucket snapshots). */
export const jsonIntMap = v.record(v.string(), jsonInt);

/** Any JSON object (not an array: valibot's object schemas accept arrays), its fields unchecked (the caller checks them). */
export const jsonObject = v.custom<Record<string, unknown>>(
  (o) => typeof o === 'object' && o !== null && !Array.isArray(o),
  'Object',
);

const DEFAULT_FIX = 'the file is damaged or was not written by varve; restore it from a backup';

const decoder = new TextDecoder();

/** Parses JSON a user supplied; throws the SyntaxError of JSON.parse, for the caller to word. */
export function parseJsonText(text: string): unknown {
  return JSON.parse(text);
}

/**
 * A snapshot property varve wrote as JSON, parsed against `schema`; undefined when it is absent,
 * not JSON or not of that shape (an optional property another writer got wrong is ignored: its
 * reader falls back to what it would do without it).
 */
export function parseJsonProperty<T>(text: string | undefined, schema: JsonSchema<T>): T | undefined {
  if (text === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const r = v.safeParse(schema, value);
  return r.success ? r.output : undefined;
}

/** What is wrong, from valibot's first issue: `buckets.bucket-0.snapshot: expected number, got "7"`. */
function describeIssue(issue: v.BaseIssue<unknown>): string {
  const path = v.getDotPath(issue);
  const where = path === null || path === '' ? 'the top level' : path;
  if (issue.received === 'undefined') return `${where} is missing`;
  // A custom schema's expectation is its message (jsonObject: 'Object').
  return `${where}: expected ${issue.type === 'custom' ? issue.message : (issue.expected ?? issue.message)}, got ${issue.received}`;
}

function parseOrFail<T>(text: string, schema: JsonSchema<T>, fail: (problem: string, cause?: unknown) => never): T {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    fail(`it is not valid JSON (${(e as Error).message})`, e);
  }
  const r = v.safeParse(schema, value, { abortEarly: true });
  if (!r.success) fail(describeIssue(r.issues[0]));
  return r.output;
}

/** How a file is named in errors, besides its location. */
export interface JsonFileOptions {
  /** What the file is ("snapshot file", "manifest list"), put before its location. */
  what?: string;
  /** What to do about it; by default, restore it from a backup. */
  fix?: string;
}

/**
 * Parses the content of saved JSON file `file` (its full location: a path or a URI; or, for JSON
 * inside a file, what holds it) against `schema`. Throws CorruptMetadataError naming the file,
 * what was wrong, and what to do.
 */
export function parseJsonFile<T>(
  content: string | Uint8Array,
  schema: JsonSchema<T>,
  file: string,
  opts: JsonFileOptions = {},
): T {
  const text = typeof content === 'string' ? content : decoder.decode(content);
  return parseOrFail(text, schema, (problem, cause) => {
    const name = opts.what === undefined ? file : `${opts.what} ${file}`;
    throw new CorruptMetadataError(`${name} is damaged: ${problem}; ${opts.fix ?? DEFAULT_FIX}`, { cause, file });
  });
}

/**
 * Parses a message body varve sent itself (`what`: "commit-queue message", …) against `schema`.
 * Throws CorruptMetadataError quoting the start of the body and what was wrong.
 */
export function parseJsonMessage<T>(body: string, schema: JsonSchema<T>, what: string): T {
  return parseOrFail(body, schema, (problem, cause) => {
    throw new CorruptMetadataError(`a ${what} is not one varve sent (${problem}): ${body.slice(0, 120)}`, { cause });
  });
}
