/**
 * A split past its failure budget on a queue without a dead-letter queue (split-policy.ts): it is
 * retried forever, each failure said in one ERROR line that says so; its failure record counts only
 * real failures (an attempt that ended is never taken for an invocation that died), and the split
 * is attempted again on every receive until it succeeds.
 */
import { describe, expect, it } from 'vitest';
import { discover, ensureConsumer } from '../../lib/stream/discovery.js';
import { MemoryQueue } from '../../lib/stream/memory-queue.js';
import { SplitReader } from '../../lib/stream/reader.js';
import { beginSplitAttempt, readSplitFailures, splitFailuresKey } from '../../lib/stream/split-failures.js';
import { parseSplitMessage } from '../../lib/stream/split-message.js';
import type { SplitQueue } from '../../lib/stream/split-queue.js';
import type { Table } from '../../lib/table/table.js';
import { LogLines, SPLIT_FAILED } from '../helpers/log-lines.js';
import { makeTable, put, RecordingSink, show } from './fixtures.js';

/** The one ERROR line of a spent split that no dead-letter queue can take. */
const spentLine = (failures: number, last: RegExp) =>
  new RegExp(
    `^varve: consumer c1 of db\\.t: split \\S+ \\(snapshot 1, bucket 0\\) has spent its failure budget \\(${failures} own failures, budget 2; last: ${last.source}\\) ` +
      'and there is no dead-letter queue to move it to \\(its queue has no dead-letter queue a reader can move it to\\): it is RETRIED FOREVER, next in 0 s',
  );

/** A table with one split of snapshot 1 in a queue that has no dead-letter queue (and never moves a message itself). */
async function setUp(): Promise<{ table: Table; memory: MemoryQueue; queue: SplitQueue }> {
  const table = await makeTable({ bucket: '1' });
  await ensureConsumer(table, 'c1', { mode: 'earliest' });
  await put(table, [[1, 'a']]);
  const memory = new MemoryQueue({ maxReceiveCount: 1_000 });
  await discover(table, memory, 'c1');
  const queue: SplitQueue = {
    send: (r) => memory.send(r),
    receive: (o) => memory.receive(o),
    ack: (h) => memory.ack(h),
    release: (h, d) => memory.release(h, d),
    depth: () => memory.depth(),
  };
  return { table, memory, queue };
}

function readerOf(table: Table, queue: SplitQueue, sink: RecordingSink, log: LogLines): SplitReader {
  return new SplitReader({
    table,
    consumerId: 'c1',
    queue,
    sink,
    failureBudget: 2,
    backoff: { baseMs: 0, maxMs: 0 },
    log: log.add,
  });
}

async function failures(table: Table): Promise<number | undefined> {
  return (await readSplitFailures(table.store, splitFailuresKey(table.path, 'c1', '', 0)))?.failures;
}

describe('a split past its budget on a queue without a dead-letter queue', () => {
  it('says so in one ERROR line per failure, counts only real failures, and is delivered once the sink recovers', async () => {
    // Prepare: the sink fails three times, then recovers.
    const { table, memory, queue } = await setUp();
    const log = new LogLines();
    const sink = new RecordingSink();
    let failing = 3;
    sink.failNext = () => failing-- > 0;
    const reader = readerOf(table, queue, sink, log);
    // Act
    const counts: Array<number | undefined> = [];
    for (let i = 0; i < 4; i++) {
      await reader.poll();
      counts.push(await failures(table));
    }
    // Assess: a WARN line under the budget, then one ERROR line per failure; the fourth receive delivers.
    expect(counts).toEqual([1, 2, 3, 3]);
    expect(sink.changes.map(show)).toEqual(['+I 1=a']);
    expect(log.lines).toHaveLength(3);
    expect(log.lines[0]).toMatch(
      /failed on receive 1: its own error \(Error: sink failure injected for \S+, own failure 1\/2\)/,
    );
    expect(log.lines[1]).toMatch(spentLine(2, /Error: sink failure injected for \S+/));
    expect(log.lines[2]).toMatch(spentLine(3, /Error: sink failure injected for \S+/));
    expect(await memory.depth()).toEqual({ visible: 0, inFlight: 0, deadLettered: 0 });
  });

  it('never reports an attempt that ended as an invocation that died: a split whose budget deaths spent is still attempted', async () => {
    // Prepare: two invocations died in the split (each noted its attempt, received again, and reported nothing).
    const { table, memory, queue } = await setUp();
    const [first] = await memory.receive();
    const split = parseSplitMessage(first.body);
    await memory.release(first.receiptHandle, 0);
    for (let i = 0; i < 2; i++) {
      const [m] = await memory.receive();
      await beginSplitAttempt(table.store, table.path, 'c1', split, m.receiveCount);
      await memory.release(m.receiptHandle, 0);
    }
    const log = new LogLines();
    const sink = new RecordingSink();
    let failing = 1;
    sink.failNext = () => failing-- > 0;
    const reader = readerOf(table, queue, sink, log);
    // Act: the next receive finds the second death (budget spent), attempts the split, and the sink fails;
    // the receive after it finds no death (that attempt ended) and delivers.
    await reader.poll();
    const afterFailure = await failures(table);
    await reader.poll();
    // Assess
    expect(afterFailure).toBe(3);
    expect(sink.changes.map(show)).toEqual(['+I 1=a']);
    expect(log.lines).toHaveLength(2);
    expect(log.lines[0]).toMatch(
      spentLine(
        2,
        /the invocation that received it \(receive 3\) ended without an outcome: it crashed, ran out of memory or reached Lambda's timeout/,
      ),
    );
    expect(log.lines[1]).toMatch(spentLine(3, /Error: sink failure injected for \S+/));
    expect(log.matching(/died/)).toEqual([]);
    log.expectOnly(/has spent its failure budget/);
    expect(log.matching(SPLIT_FAILED)).toEqual([]);
  });
});
