/**
 * The options that shape a stream (Paimon's names, declared in lib/schema/option-catalog.ts):
 * where it starts (`scan.mode`, `scan.snapshot-id`, `scan.tag-name`, `scan.timestamp-millis`),
 * whether a stored consumer position wins (`consumer.ignore-progress`) and what happens when the
 * next snapshot has expired (`scan.on-expired`, beyond Paimon). Taken from the table's options,
 * overridden per stream (Paimon's dynamic options: the CLI's `--from`, a runtime's consumer).
 */
import { OptionError } from '../errors.js';
import type { ScanMode } from '../schema/options.js';
import type { Table } from '../table/table.js';

export type { ScanMode } from '../schema/options.js';

/** `fail` (default): an expired start or next snapshot is a SnapshotExpiredError; `skip-to-earliest` accepts the gap. */
export type OnExpired = 'fail' | 'skip-to-earliest';

/** How a stream starts and follows; every field optional, the table's options fill the rest. */
export interface StreamOptions {
  mode?: ScanMode;
  snapshotId?: number;
  /** A tag whose snapshot a `from-snapshot` / `from-snapshot-full` stream starts at. */
  tag?: string;
  timestampMillis?: number;
  ignoreProgress?: boolean;
  onExpired?: OnExpired;
}

/** Resolved stream options: `full` replaced by `latest-full`, a tag by its snapshot id. */
export interface ResolvedStreamOptions {
  mode: Exclude<ScanMode, 'full'>;
  snapshotId?: number;
  tag?: string;
  timestampMillis?: number;
  ignoreProgress: boolean;
  onExpired: OnExpired;
}

/**
 * The table's stream options with `overrides` on top. An override of the mode alone keeps the
 * table's snapshot id / timestamp only when that mode needs them.
 */
export function resolveStreamOptions(table: Table, overrides: StreamOptions = {}): ResolvedStreamOptions {
  const o = table.options;
  const mode = overrides.mode ?? o.scanMode;
  const snapshotId = overrides.snapshotId ?? o.scanSnapshotId;
  const tag = overrides.tag ?? o.scanTagName;
  const timestampMillis = overrides.timestampMillis ?? o.scanTimestampMillis;
  const resolved = mode === 'full' ? 'latest-full' : mode; // Paimon's deprecated alias
  if (
    (resolved === 'from-snapshot' || resolved === 'from-snapshot-full') &&
    snapshotId === undefined &&
    tag === undefined
  ) {
    throw new OptionError(
      `scan.mode ${resolved} needs scan.snapshot-id (a snapshot id ≥ 1) or scan.tag-name`,
      'scan.snapshot-id',
    );
  }
  if (resolved === 'from-timestamp' && timestampMillis === undefined) {
    throw new OptionError(
      'scan.mode from-timestamp needs scan.timestamp-millis (epoch milliseconds)',
      'scan.timestamp-millis',
    );
  }
  return {
    mode: resolved,
    snapshotId,
    tag,
    timestampMillis,
    ignoreProgress: overrides.ignoreProgress ?? o.consumerIgnoreProgress,
    onExpired: overrides.onExpired ?? o.scanOnExpired,
  };
}
