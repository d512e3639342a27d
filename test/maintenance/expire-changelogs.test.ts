/**
 * Long-lived changelogs (Paimon's decoupled changelog): `changelog.*` retention longer than
 * `snapshot.*` keeps `changelog/changelog-<id>` and only the objects a stream reads for it, not
 * the snapshots; changelog expiry removes them later; orphan cleanup treats them as live.
 */
import { describe, expect, it } from 'vitest';
import { pastFloor } from '../helpers/expiry-clock.js';
import { expireChangelogs } from '../../lib/maintenance/expire-changelogs.js';
import { expireSnapshots } from '../../lib/maintenance/expire-snapshots.js';
import { removeOrphanFiles } from '../../lib/maintenance/remove-orphans.js';
import { readSnapshotManifests } from '../../lib/maintenance/snapshot-references.js';
import { readChangelogFiles, readDeltaEntries, readLiveFiles } from '../../lib/manifest/scan.js';
import { listChangelogIds } from '../../lib/snapshot/changelog.js';
import type { MemoryStore } from '../../lib/store/memory-store.js';
import { StreamScan } from '../../lib/stream/stream-scan.js';
import { readSystemTable } from '../../lib/table/system-tables.js';
import { dataFileKey } from '../../lib/table/paths.js';
import type { Table } from '../../lib/table/table.js';
import { drain } from '../stream/fixtures.js';
import { addConsumer, compactAll, expectVerified, newTable, upsert } from './expiry-fixtures.js';

const NOW = () => pastFloor();

/** 4 rounds of 4 upserts and a full compaction of each bucket (2 COMPACT snapshots): 24 snapshots. */
async function twentyFourSnapshots(table: Table, from = 0): Promise<void> {
  for (let round = 0; round < 4; round++) {
    for (let i = 0; i < 4; i++) {
      const n = from + round * 4 + i;
      await upsert(table, [n % 7, (n * 3) % 11, 20 + n], `v${n}`, n % 5 === 4 ? [(n + 2) % 7] : []);
    }
    await compactAll(table);
  }
}

/**
 * What must exist for snapshot `id` (read before it expires): its live data files and manifests
 * when it is retained as a snapshot, the objects a stream reads for it when only its changelog is.
 */
async function expectedKeys(table: Table, id: number): Promise<{ live: string[]; stream: string[] }> {
  const s = await table.snapshots.read(id);
  const key = (e: { partition: string; bucket: number; file: { fileName: string } }) =>
    dataFileKey(table.path, e.partition, e.bucket, e.file.fileName);
  const m = await readSnapshotManifests(table, s);
  const live = [...(await readLiveFiles(table.store, table.path, s)).map(key), ...m.listKeys, ...m.manifestKeys];
  const stream: string[] = [];
  if (table.options.changelogProducer === 'none') {
    if (s.commitKind === 'APPEND') {
      stream.push(
        ...(await readDeltaEntries(table.store, table.path, s))
          .filter((e) => e.kind === 'ADD' && e.file.level === 0)
          .map(key),
      );
      stream.push(
        `${table.path}/manifest/${s.deltaManifestList}`,
        ...m.delta.map((x) => `${table.path}/manifest/${x.fileName}`),
      );
    }
  } else if (s.changelogManifestList !== undefined) {
    stream.push(...(await readChangelogFiles(table.store, table.path, s)).map(key));
    stream.push(
      `${table.path}/manifest/${s.changelogManifestList}`,
      ...m.changelog.map((x) => `${table.path}/manifest/${x.fileName}`),
    );
  }
  return { live, stream };
}

