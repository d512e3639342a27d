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
  const given = [spec.snapshotId !== undefined, spec.timestamp !== undefined, spec.tag !== undefined].filter(
    Boolean,
  ).length;
  if (given > 1) throw new InvalidArgumentError('give at most one of snapshot id, timestamp and tag');
  const sm = table.snapshots;
  if (spec.tag !== undefined) {
    try {
      return await readTag(table.store, table.path, spec.tag);
    } catch (e) {
      if (e instanceof TagError && e.kind === 'not-found') {
        throw new TagError(
          `tag "${spec.tag}" does not exist in ${table.name}; list tags with \`varve sys ${table.name} tags\``,
        );
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

/**
 * The table seen through the schema a read of `snapshot` uses. Time travel (a snapshot id, time
 * or tag in `spec`) reads a snapshot with the schema it was written under: the columns, names and
 * types of that moment. A read of the latest snapshot reads it with the table's current schema
 * (the newer of the handle's and the snapshot's), which is also the schema writes use: after a
 * rollback to a snapshot written before an alter (a rollback leaves the schema alone, as Paimon's
 * does), its files are read by field id into the current columns, so reads and writes agree.
 */
export async function tableForRead(table: Table, snapshot: Snapshot | undefined, spec: SnapshotSpec): Promise<Table> {
  if (snapshot === undefined || snapshot.schemaId === table.schema.id) return table;
  const travels = spec.snapshotId !== undefined || spec.timestamp !== undefined || spec.tag !== undefined;
  if (!travels && snapshot.schemaId < table.schema.id) return table;
  return table.withSchema(await table.schemaById(snapshot.schemaId));
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
