/**
 * Streams over long-lived changelogs: a consumer that starts at a snapshot whose snapshot file
 * expired reads its changelog (`changelog/changelog-<id>`) and gets every change; and a
 * randomized run of writes, compactions, snapshot and changelog expiry with random retention and
 * stream reads from random positions, compared with a model of what must stay readable.
 */
import { describe, expect, it } from 'vitest';
import { pastFloor } from '../helpers/expiry-clock.js';
import { compactTable } from '../../lib/maintenance/compact.js';
import { expireSnapshots } from '../../lib/maintenance/expire-snapshots.js';
import { removeOrphanFiles } from '../../lib/maintenance/remove-orphans.js';
import { verifyTable } from '../../lib/maintenance/verify-table.js';
import { listChangelogIds } from '../../lib/snapshot/changelog.js';
import { readConsumer } from '../../lib/snapshot/consumer.js';
import { ensureConsumer } from '../../lib/stream/discovery.js';
import { MemoryQueue } from '../../lib/stream/memory-queue.js';
import { SplitReader } from '../../lib/stream/reader.js';
import { LogLines } from '../helpers/log-lines.js';
import { StreamScan } from '../../lib/stream/stream-scan.js';
import { rng, testSeed } from '../helpers/random.js';
import { drain, makeTable, pump, put, RecordingSink, replay, show, stateOf } from './fixtures.js';

const NOW = () => pastFloor();

describe.each(['input', 'none'] as const)('streams over long-lived changelogs (changelog-producer %s)', (producer) => {
  it('a consumer starting at an expired snapshot reads its changelog and gets every change', async () => {
    // Prepare: 12 commits with compactions among them, then expiry keeps 1 snapshot and 11 changelogs
    const t = await makeTable({
      'changelog-producer': producer,
      'write-only': 'true',
      'num-sorted-run.stop-trigger': '1000',
      'snapshot.num-retained.min': '1',
      'changelog.num-retained.min': '50',
    });
    const expected: string[] = [];
    for (let i = 1; i <= 10; i++) {
      const id = await put(t, [
        [i % 4, `v${i}`],
        [10 + i, `w${i}`],
      ]);
      expected.push(
        ...(await drain(new StreamScan(t, { mode: 'from-snapshot', snapshotId: id }), t, true)).filter((c) =>
          c.startsWith(`${id}:`),
        ),
      );
      if (i % 5 === 0) await compactTable(t, { full: true, bucket: 0 });
    }
    const latest = (await t.snapshots.latestId())!;
    await expireSnapshots(t, { olderThanMs: 0, now: NOW() });
    expect(await t.snapshots.listIds()).toEqual([latest]);
    expect(await listChangelogIds(t.store, t.path)).toEqual(Array.from({ length: latest - 1 }, (_, i) => i + 1));
    // Act: a new consumer from snapshot 1 (expired: only its changelog is left)
    await ensureConsumer(t, 'late', { mode: 'from-snapshot', snapshotId: 1 });
    const sink = new RecordingSink();
    const queue = new MemoryQueue();
    const log = new LogLines();
    await pump(t, queue, new SplitReader({ table: t, consumerId: 'late', queue, sink, log: log.add }), 'late');
    // Assess: every change of every snapshot, in order, and the replayed state is the table's
    const got = sink.changes.map((c) => `${c.snapshot}: ${show(c)}`);
    expect(got.sort()).toEqual([...expected].sort());
    expect(replay(sink.changes)).toEqual(await stateOf(t));
    expect((await readConsumer(t.store, t.path, 'late'))?.nextSnapshot).toBe(latest + 1);
    log.expectOnly();
  });
});

describe('long-lived changelog model test', () => {
  it('random writes, compactions, snapshot and changelog expiry and stream reads agree with the model', async () => {
    const seed = testSeed('changelog-retention-model');
    const r = rng(seed);
    const producer = r.pick(['input', 'none'] as const);
    const cMin = r.int(2, 7);
    const t = await makeTable({
      'changelog-producer': producer,
      'write-only': 'true',
      'num-sorted-run.stop-trigger': '1000',
      'changelog.num-retained.min': String(cMin),
    });
    // Model: the changes a stream gets from each snapshot, and which ids are readable (snapshot or changelog).
    const changes = new Map<number, string[]>();
    const snapshots = new Set<number>();
    const changelogs = new Set<number>();
    const record = async (id: number) => {
      const all = await drain(new StreamScan(t, { mode: 'from-snapshot', snapshotId: id }), t, true);
      changes.set(
        id,
        all.filter((c) => c.startsWith(`${id}:`)),
      );
      snapshots.add(id);
    };
    let latest = 0;
    for (let step = 0; step < 36; step++) {
      const op = r.next();
      if (op < 0.55 || latest === 0) {
        const rows: Array<[number, string]> = Array.from({ length: r.int(1, 3) }, () => [r.int(0, 9), `s${step}`]);
        latest = await put(t, rows);
        await record(latest);
      } else if (op < 0.7) {
        for (const id of (await compactTable(t, { full: true, bucket: r.int(0, 1) })).snapshots) {
          latest = id;
          await record(id);
        }
      } else if (op < 0.85) {
        const sMin = r.int(1, 8);
        await expireSnapshots(t, { retainMin: sMin, olderThanMs: 0, limit: 1000, now: NOW() });
        // Model of one run: snapshots below latest − sMin + 1 go; those the changelog retention
        // still counts (from latest − cMin + 1) leave a changelog; older changelogs go.
        const sEnd = Math.max(Math.min(...snapshots), latest - sMin + 1);
        const cFloor = latest - cMin + 1;
        for (const id of [...snapshots].filter((id) => id < sEnd)) {
          snapshots.delete(id);
          if (cMin > sMin && id >= cFloor) changelogs.add(id);
        }
        for (const id of [...changelogs]) if (id < Math.min(cFloor, sEnd)) changelogs.delete(id);
        expect(await t.snapshots.listIds(), `snapshots after expiry at step ${step}`).toEqual(
          [...snapshots].sort((a, b) => a - b),
        );
        expect(await listChangelogIds(t.store, t.path), `changelogs after expiry at step ${step}`).toEqual(
          [...changelogs].sort((a, b) => a - b),
        );
        const v = await verifyTable(t);
        expect(v.problems).toEqual([]);
      } else {
        // A stream from a random position: every change from there on, or the lost range.
        const from = r.int(1, latest);
        const missing = Array.from({ length: latest - from + 1 }, (_, i) => from + i).find(
          (id) => !snapshots.has(id) && !changelogs.has(id),
        );
        const read = drain(new StreamScan(t, { mode: 'from-snapshot', snapshotId: from }), t, true);
        if (missing === undefined) {
          const want: string[] = [];
          for (let id = from; id <= latest; id++) want.push(...changes.get(id)!);
          expect(await read, `stream from ${from} at step ${step}`).toEqual(want);
        } else {
          await expect(read, `stream from ${from} at step ${step}`).rejects.toMatchObject({
            name: 'SnapshotExpiredError',
            lostRange: { from: missing },
          });
        }
      }
    }
    const orphans = await removeOrphanFiles(t, { olderThanMs: 0, dryRun: true, now: NOW() });
    expect(orphans.orphans).toEqual([]);
  });
});
