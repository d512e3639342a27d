/** Parsing of CLI flag values shared by the commands. */
import type { Command } from 'commander';
import { InvalidArgumentError } from '../errors.js';
import { parseDuration } from '../schema/options.js';
import type { SnapshotSpec } from '../table/time-travel.js';

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
  if (given.length > 1) throw new InvalidArgumentError(`give one of --${given.join(', --')}, not several: each picks a snapshot`);
  if (o.snapshot !== undefined) {
    const id = Number(o.snapshot);
    if (!/^\s*\d+\s*$/.test(o.snapshot) || !Number.isSafeInteger(id) || id < 1) throw new InvalidArgumentError(`--snapshot must be a snapshot id (an integer ≥ 1), got "${o.snapshot}"`);
    return { snapshotId: id };
  }
  if (o.timestamp !== undefined) return { timestamp: parseTimestamp(o.timestamp) };
  if (o.tag !== undefined) return { tag: o.tag };
  return {};
}
