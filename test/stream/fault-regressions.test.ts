/**
 * The bugs the randomized stream fault test (stream-faults.stress.ts) found, each pinned down by a
 * deterministic test: a split received again while its first delivery is still running, a sink
 * call that outlived its time limit, an expired consumer resumed with skip-to-earliest (buckets
 * ahead of its position, a first full state not yet delivered), a runtime started with
 * ignoreProgress whose consumer expires later, and an expired consumer resumed with
 * skip-to-earliest after more snapshots expired (the skip was silent: seed 1361768786).
 */
import { describe, expect, it } from 'vitest';
import { pastFloor } from '../helpers/expiry-clock.js';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import {
  ConsumerExpiredError,
  ConsumerLeaseLostError,
  SnapshotExpiredError,
  TableNotFoundError,
} from '../../lib/errors.js';
import { ConsumerLeaseHandle } from '../../lib/stream/lease.js';
import { listAll } from '../../lib/store/object-store.js';
import { readConsumer, readTombstone, writeConsumer } from '../../lib/snapshot/consumer.js';
import { BeforeDeleteStore } from '../helpers/before-delete-store.js';
import { expireConsumers } from '../../lib/maintenance/expire-consumers.js';
import { StreamScan } from '../../lib/stream/stream-scan.js';
import { readSystemTable } from '../../lib/table/system-tables.js';
import { expireSnapshots } from '../../lib/maintenance/expire-snapshots.js';
import { LocalRuntime } from '../../lib/runtime/local-runtime.js';
import { BatchDelivery, SinkTimeoutError, type ChangeBatch, type StreamSink } from '../../lib/stream/delivery.js';
import { discover, ensureConsumer } from '../../lib/stream/discovery.js';
import { MemoryQueue } from '../../lib/stream/memory-queue.js';
import { readBucketProgress } from '../../lib/stream/progress.js';
import { bucketOf } from '../../lib/schema/bucket.js';
import { SplitReader } from '../../lib/stream/reader.js';
import { LogLines, SPLIT_FAILED } from '../helpers/log-lines.js';
import { makeTable, pump, put, RecordingSink } from './fixtures.js';

const HOUR = 3600_000;

/**
 * A sink whose calls wait for `gate` when `hold(batch)` says so, recording `<snapshot>/<bucket>`
 * when they land; `held` resolves once a call waits at the gate.
 */
function gatedSink(hold: (b: ChangeBatch) => boolean) {
  const landed: string[] = [];
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  let entered!: () => void;
  const held = new Promise<void>((r) => (entered = r));
  const sink: StreamSink = {
    async write(b) {
      if (hold(b)) {
        entered();
        await gate;
      }
      landed.push(`${b.snapshotId}/${b.bucket}`);
    },
  };
  return { sink, landed, open, held };
}

describe('a split received again while its first delivery still runs (same process)', () => {
  it('the copy waits for the first delivery and is then skipped: nothing lands out of order', async () => {
    // Prepare: one bucket, snapshots 1 and 2, both planned.
    const table = await makeTable({ bucket: '1' });
    await put(table, [[1, 'a']]);
    await put(table, [[1, 'b']]);
    const queue = new MemoryQueue({ visibilityMs: 60_000 });
    await discover(table, queue, 'c1', { mode: 'earliest' });
    const [m1, m2] = await queue.receive({ maxMessages: 10 });
    let first = true;
    const { sink, landed, open, held } = gatedSink((b) => b.snapshotId === 1 && first && !(first = false));
    // Act: delivery A is stuck in the sink on snapshot 1; B (its visibility ran out) delivers 1 and 2.
    const a = new BatchDelivery(table, 'c1', sink).deliver(m1.body);
    await held;
    const b = new BatchDelivery(table, 'c1', sink);
    const bDone = (async () => [await b.deliver(m1.body), await b.deliver(m2.body)])();
    await new Promise((r) => setTimeout(r, 50));
    open();
    // Assess
    expect(await a).toBe('delivered');
    expect(await bDone).toEqual(['duplicate', 'delivered']);
    expect(landed).toEqual(['1/0', '2/0']);
    expect((await readBucketProgress(table.store, table.path, 'c1', '', 0))?.snapshot).toBe(2);
  });
});

