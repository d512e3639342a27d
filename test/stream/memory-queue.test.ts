/**
 * The in-process split queue against the SQS FIFO rules it mirrors (aws-semantics.md §2):
 * per-group order with one receiver per group, independent groups, deduplication window,
 * visibility timeout and receive counts, dead-lettering after maxReceiveCount, redrive.
 */
import { describe, expect, it } from 'vitest';
import { InjectedFaultError, InvalidArgumentError } from '../../lib/errors.js';
import { MemoryQueue } from '../../lib/stream/memory-queue.js';

function msg(groupId: string, n: number, dedupId = `${groupId}-${n}`) {
  return { groupId, dedupId, body: `${groupId}:${n}` };
}

/** A controllable clock. */
function clock(start = 1_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

describe('MemoryQueue', () => {
  it('delivers a group in order, one batch of it at a time, and the next only after the ack', async () => {
    // Prepare
    const q = new MemoryQueue();
    await q.send([msg('a', 1), msg('a', 2), msg('a', 3)]);
    // Act
    const first = await q.receive({ maxMessages: 2 });
    const whileInFlight = await q.receive();
    await q.ack(first.map((m) => m.receiptHandle));
    const next = await q.receive();
    // Assess
    expect(first.map((m) => m.body)).toEqual(['a:1', 'a:2']);
    expect(whileInFlight).toEqual([]);
    expect(next.map((m) => m.body)).toEqual(['a:3']);
  });

  it('keeps groups independent: a stuck group does not hold another back', async () => {
    // Prepare
    const q = new MemoryQueue();
    await q.send([msg('a', 1), msg('a', 2), msg('b', 1), msg('b', 2)]);
    // Act
    const a = (await q.receive({ maxMessages: 1 }))[0];
    const others = await q.receive();
    // Assess
    expect(others.map((m) => m.groupId)).not.toContain(a.groupId);
    expect(others.map((m) => m.body)).toEqual([
      `${a.groupId === 'a' ? 'b' : 'a'}:1`,
      `${a.groupId === 'a' ? 'b' : 'a'}:2`,
    ]);
  });

  it('drops a send whose deduplication id was seen within the window, even after the first was consumed', async () => {
    // Prepare
    const c = clock();
    const q = new MemoryQueue({ now: c.now, dedupWindowMs: 1000 });
    const [first] = await q.send([msg('a', 1, 'x')]);
    await q.ack((await q.receive()).map((m) => m.receiptHandle));
    // Act
    const [again] = await q.send([msg('a', 2, 'x')]);
    const delivered = await q.receive();
    c.advance(1001);
    const [later] = await q.send([msg('a', 3, 'x')]);
    // Assess
    expect(again).toEqual({ messageId: first.messageId, duplicate: true });
    expect(delivered).toEqual([]);
    expect(later.duplicate).toBe(false);
    expect((await q.receive()).map((m) => m.body)).toEqual(['a:3']);
  });

  it('scopes deduplication per group when asked (high-throughput FIFO)', async () => {
    const q = new MemoryQueue({ dedupScope: 'messageGroup' });
    const results = await q.send([msg('a', 1, 'same'), msg('b', 1, 'same'), msg('a', 2, 'same')]);
    expect(results.map((r) => r.duplicate)).toEqual([false, false, true]);
  });

  it('redelivers an unacknowledged message after its visibility timeout, with a new receipt and a higher count', async () => {
    // Prepare
    const c = clock();
    const q = new MemoryQueue({ now: c.now, visibilityMs: 100 });
    await q.send([msg('a', 1), msg('a', 2)]);
    const first = await q.receive({ maxMessages: 1 });
    // Act
    c.advance(99);
    const tooEarly = await q.receive();
    c.advance(1);
    const second = await q.receive({ maxMessages: 1 });
    await q.ack([first[0].receiptHandle]); // stale: deletes nothing
    const depth = await q.depth();
    // Assess
    expect(tooEarly).toEqual([]);
    expect(second[0].messageId).toBe(first[0].messageId);
    expect(second[0].receiveCount).toBe(2);
    expect(second[0].receiptHandle).not.toBe(first[0].receiptHandle);
    expect(depth).toEqual({ visible: 1, inFlight: 1, deadLettered: 0 });
  });

  it('releases a message for redelivery at once or after a delay (ChangeMessageVisibility)', async () => {
    // Prepare
    const c = clock();
    const q = new MemoryQueue({ now: c.now });
    await q.send([msg('a', 1)]);
    // Act
    const [m1] = await q.receive();
    await q.release(m1.receiptHandle);
    const [m2] = await q.receive();
    await q.release(m2.receiptHandle, 500);
    const blocked = await q.receive();
    c.advance(500);
    const [m3] = await q.receive();
    // Assess
    expect(m2.messageId).toBe(m1.messageId);
    expect(blocked).toEqual([]);
    expect(m3.receiveCount).toBe(3);
  });

  it('dead-letters a message received maxReceiveCount times, which unblocks its group', async () => {
    // Prepare
    const dead: string[] = [];
    const q = new MemoryQueue({ maxReceiveCount: 2, onDeadLetter: (m) => dead.push(m.body) });
    await q.send([msg('a', 1), msg('a', 2)]);
    // Act
    for (let i = 0; i < 2; i++) {
      const [m] = await q.receive({ maxMessages: 1 });
      await q.release(m.receiptHandle);
    }
    const next = await q.receive();
    // Assess
    expect(dead).toEqual(['a:1']);
    expect(next.map((m) => m.body)).toEqual(['a:2']);
    expect(q.deadLetters().map((m) => m.body)).toEqual(['a:1']);
    expect((await q.depth()).deadLettered).toBe(1);
  });

  it('redrives dead letters to the end of their group with a fresh receive count', async () => {
    // Prepare
    const q = new MemoryQueue({ maxReceiveCount: 1 });
    await q.send([msg('a', 1)]);
    await q.release((await q.receive())[0].receiptHandle);
    await q.receive(); // moves a:1 to the dead-letter queue
    // Act
    const moved = q.redrive();
    const [m] = await q.receive();
    // Assess
    expect(moved).toBe(1);
    expect(m.body).toBe('a:1');
    expect(m.receiveCount).toBe(1);
  });

  it('wakes a long-polling receive when a message is sent', async () => {
    // Prepare
    const q = new MemoryQueue();
    const started = Date.now();
    // Act
    // A receive that was not woken returns only at its 100-s deadline: the bound below tells the
    // two apart with a margin no busy machine's scheduling delay comes near.
    const pending = q.receive({ waitMs: 100_000 });
    setTimeout(() => void q.send([msg('a', 1)]), 10);
    const got = await pending;
    // Assess
    expect(got.map((m) => m.body)).toEqual(['a:1']);
    expect(Date.now() - started).toBeLessThan(50_000);
  });

  it('injects faults on send and ack, and refuses ids SQS would refuse', async () => {
    // Prepare
    let failAck = true;
    const q = new MemoryQueue({ faults: { ack: () => failAck, send: (r) => r.body === 'boom' } });
    await q.send([msg('a', 1)]);
    const [m] = await q.receive();
    // Act / Assess
    await expect(q.ack([m.receiptHandle])).rejects.toBeInstanceOf(InjectedFaultError);
    failAck = false;
    await q.ack([m.receiptHandle]);
    expect(await q.depth()).toEqual({ visible: 0, inFlight: 0, deadLettered: 0 });
    await expect(q.send([{ groupId: 'a', dedupId: 'z', body: 'boom' }])).rejects.toBeInstanceOf(InjectedFaultError);
    await expect(q.send([{ groupId: 'g'.repeat(129), dedupId: 'x', body: '' }])).rejects.toBeInstanceOf(
      InvalidArgumentError,
    );
  });
});
