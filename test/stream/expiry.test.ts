/**
 * Streams and snapshot expiry: a consumer's position holds expiry back, so a consumer that stopped
 * resumes with every change it missed even after aggressive expiry; a stream without a consumer
 * that starts below the earliest snapshot fails naming the lost range instead of skipping it.
 */
import { describe, expect, it } from 'vitest';
import { pastFloor } from '../helpers/expiry-clock.js';
import { expireSnapshots } from '../../lib/maintenance/expire-snapshots.js';
import { readConsumer } from '../../lib/snapshot/consumer.js';
import { ensureConsumer } from '../../lib/stream/discovery.js';
import { MemoryQueue } from '../../lib/stream/memory-queue.js';
import { SplitReader } from '../../lib/stream/reader.js';
import { LogLines } from '../helpers/log-lines.js';
import { StreamScan } from '../../lib/stream/stream-scan.js';
import { drain, makeTable, pump, put, RecordingSink, show } from './fixtures.js';

const aggressive = { retainMin: 1, retainMax: 1, olderThanMs: 0 };

describe('streams and expiry', () => {
  it('a consumer stopped at snapshot 3 resumes with every change of 3..8 after aggressive expiry; a stream from snapshot 3 without a consumer fails', async () => {
    // Prepare: the consumer reads snapshots 1 and 2, then stops
    const t = await makeTable({
      bucket: '2',
      'num-sorted-run.compaction-trigger': '50',
      'num-sorted-run.stop-trigger': '60',
    });
    await ensureConsumer(t, 'c', { mode: 'earliest' });
    const sink = new RecordingSink();
    const queue = new MemoryQueue();
    const log = new LogLines();
    const reader = new SplitReader({ table: t, consumerId: 'c', queue, sink, log: log.add });
    await put(t, [
      [1, 's1'],
      [8, 's1'],
    ]);
    await put(t, [[2, 's2']]);
    await pump(t, queue, reader, 'c');
    expect((await readConsumer(t.store, t.path, 'c'))?.nextSnapshot).toBe(3);
    // Act: snapshots 3..8 are written while it is stopped, and expiry runs as hard as it can
    for (let s = 3; s <= 8; s++) expect(await put(t, [[s % 4, `s${s}`]])).toBe(s);
    const whileStopped = await expireSnapshots(t, { ...aggressive, now: pastFloor() });
    await pump(t, queue, reader, 'c');
    const afterResume = await expireSnapshots(t, { ...aggressive, now: pastFloor() });
    const noConsumer = drain(new StreamScan(t, { mode: 'from-snapshot', snapshotId: 3 }), t);
    // Assess
    expect(whileStopped).toMatchObject({
      earliest: 3,
      latest: 8,
      heldBy: 'consumer',
      heldByConsumer: { id: 'c', nextSnapshot: 3 },
    });
    expect(sink.changes.filter((c) => c.snapshot >= 3).map((c) => `${c.snapshot}: ${show(c)}`)).toEqual([
      '3: +I 3=s3',
      '4: +I 0=s4',
      '5: +I 1=s5',
      '6: +I 2=s6',
      '7: +I 3=s7',
      '8: +I 0=s8',
    ]);
    expect(afterResume.earliest).toBe(8);
    await expect(noConsumer).rejects.toMatchObject({ name: 'SnapshotExpiredError', lostRange: { from: 3, to: 8 } });
    log.expectOnly();
  });
});