describe("a table dropped during the sink call of a bucket's first split", () => {
  it('the delivery stops with TableNotFoundError and creates no progress object in the dropped folder', async () => {
    // Prepare
    const table = await makeTable({ bucket: '1' });
    await put(table, [[1, 'a']]);
    const queue = new MemoryQueue({ visibilityMs: 60_000 });
    await discover(table, queue, 'c1', { mode: 'earliest' });
    const [m1] = await queue.receive({ maxMessages: 10 });
    const { sink, open, held } = gatedSink(() => true);
    // Act: the table is dropped while the sink call runs
    const delivery = new BatchDelivery(table, 'c1', sink).deliver(m1.body).catch((e) => e);
    await held;
    await new FolderCatalog(table.store).dropTable('db.t');
    open();
    // Assess
    expect(await delivery).toBeInstanceOf(TableNotFoundError);
    expect((await listAll(table.store, table.path)).map((o) => o.key)).toEqual([]);
  });
});

describe('a sink call that outlives its time limit', () => {
  it('its split comes again only after the late call landed, never after a newer split', async () => {
    // Prepare
    const table = await makeTable({ bucket: '1' });
    await put(table, [[1, 'a']]);
    await put(table, [[1, 'b']]);
    const queue = new MemoryQueue({ visibilityMs: 60_000 });
    await discover(table, queue, 'c1', { mode: 'earliest' });
    const [m1, m2] = await queue.receive({ maxMessages: 10 });
    let slow = true;
    const { sink, landed, open } = gatedSink((b) => b.snapshotId === 1 && slow && !(slow = false));
    // Act: the first call of snapshot 1 times out and keeps running; the split is delivered again.
    const timedOut = await new BatchDelivery(table, 'c1', sink, Date.now, { sinkTimeoutMs: 30 })
      .deliver(m1.body)
      .catch((e) => e);
    const again = new BatchDelivery(table, 'c1', sink, Date.now, { sinkTimeoutMs: 300_000 }); // waits for the late call: no time limit in the way
    const retried = (async () => [await again.deliver(m1.body), await again.deliver(m2.body)])();
    await new Promise((r) => setTimeout(r, 50));
    open();
    // Assess: 1 twice in a row (a whole duplicate), then 2.
    expect(timedOut).toBeInstanceOf(SinkTimeoutError);
    expect(await retried).toEqual(['delivered', 'delivered']);
    expect(landed).toEqual(['1/0', '1/0', '2/0']);
  });
});

describe('an expired consumer resumed with skip-to-earliest', () => {
  it('goes on where each bucket was: a bucket ahead of the position gets none of its delivered splits again', async () => {
    // Prepare: bucket 0 delivers snapshots 1..3, then bucket 1 (snapshot 3) fails, so the position stays at 3.
    const table = await makeTable({ bucket: '2', 'consumer.expiration-time': '1 h' });
    const keys = await bucketKeys(table);
    await put(table, [[keys[0], 'a']]);
    await put(table, [[keys[0], 'b']]);
    await put(table, [
      [keys[0], 'c'],
      [keys[1], 'x'],
    ]);
    const queue = new MemoryQueue({ visibilityMs: 60_000 });
    const sink = new RecordingSink();
    sink.failNext = (b) => b.bucket === 1;
    const firstLog = new LogLines();
    const reader = new SplitReader({
      table,
      consumerId: 'c1',
      queue,
      sink,
      backoff: { baseMs: 60_000, maxMs: 60_000 },
      log: firstLog.add,
    });
    await discover(table, queue, 'c1', { mode: 'earliest' });
    await reader.poll();
    await discover(table, queue, 'c1');
    // Act: the consumer expires (a clock jump) while its snapshots survive; the user resumes it.
    const expired = await expireSnapshots(table, { now: Date.now() + 2 * HOUR, retainMin: 100 });
    const refused = await ensureConsumer(table, 'c1').catch((e) => e);
    sink.failNext = () => false;
    const freshLog = new LogLines();
    const fresh = new SplitReader({ table, consumerId: 'c1', queue: new MemoryQueue(), sink, log: freshLog.add });
    const q2 = (fresh as unknown as { opts: { queue: MemoryQueue } }).opts.queue;
    await pump(table, q2, fresh, 'c1', { onExpired: 'skip-to-earliest' });
    // Assess: bucket 0's snapshots 1..3 came once each; bucket 1's snapshot 3 came after the resume.
    expect(expired.expiredConsumers).toEqual(['c1']);
    expect(refused).toBeInstanceOf(ConsumerExpiredError);
    expect(sink.batches.map((b) => `${b.snapshotId}/${b.bucket}`)).toEqual(['1/0', '2/0', '3/0', '3/1']);
    // The first reader logged bucket 1's failure (once: its backoff outlasts the test), the resumed one nothing.
    expect(firstLog.matching(SPLIT_FAILED)).toEqual([expect.stringContaining('split of snapshot 3 bucket 1 failed')]);
    firstLog.expectOnly(SPLIT_FAILED);
    freshLog.expectOnly();
  });

  it('a stream that had not delivered its first full state yet starts with it', async () => {
    // Prepare: latest-full at snapshot 2, nothing delivered.
    const table = await makeTable({ bucket: '1', 'consumer.expiration-time': '1 h' });
    await put(table, [[1, 'a']]);
    await put(table, [[2, 'b']]);
    await ensureConsumer(table, 'c1', { mode: 'latest-full' });
    // Act
    await expireSnapshots(table, { now: Date.now() + 2 * HOUR, retainMin: 100 });
    const queue = new MemoryQueue();
    const sink = new RecordingSink();
    const log = new LogLines();
    const reader = new SplitReader({ table, consumerId: 'c1', queue, sink, log: log.add });
    await pump(table, queue, reader, 'c1', { onExpired: 'skip-to-earliest' });
    // Assess: the full state of snapshot 2 (both keys), not only the changes of snapshot 2.
    expect(sink.batches.map((b) => `${b.kind} ${b.snapshotId}`)).toEqual(['full 2']);
    expect(sink.changes.map((c) => String(c.row.k))).toEqual(['1', '2']);
    log.expectOnly();
  });
});

