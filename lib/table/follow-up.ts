/**
 * What a stream reads of a snapshot after its first plan (Paimon's follow-up scanners), in one
 * place for the stream scan (lib/stream/stream-scan.ts) and for expiry, which keeps exactly
 * those objects alive in a long-lived changelog (lib/snapshot/changelog.ts) once the snapshot
 * itself expires.
 */
import type { Snapshot } from '../snapshot/snapshot.js';
import type { Table } from './table.js';

/**
 * - `changelog`: the files of its changelog manifest list (changelog-producer input, lookup,
 *   full-compaction: any snapshot with changelog files, APPEND or COMPACT);
 * - `delta`: the level-0 files its delta added (changelog-producer none, APPEND snapshots only);
 * - `overwrite`: every file its delta added or removed (OVERWRITE with `streaming-read-overwrite`);
 * - `none`: nothing (a COMPACT snapshot without changelog, a skipped OVERWRITE).
 */
export type FollowUpSource = 'changelog' | 'delta' | 'overwrite' | 'none';

/** Where a stream following `table` reads the changes of `snapshot` from. */
export function followUpSource(table: Table, snapshot: Snapshot): FollowUpSource {
  if (snapshot.commitKind === 'OVERWRITE') return table.options.get('streaming-read-overwrite') === true ? 'overwrite' : 'none';
  if (table.options.changelogProducer === 'none') return snapshot.commitKind === 'APPEND' ? 'delta' : 'none';
  return snapshot.changelogManifestList === undefined ? 'none' : 'changelog';
}
