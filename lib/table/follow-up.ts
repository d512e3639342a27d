/**
 * What a stream reads of a snapshot after its first plan (Paimon's follow-up scanners), in one
 * place for the stream scan (lib/stream/stream-scan.ts) and for expiry, which keeps exactly
 * those objects alive in a long-lived changelog (lib/snapshot/changelog.ts) once the snapshot
 * itself expires.
 */
import { rollbackTargetOf, type Snapshot } from '../snapshot/snapshot.js';
import type { Table } from './table.js';

/**
 * - `changelog`: the files of its changelog manifest list (changelog-producer input, lookup,
 *   full-compaction: any snapshot with changelog files, APPEND or COMPACT);
 * - `delta`: the level-0 files its delta added (changelog-producer none, APPEND snapshots only);
 * - `overwrite`: every file its delta added or removed (OVERWRITE with `streaming-read-overwrite`);
 * - `none`: nothing (a COMPACT snapshot without changelog, a skipped OVERWRITE, a rollback).
 */
export type FollowUpSource = 'changelog' | 'delta' | 'overwrite' | 'none';

/** Where a stream following `table` reads the changes of `snapshot` from. */
export function followUpSource(table: Table, snapshot: Snapshot): FollowUpSource {
  if (snapshot.commitKind === 'OVERWRITE') return streamsOverwrite(table, snapshot) ? 'overwrite' : 'none';
  if (table.options.changelogProducer === 'none') return snapshot.commitKind === 'APPEND' ? 'delta' : 'none';
  return snapshot.changelogManifestList === undefined ? 'none' : 'changelog';
}

/**
 * True when streams of `table` emit the changes of OVERWRITE `snapshot` (`streaming-read-overwrite`).
 * A rollback's snapshot never: its delta is the difference from its target, not whole buckets, so
 * the before/after diff of the files it names would not be its changes; streams skip it with the
 * overwrite-skipped event, as they skip every OVERWRITE by default.
 */
export function streamsOverwrite(table: Table, snapshot: Snapshot): boolean {
  return table.options.get('streaming-read-overwrite') === true && rollbackTargetOf(snapshot) === undefined;
}
