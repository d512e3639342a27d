/**
 * A local runtime blocked longer than its consumer lease (a sink doing synchronous work, a blocking
 * wait): it takes the lease back when nobody else took it meanwhile, and goes on delivering; when
 * another reader took it, it stops with a clear message and delivers nothing that reader delivers.
 * Either way a line says what happened.
 */
import { describe, expect, it } from 'vitest';
import { ConsumerLeaseLostError } from '../../lib/errors.js';
import { LocalRuntime } from '../../lib/runtime/local-runtime.js';
import { RuntimeConsumer } from '../../lib/runtime/runtime-consumer.js';
import { ConsumerLeaseHandle } from '../../lib/stream/lease.js';
import { MemoryQueue } from '../../lib/stream/memory-queue.js';
import type { ChangeBatch } from '../../lib/stream/delivery.js';
import type { Table } from '../../lib/table/table.js';
import { LogLines } from '../helpers/log-lines.js';
import { makeTable, put, RecordingSink, show } from '../stream/fixtures.js';

/** The WARN line of a lease taken back after it ran out (lease.ts). */
const TAKEN_BACK = /ran out \d+ ms before it was renewed .* no other reader had taken it, so this reader took it back/;

/** Resolves once `check()` holds; the test's timeout is the backstop (sized by work, not time). */
async function eventually(check: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((r) => setTimeout(r, 2));
}