describe('a runtime started with ignoreProgress', () => {
  it('stops with ConsumerExpiredError when its consumer expires later, instead of silently starting it afresh', async () => {
    // Prepare
    const table = await makeTable({ bucket: '1', 'consumer.expiration-time': '1 h' });
    await put(table, [[1, 'a']]);
    const log = new LogLines();
    const runtime = new LocalRuntime({
      discoveryIntervalMs: 10,
      compactionIntervalMs: 0,
      expiryIntervalMs: 0,
      log: log.add,
    });
    const sink = new RecordingSink();
    const consumer = await runtime.addConsumer({
      table,
      consumerId: 'c1',
      sink,
      stream: { ignoreProgress: true, mode: 'latest-full' },
      lease: false,
    });
    await runtime.start();
    try {
      await runtime.idle(600_000);
      // Act: it falls behind and expires.
      let failures = 0;
      sink.failNext = () => ++failures > 0;
      await put(table, [[1, 'b']]);
      // Planned and failing: the consumer file no longer moves, so expiry may take it.
      while (failures === 0) await new Promise((r) => setTimeout(r, 10));
      await new Promise((r) => setTimeout(r, 50));
      const expired = await expireSnapshots(table, { now: Date.now() + 2 * HOUR, retainMin: 100 });
      while (!consumer.failure) await new Promise((r) => setTimeout(r, 10));
      // Assess
      expect(expired.expiredConsumers).toEqual(['c1']);
      expect(consumer.failure).toBeInstanceOf(ConsumerExpiredError);
      expect(runtime.failure()).toBeInstanceOf(ConsumerExpiredError);
      // The failing split was logged, and the stop, once; nothing was dead-lettered.
      expect(log.matching('stopped: ')).toHaveLength(1);
      log.expectOnly(SPLIT_FAILED, 'stopped: ');
    } finally {
      await runtime.stop();
    }
  });
});

