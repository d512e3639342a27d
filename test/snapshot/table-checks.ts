/** Whole-table checks shared by the commit protocol tests. */
import { expect } from 'vitest';
import { readManifestList } from '../../lib/manifest/manifest-list.js';
import { readLiveFiles } from '../../lib/manifest/scan.js';
import { manifestKey } from '../../lib/manifest/table-paths.js';
import type { Snapshot } from '../../lib/snapshot/snapshot.js';
import { SnapshotManager } from '../../lib/snapshot/snapshot-manager.js';
import type { ObjectStore } from '../../lib/store/object-store.js';

/** Every snapshot of the table, by ascending id. */
export async function allSnapshots(store: ObjectStore, tablePath: string): Promise<Snapshot[]> {
  const sm = new SnapshotManager(store, tablePath);
  const ids = await sm.listIds();
  const out: Snapshot[] = [];
  for (let k = 0; k < ids.length; k += 32)
    out.push(...(await Promise.all(ids.slice(k, k + 32).map((id) => sm.read(id)))));
  return out;
}

/** Keys of every snapshot file, manifest list and manifest file some snapshot references. */
export async function referencedKeys(store: ObjectStore, tablePath: string): Promise<Set<string>> {
  const sm = new SnapshotManager(store, tablePath);
  const keys = new Set<string>();
  for (const s of await allSnapshots(store, tablePath)) {
    keys.add(sm.snapshotKey(s.id));
    for (const list of [s.baseManifestList, s.deltaManifestList, s.changelogManifestList]) {
      if (list === undefined) continue;
      keys.add(manifestKey(tablePath, list));
      for (const m of await readManifestList(store, tablePath, list)) keys.add(manifestKey(tablePath, m.fileName));
    }
  }
  return keys;
}

/** One expected APPEND of the concurrency tests. */
export interface ExpectedAppend {
  identifier: string;
  fileName: string;
  rows: number;
}

/**
 * Asserts the table holds exactly `expected`: snapshot ids 1..n contiguous, each identifier in
 * exactly one snapshot, each file live exactly once, sequence ranges disjoint and covering
 * 0..total-1, and nextSequenceNumber / record counts consistent along the way.
 */
export async function verifyAppends(
  store: ObjectStore,
  tablePath: string,
  expected: readonly ExpectedAppend[],
): Promise<void> {
  const snapshots = await allSnapshots(store, tablePath);
  expect(snapshots.map((s) => s.id)).toEqual(Array.from({ length: expected.length }, (_, k) => k + 1));
  const identifiers = snapshots.map((s) => s.commitIdentifier).sort();
  expect(identifiers).toEqual(expected.map((e) => e.identifier).sort());
  expect(new Set(identifiers).size).toBe(expected.length);

  const rowsOf = new Map(expected.map((e) => [e.identifier, e.rows]));
  let next = 0;
  for (const s of snapshots) {
    next += rowsOf.get(s.commitIdentifier)!;
    // Each APPEND advances the counter by exactly its batch's rows.
    expect(s.nextSequenceNumber).toBe(next);
    expect(s.totalRecordCount).toBe(next);
  }

  const latest = snapshots[snapshots.length - 1];
  const live = await readLiveFiles(store, tablePath, latest);
  expect(live.map((e) => e.file.fileName).sort()).toEqual(expected.map((e) => e.fileName).sort());
  const ranges = live.map((e) => e.file).sort((a, b) => a.minSequenceNumber - b.minSequenceNumber);
  let expectedMin = 0;
  for (const f of ranges) {
    expect(f.minSequenceNumber).toBe(expectedMin);
    expect(f.maxSequenceNumber - f.minSequenceNumber + 1).toBe(f.rowCount);
    expect(f.sequenceBase).toBe(f.minSequenceNumber);
    expectedMin = f.maxSequenceNumber + 1;
  }
  expect(expectedMin).toBe(latest.nextSequenceNumber);
}