/** Blocks this thread (event loop, timers and all) for `ms`, as synchronous work in a sink does. */
function blockEventLoop(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** A consumer of `table` whose lease runs on a driven clock; discovery runs only when the test asks. */
async function drivenConsumer(
  table: Table,
  sink: RecordingSink,
  log: LogLines,
  clock: { now: number },
  holder = 'a',
): Promise<RuntimeConsumer> {
  const consumer = new RuntimeConsumer({
    table,
    consumerId: 'c1',
    sink,
    queue: new MemoryQueue({ visibilityMs: 60_000 }),
    // Renewed every 20 s of real time: within a test only the driven clock moves the lease.
    leaseMs: 60_000,
    holder: { host: 'here', pid: 1, readerId: holder },
    now: () => clock.now,
    discoveryIntervalMs: 0,
    stream: { mode: 'earliest' },
    log: log.add,
  });
  await consumer.init();
  await consumer.start();
  return consumer;
}

/** Commits `rows` and has `consumer` discover them (no commit event reaches a bare RuntimeConsumer). */
async function commit(table: Table, consumer: RuntimeConsumer, rows: Array<[number, string]>): Promise<void> {
  await put(table, rows);
  consumer.scheduleDiscovery();
}

describe('a local runtime blocked longer than its consumer lease', () => {
  it('takes the lease back when nobody took it and delivers everything (a sink blocking the event loop)', async () => {
    // Prepare: a 2 s lease (also the limit of one sink call); the sink's first call blocks the whole process for 5 s.
    const table = await makeTable({ bucket: '1' });
    const log = new LogLines();
    const runtime = new LocalRuntime({
      discoveryIntervalMs: 0,
      compactionIntervalMs: 0,
      expiryIntervalMs: 0,
      log: log.add,
    });
    const sink = new RecordingSink();
    let blocked = false;
    const blocking = {
      async write(batch: ChangeBatch): Promise<void> {
        if (!blocked) {
          blocked = true;
          blockEventLoop(5_000);
        }
        await sink.write(batch);
      },
    };
    const consumer = await runtime.addConsumer({
      table,
      consumerId: 'c1',
      sink: blocking,
      leaseMs: 2_000,
      stream: { mode: 'earliest' },
    });
    await runtime.start();
    try {
      // Act
      await put(table, [[1, 'a']]);
      await eventually(() => sink.batches.length > 0);
      await put(table, [[2, 'b']]);
      await eventually(() => sink.batches.some((b) => b.snapshotId === 2));
      // Assess: still running, under its first token. The blocked call outlived its time limit,
      // so its split was delivered again (same split id, as for any call past its limit), then the next.
      expect(consumer.failure).toBeUndefined();
      expect(consumer.lease!.token).toBe(1);
      expect(sink.batches.map((b) => b.splitId)).toEqual(['c1/1//0', 'c1/1//0', 'c1/2//0']);
    } finally {
      await runtime.stop();
    }
    expect(log.matching(TAKEN_BACK).length).toBeGreaterThanOrEqual(1);
    const pastLimit =
      /split of snapshot 1 bucket 0 failed on receive 1: the deadline \(SplitFenceLostError: the hold of bucket-0/;
    expect(log.matching(pastLimit)).toHaveLength(1);
    log.expectOnly(TAKEN_BACK, pastLimit);
  });

  it('takes the lease back when nobody took it (driven clock): the next commit is delivered', async () => {
    // Prepare
    const table = await makeTable({ bucket: '1' });
    const log = new LogLines();
    const clock = { now: 1_000_000 };
    const sink = new RecordingSink();
    const consumer = await drivenConsumer(table, sink, log, clock);
    try {
      await commit(table, consumer, [[1, 'a']]);
      await eventually(() => sink.changes.length === 1);
      // Act: two lease durations pass without a renewal, as in a process blocked that long.
      clock.now += 120_000;
      await commit(table, consumer, [[2, 'b']]);
      await eventually(() => sink.changes.length === 2);
      // Assess
      expect(consumer.failure).toBeUndefined();
      expect(consumer.lease!.token).toBe(1);
      expect(sink.changes.map(show)).toEqual(['+I 1=a', '+I 2=b']);
    } finally {
      await consumer.stop();
    }
    expect(log.matching(TAKEN_BACK)).toHaveLength(1);
    expect(log.lines[0]).toMatch(/lease of reader a \(host here, pid 1\) ran out 60000 ms before it was renewed/);
    log.expectOnly(TAKEN_BACK);
  });

  it('stops with a clear message when another reader took the lease meanwhile, and delivers nothing twice', async () => {
    // Prepare: A delivered the first commit.
    const table = await makeTable({ bucket: '1' });
    const logA = new LogLines();
    const clock = { now: 1_000_000 };
    const sinkA = new RecordingSink();
    const a = await drivenConsumer(table, sinkA, logA, clock);
    await commit(table, a, [[1, 'a']]);
    await eventually(() => sinkA.changes.length === 1);
    await eventually(() => a.isIdle());
    // Act: A is "blocked" past its lease; reader B finds it run out and takes it (no --takeover).
    clock.now += 120_000;
    const b = new ConsumerLeaseHandle(table.store, table.path, 'c1', {
      holder: { host: 'here', pid: 1, readerId: 'b' },
      ttlMs: 60_000,
      now: () => clock.now,
    });
    await b.acquire();
    await b.release();
    // A new holder, B's group, and A both see the next commit.
    const logB = new LogLines();
    const sinkB = new RecordingSink();
    const groupB = await drivenConsumer(table, sinkB, logB, clock, 'b');
    await commit(table, a, [[2, 'b']]);
    groupB.scheduleDiscovery();
    await eventually(() => a.failure !== undefined && sinkB.changes.length === 1);
    await a.stop();
    await groupB.stop();
    // Assess: A stopped and says to whom it lost the lease; each row reached one sink once.
    expect(a.failure).toBeInstanceOf(ConsumerLeaseLostError);
    expect(a.failure!.message).toMatch(
      /reader a \(host here, pid 1\)\) lost its lease to reader b \(host here, pid 1\)/,
    );
    expect(sinkA.changes.map(show)).toEqual(['+I 1=a']);
    expect(sinkB.changes.map(show)).toEqual(['+I 2=b']);
    expect(logA.lines).toEqual([`varve: consumer c1 of ${table.name} stopped: ${a.failure!.message}`]);
    logB.expectOnly();
  });
});