/** Every data, changelog, manifest and list key in the store. */
function fileKeys(table: Table): string[] {
  return (table.store as MemoryStore)
    .keys()
    .filter((k) => /\/bucket-\d+\/|\/manifest\//.test(k.slice(table.path.length)))
    .sort();
}

describe.each(['input', 'none'] as const)('long-lived changelogs (changelog-producer %s)', (producer) => {
  it('the issue repro: 24 snapshots, snapshot.num-retained.min 2, changelog.num-retained.min 8 keeps 2 snapshots and 6 changelogs with exactly their files', async () => {
    // Prepare
    const table = await newTable({
      'changelog-producer': producer,
      'snapshot.num-retained.min': '2',
      'changelog.num-retained.min': '8',
    });
    await twentyFourSnapshots(table);
    const keys = new Map<number, { live: string[]; stream: string[] }>();
    for (let id = 1; id <= 24; id++) keys.set(id, await expectedKeys(table, id));
    const streamed = await drain(new StreamScan(table, { mode: 'from-snapshot', snapshotId: 17 }), table, true);
    // Act
    const r = await expireSnapshots(table, { olderThanMs: 0, now: NOW() });
    // Assess: 2 snapshots and 6 changelogs (8 counting the snapshots), not 8 snapshots.
    expect(await table.snapshots.listIds()).toEqual([23, 24]);
    expect(await listChangelogIds(table.store, table.path)).toEqual([17, 18, 19, 20, 21, 22]);
    expect(r).toMatchObject({
      changelogDecoupled: true,
      changelogsWritten: [17, 18, 19, 20, 21, 22],
      changelogsExpired: [],
    });
    const expected = new Set<string>();
    for (const id of [23, 24]) for (const k of keys.get(id)!.live) expected.add(k);
    for (let id = 17; id <= 24; id++) for (const k of keys.get(id)!.stream) expected.add(k);
    expect(fileKeys(table)).toEqual([...expected].sort());
    await expectVerified(table);
    const sys = await readSystemTable(table, 'changelogs');
    expect(sys.records.map((x) => x.snapshot_id)).toEqual([17, 18, 19, 20, 21, 22]);
    // A stream from an expired snapshot reads its changelog: the same changes as before expiry.
    expect(await drain(new StreamScan(table, { mode: 'from-snapshot', snapshotId: 17 }), table, true)).toEqual(
      streamed,
    );
    expect(streamed.length).toBeGreaterThan(0);
    await expect(drain(new StreamScan(table, { mode: 'from-snapshot', snapshotId: 16 }), table)).rejects.toMatchObject({
      name: 'SnapshotExpiredError',
      lostRange: { from: 16, to: 17 },
    });

    // Act: 24 more snapshots, expiry again: changelogs 17..40 go, 41..46 stay with their files.
    for (let id = 23; id <= 24; id++) keys.set(id, await expectedKeys(table, id));
    await twentyFourSnapshots(table, 100);
    for (let id = 25; id <= 48; id++) keys.set(id, await expectedKeys(table, id));
    const again = await expireSnapshots(table, { olderThanMs: 0, now: NOW() });
    // Assess
    expect(await table.snapshots.listIds()).toEqual([47, 48]);
    expect(await listChangelogIds(table.store, table.path)).toEqual([41, 42, 43, 44, 45, 46]);
    expect(again.changelogsExpired).toEqual([17, 18, 19, 20, 21, 22]);
    const expected2 = new Set<string>();
    for (const id of [47, 48]) for (const k of keys.get(id)!.live) expected2.add(k);
    for (let id = 41; id <= 48; id++) for (const k of keys.get(id)!.stream) expected2.add(k);
    expect(fileKeys(table)).toEqual([...expected2].sort());
    await expectVerified(table);
  });

  it('orphan cleanup leaves every file a long-lived changelog keeps', async () => {
    // Prepare
    const table = await newTable({
      'changelog-producer': producer,
      'snapshot.num-retained.min': '1',
      'changelog.num-retained.min': '20',
    });
    await twentyFourSnapshots(table);
    const streamed = await drain(new StreamScan(table, { mode: 'from-snapshot', snapshotId: 5 }), table, true);
    await expireSnapshots(table, { olderThanMs: 0, now: NOW() });
    expect(await listChangelogIds(table.store, table.path)).toEqual(Array.from({ length: 19 }, (_, i) => i + 5));
    // Act
    const orphans = await removeOrphanFiles(table, { olderThanMs: 0, now: NOW() });
    // Assess
    expect(orphans.orphans).toEqual([]);
    await expectVerified(table);
    expect(await drain(new StreamScan(table, { mode: 'from-snapshot', snapshotId: 5 }), table, true)).toEqual(streamed);
  });

  it('a consumer positioned in a changelog holds changelog expiry there', async () => {
    // Prepare
    const table = await newTable({
      'changelog-producer': producer,
      'snapshot.num-retained.min': '1',
      'changelog.num-retained.min': '20',
    });
    await twentyFourSnapshots(table);
    await expireSnapshots(table, { olderThanMs: 0, now: NOW() });
    await addConsumer(table, 'slow', 9);
    // Act: a retention that would expire every changelog
    const r = await expireChangelogs(
      table,
      { retainMin: 1, retainMax: 1, timeRetainedMs: 0, limit: 100, decoupled: true },
      { now: NOW(), graceMs: 0 },
    );
    // Assess
    expect(r.outcome?.changelogs).toEqual([5, 6, 7, 8]);
    expect(await listChangelogIds(table.store, table.path)).toEqual(Array.from({ length: 15 }, (_, i) => i + 9));
    await expectVerified(table);
  });
});