describe('skipping expired snapshots under skip-to-earliest is never silent (seed 1361768786)', () => {
  it('an expired id resumed after more snapshots expired names the skipped snapshots: logged, in its gaps, in the consumer file', async () => {
    // Prepare: the consumer waits at snapshot 1 and expires; resuming it is refused while nothing is lost yet.
    const table = await makeTable({ bucket: '1', 'consumer.expiration-time': '1 h' });
    await ensureConsumer(table, 'c1', { mode: 'earliest' });
    await put(table, [[1, 'a']]);
    await put(table, [[2, 'b']]);
    await put(table, [[3, 'c']]);
    expect((await expireConsumers(table, { now: Date.now() + 2 * HOUR })).expired).toEqual(['c1']);
    const refused = await ensureConsumer(table, 'c1').catch((e) => e);
    // Act: what the user was told could still be read expires before the user resumes with skip-to-earliest
    // (the fault test's interleaving: the consumer's discovery ran between consumer and snapshot expiry).
    await expireSnapshots(table, { now: pastFloor(), retainMin: 1, olderThanMs: 0 });
    const lines: string[] = [];
    const runtime = new LocalRuntime({
      discoveryIntervalMs: 10,
      compactionIntervalMs: 0,
      expiryIntervalMs: 0,
      log: (l) => lines.push(l),
    });
    const sink = new RecordingSink();
    const consumer = await runtime.addConsumer({
      table,
      consumerId: 'c1',
      sink,
      stream: { onExpired: 'skip-to-earliest' },
    });
    await runtime.start();
    try {
      await runtime.idle(30_000);
    } finally {
      await runtime.stop();
    }
    // Assess: the skip of snapshots 1..2 is reported (it was silent), and only snapshot 3 reached the sink.
    expect(refused).toBeInstanceOf(ConsumerExpiredError);
    expect((refused as ConsumerExpiredError).lostRange).toBeUndefined();
    expect(consumer.gaps).toEqual([expect.objectContaining({ from: 1, to: 3, reason: 'consumer-expired' })]);
    expect(lines.filter((l) => l.includes('skipped snapshots 1..2') && l.includes('LOST'))).toHaveLength(1);
    expect((await readConsumer(table.store, table.path, 'c1'))?.gaps).toEqual([
      expect.objectContaining({ from: 1, to: 3 }),
    ]);
    const sys = await readSystemTable(table, 'consumers');
    expect(sys.records).toEqual([
      expect.objectContaining({ consumer_id: 'c1', status: 'active', skipped_snapshots: '1..2' }),
    ]);
    expect(sink.batches.map((b) => b.snapshotId)).toEqual([3]);
  });

  it('a discovery run whose next snapshot expired under it reports the gap in its result and the consumer file', async () => {
    // Prepare: snapshots 1..3 with 1 and 2 expired, and a consumer (created racing expiry) still at 1.
    const table = await makeTable({ bucket: '1' });
    await put(table, [[1, 'a']]);
    await put(table, [[2, 'b']]);
    await put(table, [[3, 'c']]);
    await expireSnapshots(table, { now: pastFloor(), retainMin: 1, olderThanMs: 0 });
    await writeConsumer(table.store, table.path, 'c1', {
      nextSnapshot: 1,
      plannedSnapshot: 0,
      lastUpdated: Date.now(),
      run: 'r1',
      buckets: {},
    });
    // Act
    const refused = await discover(table, new MemoryQueue(), 'c1').catch((e) => e);
    const result = await discover(table, new MemoryQueue(), 'c1', { onExpired: 'skip-to-earliest' });
    // Assess
    expect(refused).toBeInstanceOf(SnapshotExpiredError);
    expect(result.gaps).toEqual([expect.objectContaining({ from: 1, to: 3, reason: 'snapshot-expired' })]);
    expect((await readConsumer(table.store, table.path, 'c1'))?.gaps).toEqual([
      expect.objectContaining({ from: 1, to: 3 }),
    ]);
  });

  it('a stream scan that falls behind expiry names the snapshots it skipped in its next plan', async () => {
    // Prepare: a scan that has read snapshot 1.
    const table = await makeTable({ bucket: '1' });
    await put(table, [[1, 'a']]);
    const scan = new StreamScan(table, { mode: 'earliest', onExpired: 'skip-to-earliest' });
    expect((await scan.plan())?.snapshot.id).toBe(1);
    await put(table, [[2, 'b']]);
    await put(table, [[3, 'c']]);
    await put(table, [[4, 'd']]);
    // Act
    await expireSnapshots(table, { now: pastFloor(), retainMin: 1, olderThanMs: 0 });
    const earliest = (await table.snapshots.earliestId())!;
    const plan = await scan.plan();
    // Assess
    expect(earliest).toBeGreaterThan(2);
    expect(plan?.snapshot.id).toBe(earliest);
    expect(plan?.skipped).toEqual({ from: 2, to: earliest });
  });
});

