/**
 * Discovery: splits per (partition, bucket) per snapshot, the consumer file as the record of how
 * far it planned, folding readers' progress into nextSnapshot, concurrent runs, bounds, file lists
 * by reference, expired positions.
 */
import { describe, expect, it } from 'vitest';
import { SnapshotExpiredError } from '../../lib/errors.js';
import { listAll } from '../../lib/store/object-store.js';
import { readConsumer } from '../../lib/snapshot/consumer.js';
import { discover, ensureConsumer, resetConsumer } from '../../lib/stream/discovery.js';
import { MemoryQueue } from '../../lib/stream/memory-queue.js';
import { consumerLag } from '../../lib/stream/progress.js';
import { SplitReader } from '../../lib/stream/reader.js';
import { parseSplitMessage } from '../../lib/stream/split-message.js';
import { splitRefPrefix } from '../../lib/snapshot/consumer.js';
import { LogLines, SPLIT_FAILED } from '../helpers/log-lines.js';
import { makeTable, pump, put, RecordingSink, show } from './fixtures.js';

function setup(queueOpts: ConstructorParameters<typeof MemoryQueue>[0] = {}) {
  const queue = new MemoryQueue(queueOpts);
  const sink = new RecordingSink();
  return { queue, sink };
}

describe('discover', () => {
  it('sends one split per (partition, bucket) per snapshot, grouped by bucket, and records how far it planned', async () => {
    // Prepare
    const t = await makeTable({ bucket: '2' }, { partitioned: true });
    await ensureConsumer(t, 'c', { mode: 'latest' });
    await put(
      t,
      [
        [1, 'a'],
        [2, 'b'],
        [3, 'c'],
        [4, 'd'],
      ],
      { p: 'x' },
    );
    await put(t, [[1, 'a']], { p: 'y' });
    const { queue } = setup();
    // Act
    const result = await discover(t, queue, 'c');
    const messages = await queue.receive({ maxMessages: 10 });
    const consumer = await readConsumer(t.store, t.path, 'c');
    // Assess
    const splits = messages.map((m) => parseSplitMessage(m.body));
    expect(result).toMatchObject({ planned: { from: 1, to: 2 }, sent: splits.length, caughtUp: true, lostRace: false });
    expect(new Set(splits.map((s) => `${s.snapshotId}/${s.partition}/${s.bucket}`)).size).toBe(splits.length);
    expect(splits.filter((s) => s.snapshotId === 2).map((s) => s.partition)).toEqual(['p=y']);
    for (const m of messages) {
      const s = parseSplitMessage(m.body);
      expect(m.groupId).toBe(`db.t/${s.partition}/${s.bucket}`);
    }
    // Planned, not delivered: the position does not move yet.
    expect(consumer).toMatchObject({ nextSnapshot: 1, plannedSnapshot: 2 });
  });

  it('moves nextSnapshot only past what readers delivered; a bucket without new data never holds it back', async () => {
    // Prepare: keys 1..8 spread over 4 buckets; later writes touch one key only
    const t = await makeTable({ bucket: '4' });
    await ensureConsumer(t, 'c', { mode: 'latest' });
    const { queue, sink } = setup();
    const log = new LogLines();
    const reader = new SplitReader({ table: t, consumerId: 'c', queue, sink, log: log.add });
    await put(
      t,
      [1, 2, 3, 4, 5, 6, 7, 8].map((k) => [k, 'v0'] as [number, string]),
    );
    await pump(t, queue, reader, 'c');
    // Act
    let last = 0;
    for (let i = 1; i <= 3; i++) last = await put(t, [[1, `v${i}`]]);
    await pump(t, queue, reader, 'c');
    const consumer = await readConsumer(t.store, t.path, 'c');
    // Assess
    expect(consumer).toMatchObject({ nextSnapshot: last + 1, plannedSnapshot: last, buckets: {} });
    log.expectOnly();
  });

  it('holds nextSnapshot at the first split a failing bucket has not delivered, and shows it as lag', async () => {
    // Prepare
    const t = await makeTable({ bucket: '2' });
    await ensureConsumer(t, 'c', { mode: 'latest' });
    // Neither the queue nor the reader's own failure budget dead-letters the failing split here.
    const { queue, sink } = setup({ maxReceiveCount: 100 });
    const log = new LogLines();
    const reader = new SplitReader({
      table: t,
      consumerId: 'c',
      queue,
      sink,
      backoff: { baseMs: 0, maxMs: 0 },
      failureBudget: 100,
      log: log.add,
    });
    const keys = [1, 2, 3, 4, 5, 6, 7, 8];
    const first = await put(
      t,
      keys.map((k) => [k, 'a'] as [number, string]),
    );
    await pump(t, queue, reader, 'c');
    const stuckKey = 1n;
    let stuckBucket = -1;
    sink.failNext = (b) => {
      const keys = [...(b.data.getChild('k')!.toArray() as BigInt64Array)];
      if (keys.includes(stuckKey)) stuckBucket = b.bucket;
      return keys.includes(stuckKey);
    };
    // Act
    const s1 = await put(
      t,
      keys.map((k) => [k, 'x'] as [number, string]),
    );
    await put(
      t,
      keys.map((k) => [k, 'y'] as [number, string]),
    );
    for (let i = 0; i < 5; i++) {
      await discover(t, queue, 'c');
      await reader.poll();
    }
    await discover(t, queue, 'c');
    const held = await readConsumer(t.store, t.path, 'c');
    const lag = await consumerLag(t, 'c');
    sink.failNext = () => false;
    await pump(t, queue, reader, 'c');
    const released = await readConsumer(t.store, t.path, 'c');
    // Assess
    expect(first).toBe(1);
    expect(held?.nextSnapshot).toBe(s1);
    expect(lag).toMatchObject({ nextSnapshot: s1, blockingBuckets: [`bucket-${stuckBucket}`] });
    expect(lag!.snapshots).toBeGreaterThan(0);
    expect(released?.nextSnapshot).toBe((await t.snapshots.latestId())! + 1);
    expect(sink.changes.filter((c) => c.row.k === 1n).map(show)).toEqual(['+I 1=a', '+I 1=x', '+I 1=y']);
    expect(sink.changes.filter((c) => c.row.k === 8n).map(show)).toEqual(['+I 8=a', '+I 8=x', '+I 8=y']);
    // Only the stuck bucket's splits failed (its head, and the split behind it); none was dead-lettered.
    expect(log.matching(SPLIT_FAILED).length).toBeGreaterThan(0);
    expect(log.matching(SPLIT_FAILED).every((l) => l.includes(`bucket ${stuckBucket} `))).toBe(true);
    log.expectOnly(SPLIT_FAILED);
  });

  it('two discoveries at once deliver every change exactly once', async () => {
    // Prepare: a zero deduplication window, so only the readers' progress stops duplicates
    const t = await makeTable({ bucket: '3' });
    await ensureConsumer(t, 'c', { mode: 'latest' });
    const { queue, sink } = setup({ dedupWindowMs: 0 });
    const log = new LogLines();
    const reader = new SplitReader({ table: t, consumerId: 'c', queue, sink, log: log.add });
    const expected: string[] = [];
    // Act
    for (let round = 0; round < 5; round++) {
      for (let k = 0; k < 4; k++) {
        await put(t, [[k, `r${round}`]]);
        expected.push(`+I ${k}=r${round}`);
      }
      const results = await Promise.all([discover(t, queue, 'c'), discover(t, queue, 'c')]);
      expect(results.filter((r) => !r.lostRace).length).toBeGreaterThanOrEqual(1);
      await reader.poll();
    }
    await pump(t, queue, reader, 'c');
    // Assess
    expect(sink.changes.map(show).sort()).toEqual(expected.sort());
    log.expectOnly();
  });

  it('plans at most maxSnapshotsPerRun snapshots per run', async () => {
    const t = await makeTable();
    await ensureConsumer(t, 'c', { mode: 'latest' });
    for (let i = 0; i < 4; i++) await put(t, [[i, 'v']]);
    const { queue } = setup();
    const first = await discover(t, queue, 'c', { maxSnapshotsPerRun: 3 });
    const second = await discover(t, queue, 'c', { maxSnapshotsPerRun: 3 });
    expect(first).toMatchObject({ planned: { from: 1, to: 3 }, caughtUp: false });
    expect(second).toMatchObject({ planned: { from: 4, to: 4 }, caughtUp: true });
  });

  it('sends large file lists by reference and deletes them once delivered', async () => {
    // Prepare
    const t = await makeTable({ bucket: '1' });
    await ensureConsumer(t, 'c', { mode: 'earliest' });
    await put(t, [
      [1, 'a'],
      [2, 'b'],
    ]);
    const { queue, sink } = setup();
    const log = new LogLines();
    const reader = new SplitReader({ table: t, consumerId: 'c', queue, sink, log: log.add });
    // Act
    await discover(t, queue, 'c', { maxInlineBytes: 100 });
    const refsWhilePending = await listAll(t.store, splitRefPrefix(t.path, 'c'));
    await reader.poll();
    await discover(t, queue, 'c', { maxInlineBytes: 100 });
    const refsAfter = await listAll(t.store, splitRefPrefix(t.path, 'c'));
    // Assess
    expect(refsWhilePending.length).toBe(1);
    expect(sink.changes.map(show)).toEqual(['+I 1=a', '+I 2=b']);
    expect(refsAfter).toEqual([]);
    expect((await readConsumer(t.store, t.path, 'c'))?.splitRefs).toBeUndefined();
    log.expectOnly();
  });

  it("starts a new consumer at the scan mode, and a reset drops the old run's messages", async () => {
    // Prepare
    const t = await makeTable();
    await put(t, [[1, 'a']]);
    await put(t, [[1, 'b']]);
    const { queue, sink } = setup();
    const log = new LogLines();
    const reader = new SplitReader({ table: t, consumerId: 'c', queue, sink, log: log.add });
    await discover(t, queue, 'c'); // latest-full: the state of snapshot 2
    // Act
    await resetConsumer(t, 'c', { mode: 'earliest' });
    const stale = await reader.poll();
    await pump(t, queue, reader, 'c');
    // Assess
    expect(stale.stale).toBeGreaterThan(0);
    expect(sink.changes.map((c) => `${c.snapshot}: ${show(c)}`)).toEqual(['1: +I 1=a', '2: +I 1=b']);
    log.expectOnly();
  });

  it('fails with the lost range when the consumer fell behind expiry, unless skip-to-earliest', async () => {
    // Prepare
    const t = await makeTable();
    await ensureConsumer(t, 'c', { mode: 'earliest' });
    const ids: number[] = [];
    for (let i = 0; i < 4; i++) ids.push(await put(t, [[1, `v${i}`]]));
    await t.snapshots.writeEarliestHint(ids[2]);
    for (let id = 1; id < ids[2]; id++) await t.store.delete(t.snapshots.snapshotKey(id));
    const { queue } = setup();
    // Act / Assess
    await expect(discover(t, queue, 'c')).rejects.toMatchObject({
      name: SnapshotExpiredError.name,
      lostRange: { from: 1, to: ids[2] },
    });
    const skipped = await discover(t, queue, 'c', { onExpired: 'skip-to-earliest' });
    expect(skipped.nextSnapshot).toBe(ids[2]);
    expect((await queue.receive()).map((m) => parseSplitMessage(m.body).snapshotId)).toEqual([ids[2], ids[3]]);
  });
});
