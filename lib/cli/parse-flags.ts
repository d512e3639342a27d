/**
 * Parsing of CLI flag values, shared by the commands (lib/cli/commands/): one place for each kind
 * of flag. Loaded to declare the commands (`varve --help`): it imports no table code.
 */
import type { Command } from 'commander';
import { InvalidArgumentError } from '../errors.js';
import { parseDuration } from '../schema/option-values.js';
import type { StreamOptions } from '../stream/stream-options.js';
import type { InputFormat } from '../table/input.js';
import type { SnapshotSpec } from '../table/time-travel.js';
import type { OutputFormat } from './output.js';

export interface GlobalOptions {
  warehouse?: string;
}

/** Epoch ms from an ISO-8601 time or an integer of epoch milliseconds. */
export function parseTimestamp(text: string): number {
  if (/^\d+$/.test(text.trim())) return Number(text.trim());
  const ms = Date.parse(text);
  if (Number.isNaN(ms)) {
    throw new InvalidArgumentError(
      `"${text}" is not a time; use ISO-8601 (2024-05-01T12:00:00Z) or epoch milliseconds`,
    );
  }
  return ms;
}

/** A positive integer flag value, or a clear error naming the flag. */
export function parsePositiveInt(flag: string, text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0)
    throw new InvalidArgumentError(`${flag} must be a non-negative integer, got "${text}"`);
  return n;
}

/**
 * Milliseconds from a duration flag, in the one form every duration of varve takes (option values
 * too): `500 ms`, `30 s`, `8s`, `10 min`, `2 h`, `7 d`; a bare integer is milliseconds.
 */
export function parseDurationFlag(flag: string, text: string): number {
  const ms = /^\s*\d+\s*$/.test(text) ? Number(text) : parseDuration(text);
  if (ms === undefined || !Number.isFinite(ms) || ms < 0) {
    throw new InvalidArgumentError(
      `${flag} "${text}" is not a duration; use e.g. 500 ms, 8s, 10 min, 2 h, 7 d (a bare number is milliseconds)`,
    );
  }
  return ms;
}

/** The time-travel flags, as commander gives them. */
export interface SnapshotFlags {
  snapshot?: string;
  timestamp?: string;
  tag?: string;
}

/**
 * Registers the flags that pick a snapshot, the same on every command that reads at one (read,
 * count, audit-log) or starts a stream at one (tail): `--snapshot N`, `--timestamp T`, `--tag NAME`.
 */
export function addSnapshotFlags(cmd: Command, verb: string): Command {
  return cmd
    .option('--snapshot <id>', `${verb} snapshot N`)
    .option('--timestamp <time>', `${verb} the last snapshot at or before this time (ISO-8601 or epoch ms)`)
    .option('--tag <name>', `${verb} the snapshot of this tag`);
}

/** The snapshot the time-travel flags name (at most one of them); empty for the latest. */
export function snapshotSpecOf(o: SnapshotFlags): SnapshotSpec {
  const given = (['snapshot', 'timestamp', 'tag'] as const).filter((k) => o[k] !== undefined);
  if (given.length > 1)
    throw new InvalidArgumentError(`give one of --${given.join(', --')}, not several: each picks a snapshot`);
  if (o.snapshot !== undefined) {
    const id = Number(o.snapshot);
    if (!/^\s*\d+\s*$/.test(o.snapshot) || !Number.isSafeInteger(id) || id < 1)
      throw new InvalidArgumentError(`--snapshot must be a snapshot id (an integer ≥ 1), got "${o.snapshot}"`);
    return { snapshotId: id };
  }
  if (o.timestamp !== undefined) return { timestamp: parseTimestamp(o.timestamp) };
  if (o.tag !== undefined) return { tag: o.tag };
  return {};
}

/** The items of a comma-separated flag value, trimmed, empty ones dropped. */
export function list(value: string): string[] {
  return value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/** Commander's accumulator for a repeatable flag. */
export function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** `key=value` pairs of repeated `-o`/`--set` flags. */
export function parseOptionPairs(pairs: string[] = []): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of pairs) {
    const i = p.indexOf('=');
    if (i <= 0) throw new InvalidArgumentError(`option "${p}" must look like key=value, e.g. -o bucket=4`);
    out[p.slice(0, i).trim()] = p.slice(i + 1).trim();
  }
  return out;
}

/** An integer flag value ≥ 0 (safe integer), or a clear error naming the flag. */
export function parseNonNegativeInt(flag: string, text: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(n))
    throw new InvalidArgumentError(`${flag} must be an integer ≥ 0, got "${text}"`);
  return n;
}

/** The input format of `write`/`delete`: the flag, else from the file name, else JSONL. */
export async function inputFormat(file: string | undefined, flag: string | undefined): Promise<InputFormat> {
  const { formatFromFileName } = await import('../table/input.js');
  const f = flag ?? (file && file !== '-' ? formatFromFileName(file) : undefined) ?? 'jsonl';
  if (f !== 'jsonl' && f !== 'csv' && f !== 'parquet')
    throw new InvalidArgumentError(`--format must be jsonl, csv or parquet, got "${f}"`);
  return f;
}

/** The output format of the reading commands (default: an aligned table). */
export function outputFormat(flag: string | undefined): OutputFormat {
  const f = flag ?? 'table';
  if (f !== 'table' && f !== 'jsonl' && f !== 'csv')
    throw new InvalidArgumentError(`--format must be table, jsonl or csv, got "${f}"`);
  return f;
}

/** `--from` of `varve tail`: latest-full | latest | earliest | full | compacted-full | snapshot:N | snapshot-full:N | timestamp:T. */
export function parseFrom(text: string): StreamOptions {
  if (
    text === 'latest-full' ||
    text === 'latest' ||
    text === 'earliest' ||
    text === 'full' ||
    text === 'compacted-full'
  )
    return { mode: text };
  const m = /^(snapshot|snapshot-full|timestamp):(.+)$/.exec(text);
  if (m && m[1] === 'timestamp') return { mode: 'from-timestamp', timestampMillis: parseTimestamp(m[2]) };
  if (m) {
    const id = Number(m[2]);
    if (!Number.isInteger(id) || id < 1)
      throw new InvalidArgumentError(`--from ${text}: the snapshot id must be an integer ≥ 1`);
    return { mode: m[1] === 'snapshot' ? 'from-snapshot' : 'from-snapshot-full', snapshotId: id };
  }
  throw new InvalidArgumentError(
    `--from "${text}" is not a start position; use latest-full, latest, earliest, compacted-full, snapshot:N, snapshot-full:N or timestamp:T (ISO-8601 or epoch ms)`,
  );
}