describe('consumer expiry racing a reader that still delivers', () => {
  it('the tombstone keeps the position the reader recorded after expiry read it: a resumed id gets no split twice', async () => {
    // Prepare: snapshot 1 delivered, snapshot 2 planned; the reader delivers 2 just before expiry deletes its progress.
    const store = new BeforeDeleteStore();
    const table = await makeTable({ bucket: '1', 'consumer.expiration-time': '1 h' }, { store });
    const queue = new MemoryQueue({ visibilityMs: 60_000 });
    const sink = new RecordingSink();
    const log = new LogLines();
    const reader = new SplitReader({ table, consumerId: 'c1', queue, sink, log: log.add });
    await put(table, [[1, 'a']]);
    await discover(table, queue, 'c1', { mode: 'earliest' });
    await reader.poll();
    await put(table, [[1, 'b']]);
    await discover(table, queue, 'c1');
    store.beforeDelete(
      (k) => k.includes('@progress/'),
      async () => void (await reader.poll()),
    );
    // Act: the consumer expires (clock jump) while its reader delivers snapshot 2, then is resumed.
    expect((await expireConsumers(table, { now: Date.now() + 2 * HOUR })).expired).toEqual(['c1']);
    const tombstone = await readTombstone(table.store, table.path, 'c1');
    const q2 = new MemoryQueue();
    const fresh = new SplitReader({ table, consumerId: 'c1', queue: q2, sink, log: log.add });
    await pump(table, q2, fresh, 'c1', { onExpired: 'skip-to-earliest' });
    // Assess: the reader's delivery of 2 is in the tombstone, and the resumed id does not hand 2 over again.
    expect(store.fired).toBe(1);
    expect(tombstone?.delivered).toEqual({ 'bucket-0': 2 });
    expect(sink.batches.map((b) => b.snapshotId)).toEqual([1, 2]);
    log.expectOnly();
  });
});

describe('an expired consumer resumed while no lease object exists (stress seed 361671716)', () => {
  it('the fencing token never starts again at 1: a new reader group is not fenced off by progress of the old holder', async () => {
    // Prepare: reader group B took the lease over from A (token 2) and is in its sink on snapshot 1.
    const table = await makeTable({ bucket: '1', 'consumer.expiration-time': '1 h' });
    await put(table, [[1, 'a']]);
    const a = new ConsumerLeaseHandle(table.store, table.path, 'c1', { ttlMs: 60_000 });
    await a.acquire();
    const b = new ConsumerLeaseHandle(table.store, table.path, 'c1', { ttlMs: 60_000, takeover: true });
    await b.acquire();
    expect(b.token).toBe(2);
    const queue = new MemoryQueue({ visibilityMs: 60_000 });
    await discover(table, queue, 'c1', { mode: 'earliest' });
    const [m1] = await queue.receive({ maxMessages: 10 });
    const { sink, open, held } = gatedSink(() => true);
    const late = new BatchDelivery(table, 'c1', sink, Date.now, { lease: b }).deliver(m1.body);
    await held;
    // Act: the consumer expires (its lease object is deleted), B's own discovery resumes the id
    // (skip-to-earliest: the tombstone goes), B's sink call lands and records progress under token 2;
    // then a new reader group takes the id.
    expect((await expireConsumers(table, { now: Date.now() + 2 * HOUR })).expired).toEqual(['c1']);
    await ensureConsumer(table, 'c1', { onExpired: 'skip-to-earliest' });
    open();
    expect(await late).toBe('delivered');
    expect((await readBucketProgress(table.store, table.path, 'c1', '', 0))?.token).toBe(2);
    const c = new ConsumerLeaseHandle(table.store, table.path, 'c1', { ttlMs: 60_000 });
    await c.acquire();
    const q2 = new MemoryQueue();
    const fresh = new RecordingSink();
    const log = new LogLines();
    await pump(
      table,
      q2,
      new SplitReader({ table, consumerId: 'c1', queue: q2, sink: fresh, log: log.add, fence: { lease: c } }),
      'c1',
      { maxRounds: 20 },
    );
    // Assess: the new holder's token is above every earlier one, and it delivers the resumed run.
    expect(c.token).toBeGreaterThan(2);
    expect(fresh.batches.map((x) => x.snapshotId)).toEqual([1]);
    log.expectOnly();
    // B was fenced off by the expiry: its lease is gone for good.
    await expect(b.renew()).rejects.toBeInstanceOf(ConsumerLeaseLostError);
  });
});

