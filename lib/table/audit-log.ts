/**
 * The audit log: rows with their row kind (+I, -U, +U, -D). At a snapshot it is the merged state
 * with retractions kept; with `incremental-between A,B` it is what happened after A up to B —
 * in `delta` mode the merged net change of the APPEND commits' new files, in `changelog` mode the
 * changelog files the commits produced, in commit order.
 */
import type * as arrow from 'apache-arrow';
import { InvalidArgumentError } from '../errors.js';
import { concatTables, emptyTable } from '../format/columns.js';
import { physicalArrowSchema } from '../format/arrow-schema.js';
import { readChangelogFiles, readDeltaEntries } from '../manifest/scan.js';
import type { ManifestEntry } from '../manifest/types.js';
import { KIND_COLUMN, SEQUENCE_COLUMN } from '../schema/types.js';
import { mergeBuckets, readEntry, readTable } from './read.js';
import type { Table } from './table.js';
import { filterTable, toPredicate, type Predicate } from './predicate.js';
import type { SnapshotSpec } from './time-travel.js';
import { readTag } from '../snapshot/tags.js';

export type IncrementalMode = 'delta' | 'changelog';

/** At a snapshot (by id, time or tag: the latest when none), or between two with `incrementalBetween`. */
export interface AuditLogOptions extends SnapshotSpec {
  /** Changes after snapshot `from` up to and including snapshot `to`. */
  incrementalBetween?: { from: number; to: number };
  mode?: IncrementalMode;
  /** Only rows (of any kind) for which this predicate is true. */
  where?: string | Predicate;
}

/**
 * The range `A,B` names (as given to `--incremental-between` or the table option): each end a
 * snapshot id or a tag name; the changes after A up to B. Throws InvalidArgumentError when it is
 * not two ends with A before B, and for an unknown tag.
 */
export async function resolveIncrementalBetween(table: Table, text: string): Promise<{ from: number; to: number }> {
  const ends = text.split(',').map((s) => s.trim());
  if (ends.length !== 2 || ends.some((e) => e === '')) {
    throw new InvalidArgumentError(
      `incremental-between must be two snapshot ids or tag names "A,B" (the changes after A up to B), got "${text}"`,
    );
  }
  const [from, to] = await Promise.all(
    ends.map(async (e) => (/^\d+$/.test(e) ? Number(e) : (await readTag(table.store, table.path, e)).id)),
  );
  if (from >= to)
    throw new InvalidArgumentError(`incremental-between needs A before B, got "${text}" (snapshots ${from},${to})`);
  return { from, to };
}

/**
 * The range of Paimon's `incremental-between-timestamp` `T1,T2` (epoch ms): the changes of the
 * snapshots committed after T1 up to T2, as snapshot ids (after the last one at or before T1, up
 * to the last one at or before T2).
 */
export async function resolveIncrementalBetweenTimestamp(
  table: Table,
  t1: number,
  t2: number,
): Promise<{ from: number; to: number }> {
  if (t1 >= t2) throw new InvalidArgumentError(`incremental-between-timestamp needs T1 before T2, got ${t1},${t2}`);
  const from = (await table.snapshots.snapshotAtOrBefore(t1))?.id ?? 0;
  const to = (await table.snapshots.snapshotAtOrBefore(t2))?.id ?? 0;
  return { from, to: Math.max(from, to) };
}

/** Rows with their kinds, as an Arrow table with the system columns `_SEQUENCE_NUMBER`, `_VALUE_KIND`. */
export async function readAuditLog(table: Table, opts: AuditLogOptions = {}): Promise<arrow.Table> {
  if (!opts.incrementalBetween)
    return readTable(table, {
      snapshotId: opts.snapshotId,
      timestamp: opts.timestamp,
      tag: opts.tag,
      keepDeletes: true,
      where: opts.where,
    });
  const log = await readIncremental(table, opts, opts.incrementalBetween);
  if (opts.where === undefined) return log;
  const end = await table.snapshotFor({ snapshotId: opts.incrementalBetween.to });
  const fields = end ? (await table.schemaById(end.schemaId)).fields : table.schema.fields;
  return filterTable(log, toPredicate(opts.where, fields), fields);
}

async function readIncremental(
  table: Table,
  opts: AuditLogOptions,
  range: { from: number; to: number },
): Promise<arrow.Table> {
  const { from, to } = range;
  // Both ends must exist: a range that reaches into expired snapshots would silently lose changes.
  // (0 means "from the table's beginning").
  if (from > 0) await table.snapshotFor({ snapshotId: from });
  const end = await table.snapshotFor({ snapshotId: to });
  // The changes are read through the schema of the range's end.
  if (end && end.schemaId !== table.schema.id) table = table.withSchema(await table.schemaById(end.schemaId));
  const schema = physicalArrowSchema(table.schema);
  const mode = opts.mode ?? 'delta';
  if (mode === 'changelog') {
    const parts: arrow.Table[] = [];
    for (let id = from + 1; id <= to; id++) {
      const snapshot = await table.snapshotFor({ snapshotId: id });
      if (!snapshot?.changelogManifestList) continue;
      const files = await readChangelogFiles(table.store, table.path, snapshot);
      files.sort(byBucketThenSequence);
      for (const f of files) parts.push(await readEntry(table, f));
    }
    return parts.length
      ? concatTables(parts, schema).select(columnsOf(table))
      : emptyTable(schema).select(columnsOf(table));
  }
  const added: ManifestEntry[] = [];
  for (let id = from + 1; id <= to; id++) {
    const snapshot = await table.snapshotFor({ snapshotId: id });
    // COMPACT snapshots only reorganise files: reading them would count changes twice.
    if (!snapshot || snapshot.commitKind === 'COMPACT') continue;
    for (const e of await readDeltaEntries(table.store, table.path, snapshot)) if (e.kind === 'ADD') added.push(e);
  }
  const merged = await mergeBuckets(table, added, { dropDeletes: false });
  return (merged.length ? concatTables(merged, schema) : emptyTable(schema)).select(columnsOf(table));
}

function columnsOf(table: Table): string[] {
  return [...table.schema.fields.map((f) => f.name), SEQUENCE_COLUMN, KIND_COLUMN];
}

function byBucketThenSequence(a: ManifestEntry, b: ManifestEntry): number {
  return (
    a.partition.localeCompare(b.partition) || a.bucket - b.bucket || a.file.minSequenceNumber - b.file.minSequenceNumber
  );
}
