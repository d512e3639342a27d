/**
 * Resolves what a read asks for — a snapshot id, a point in time or a tag — to one snapshot. A
 * snapshot that does not exist or has expired is a clear error naming the available range.
 */
import { InvalidArgumentError, SnapshotNotFoundError, TagError } from '../errors.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import { readTag } from '../snapshot/tags.js';
import type { Table } from './table.js';

export interface SnapshotSpec {
  snapshotId?: number;
  /** Epoch milliseconds: the last snapshot committed at or before this time. */
  timestamp?: number;
  tag?: string;
}

/** The snapshot a spec names, or the latest (undefined for a table with no commit yet). */
export async function resolveSnapshot(table: Table, spec: SnapshotSpec): Promise<Snapshot | undefined> {
  const given = [spec.snapshotId !== undefined, spec.timestamp !== undefined, spec.tag !== undefined].filter(Boolean).length;
  if (given > 1) throw new InvalidArgumentError('give at most one of snapshot id, timestamp and tag');
  const sm = table.snapshots;
  if (spec.tag !== undefined) {
    try {
      return await readTag(table.store, table.path, spec.tag);
    } catch (e) {
      if (e instanceof TagError && e.kind === 'not-found') {
        throw new TagError(`tag "${spec.tag}" does not exist in ${table.name}; list tags with \`varve sys ${table.name} tags\``);
      }
      throw e;
    }
  }
  if (spec.snapshotId !== undefined) {
    if (!Number.isInteger(spec.snapshotId) || spec.snapshotId < 1) {
      throw new InvalidArgumentError(`snapshot id must be a positive integer, got ${spec.snapshotId}`);
    }
    const snapshot = await sm.tryRead(spec.snapshotId);
    if (snapshot) return snapshot;
    throw await notFound(table, `snapshot ${spec.snapshotId}`);
  }
  if (spec.timestamp !== undefined) {
    const snapshot = await sm.snapshotAtOrBefore(spec.timestamp);
    if (snapshot) return snapshot;
    throw await notFound(table, `a snapshot at or before ${new Date(spec.timestamp).toISOString()}`);
  }
  return sm.latest();
}

async function notFound(table: Table, what: string): Promise<SnapshotNotFoundError> {
  const latest = await table.snapshots.latestId();
  const earliest = await table.snapshots.earliestId();
  if (latest === undefined || earliest === undefined) {
    return new SnapshotNotFoundError(`${table.name} has no ${what}: the table has no snapshots yet`);
  }
  return new SnapshotNotFoundError(
    `${table.name} has no ${what}; available snapshots are ${earliest}..${latest} (older ones have expired)`,
    { earliest, latest },
  );
}