describe('a reader group fenced off by a takeover (stress seed 361671716, db.src//2)', () => {
  it('stops at its first fenced delivery and gives the split back at once, instead of retrying it into the dead-letter queue', async () => {
    // Prepare: runtime A holds the id (renewal only every 20 s); reader group B takes it over.
    const table = await makeTable({ bucket: '1' });
    const queue = new MemoryQueue({ visibilityMs: 60_000, maxReceiveCount: 2 });
    const lines: string[] = [];
    const runtime = new LocalRuntime({
      discoveryIntervalMs: 25,
      compactionIntervalMs: 0,
      expiryIntervalMs: 0,
      log: (l) => lines.push(l),
    });
    const consumer = await runtime.addConsumer({
      table,
      consumerId: 'c1',
      sink: new RecordingSink(),
      queue,
      leaseMs: 60_000,
      stream: { mode: 'earliest' },
    });
    await runtime.start();
    const b = new ConsumerLeaseHandle(table.store, table.path, 'c1', { ttlMs: 60_000, takeover: true });
    await b.acquire();
    // Act: a commit; A plans its split and its reader finds itself fenced off.
    await put(table, [[1, 'a']]);
    while (consumer.failure === undefined) await new Promise((r) => setTimeout(r, 5));
    await runtime.stop();
    // Assess: A stopped with ConsumerLeaseLostError; its split waits, visible, for B.
    expect(consumer.failure).toBeInstanceOf(ConsumerLeaseLostError);
    expect(await queue.depth()).toMatchObject({ visible: 1, deadLettered: 0 });
    expect(lines.some((l) => l.includes('dead-letter') || l.includes('will be retried'))).toBe(false);
    await b.release();
  });
});

describe('a reader still delivering when its consumer expires (stress seeds 361671716, 361671729)', () => {
  it('a split whose bucket progress expiry deleted is stale, not delivered again behind newer ones', async () => {
    // Prepare: two buckets, snapshots 1 and 2 delivered in both; their acknowledgements were lost.
    const table = await makeTable({ bucket: '2', 'consumer.expiration-time': '1 h' });
    const [k0, k1] = await bucketKeys(table);
    await put(table, [
      [k0, 'a'],
      [k1, 'a'],
    ]);
    await put(table, [
      [k0, 'b'],
      [k1, 'b'],
    ]);
    const queue = new MemoryQueue({ visibilityMs: 60_000 });
    await discover(table, queue, 'c1', { mode: 'earliest' });
    const messages = await queue.receive({ maxMessages: 10 });
    const sink = new RecordingSink();
    const first = new BatchDelivery(table, 'c1', sink);
    for (const m of messages) expect(await first.deliver(m.body)).toBe('delivered');
    const bucketOfMessage = (m: (typeof messages)[number]) =>
      JSON.parse(m.body) as { bucket: number; snapshotId: number };
    const copyOf = (bucket: number, snapshotId: number) =>
      messages.find((m) => bucketOfMessage(m).bucket === bucket && bucketOfMessage(m).snapshotId === snapshotId)!;
    // Act: a redelivering batch has read the consumer (bucket 0's copy of 2 is a duplicate) when
    // the consumer expires, which deletes its progress; the batch goes on with bucket 1's copy of 1.
    const again = new BatchDelivery(table, 'c1', sink);
    expect(await again.deliver(copyOf(0, 2).body)).toBe('duplicate');
    expect((await expireConsumers(table, { now: Date.now() + 2 * HOUR })).expired).toEqual(['c1']);
    const outcome = await again.deliver(copyOf(1, 1).body);
    // Assess: the old split is not handed over after the newer one, and no progress is re-created.
    expect(outcome).toBe('stale');
    expect(sink.batches.map((b) => `${b.snapshotId}/${b.bucket}`)).toEqual(
      messages.map((m) => `${bucketOfMessage(m).snapshotId}/${bucketOfMessage(m).bucket}`),
    );
    expect(await readBucketProgress(table.store, table.path, 'c1', '', 1)).toBeUndefined();
  });
});

/** Two keys, the first in bucket 0 and the second in bucket 1 of a 2-bucket `(k, v)` table. */
async function bucketKeys(table: Awaited<ReturnType<typeof makeTable>>): Promise<[number, number]> {
  const type = table.schema.fields.find((f) => f.name === 'k')!.type;
  const of = (k: number) => bucketOf([type], [BigInt(k)], 2);
  const first = (b: number) => [1, 2, 3, 4, 5, 6, 7, 8].find((k) => of(k) === b)!;
  return [first(0), first(1)];
}
