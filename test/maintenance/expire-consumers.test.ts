/**
 * Consumer expiration: idle consumers go with their progress and split objects and stop holding
 * expiry; consumers that moved recently, are caught up, or live on a table without
 * `consumer.expiration-time` stay.
 */
import { describe, expect, it } from 'vitest';
import { expireConsumers } from '../../lib/maintenance/expire-consumers.js';
import { expireSnapshots } from '../../lib/maintenance/expire-snapshots.js';
import type { MemoryStore } from '../../lib/store/memory-store.js';
import { utf8 } from '../../lib/store/object-store.js';
import { listConsumers, readTombstone } from '../../lib/snapshot/consumer.js';
import { ConsumerLeaseHandle, leaseKey, localHolder } from '../../lib/stream/lease.js';
import { addConsumer, eightSnapshots, newTable } from './expiry-fixtures.js';

const HOUR = 3_600_000;

describe('expireConsumers', () => {
  it('deletes the lease of an expired consumer; the next lease of the id starts above its fencing token', async () => {
    // Prepare: three holders in turn took consumer 'etl' (tokens 1, 2, 3).
    const table = await newTable({ 'consumer.expiration-time': '1 h' });
    await eightSnapshots(table);
    await addConsumer(table, 'etl', 3, 0);
    for (let i = 0; i < 3; i++)
      await new ConsumerLeaseHandle(table.store, table.path, 'etl', {
        holder: localHolder(),
        takeover: true,
      }).acquire();
    // Act
    const r = await expireConsumers(table, { now: Date.now() + 2 * HOUR });
    const next = new ConsumerLeaseHandle(table.store, table.path, 'etl', { holder: localHolder() });
    const leaseAfterExpiry = await table.store.head(leaseKey(table.path, 'etl'));
    await next.acquire();
    // Assess
    expect(r.expired).toEqual(['etl']);
    expect(leaseAfterExpiry).toBeUndefined();
    expect((await readTombstone(table.store, table.path, 'etl'))?.leaseToken).toBe(4);
    // Never a token a fenced-off holder of the old lease could have.
    expect(next.token).toBe(5);
  });

  it('removes a consumer idle for longer than consumer.expiration-time, with its progress and split objects', async () => {
    // Prepare
    const table = await newTable({ 'consumer.expiration-time': '1 h' });
    await eightSnapshots(table);
    const now = Date.now() + 2 * HOUR;
    await addConsumer(table, 'idle', 3, 0);
    // 'idle2' starts with 'idle': removing idle's objects must not touch its progress.
    await addConsumer(table, 'idle2', 3, now - 10 * 60_000);
    const own = [
      `${table.path}/consumer/consumer-idle@progress/bucket-0`,
      `${table.path}/consumer/consumer-idle@splits/3/bucket-1.json`,
    ];
    for (const key of own) await table.store.put(key, utf8('{}'));
    await table.store.put(`${table.path}/consumer/consumer-idle2@progress/bucket-0`, utf8('{}'));
    // Act
    const r = await expireConsumers(table, { now });
    // Assess
    expect(r.expired).toEqual(['idle']);
    expect(r.remaining.map((c) => c.id)).toEqual(['idle2']);
    const keys = (table.store as MemoryStore).keys().filter((k) => k.includes('/consumer/'));
    // Only its tombstone stays: resuming 'idle' fails loudly instead of starting a new consumer.
    expect(keys).toEqual([
      `${table.path}/consumer/consumer-idle2`,
      `${table.path}/consumer/consumer-idle2@progress/bucket-0`,
      `${table.path}/consumer/consumer-idle@expired`,
    ]);
    expect(await readTombstone(table.store, table.path, 'idle')).toMatchObject({
      id: 'idle',
      nextSnapshot: 3,
      expiredAt: now,
      reason: expect.stringMatching(/3600000 ms/),
    });
  });

  it('keeps a caught-up consumer however long ago it moved: it holds no snapshot', async () => {
    // Prepare
    const table = await newTable({ 'consumer.expiration-time': '1 h' });
    await eightSnapshots(table);
    await addConsumer(table, 'caught-up', 9, 0);
    // Act
    const r = await expireConsumers(table, { now: Date.now() + 10 * HOUR });
    // Assess
    expect(r.expired).toEqual([]);
    expect(r.remaining.map((c) => c.id)).toEqual(['caught-up']);
  });

  it('counts idleness from when its next snapshot was committed, not from an old last move', async () => {
    // Prepare: the consumer last moved long ago, but its next snapshot is only 30 minutes old.
    const table = await newTable({ 'consumer.expiration-time': '1 h' });
    await eightSnapshots(table);
    await addConsumer(table, 'waiting', 8, 0);
    const committed = (await table.snapshots.read(8)).timeMillis;
    // Act
    const young = await expireConsumers(table, { now: committed + HOUR / 2 });
    const old = await expireConsumers(table, { now: committed + 2 * HOUR });
    // Assess
    expect(young.expired).toEqual([]);
    expect(old.expired).toEqual(['waiting']);
  });

  it('without consumer.expiration-time consumers never expire, and expiry says so', async () => {
    // Prepare
    const table = await newTable();
    await eightSnapshots(table);
    await addConsumer(table, 'forever', 2, 0);
    // Act
    const r = await expireConsumers(table, { now: Date.now() + 1000 * HOUR });
    const e = await expireSnapshots(table, { retainMin: 1, olderThanMs: 0, now: Date.now() + 1000 * HOUR });
    // Assess
    expect(r.neverExpire).toBe(true);
    expect(r.expired).toEqual([]);
    expect(e.consumersNeverExpire).toBe(true);
    expect(e.expired).toEqual([1]);
    expect((await listConsumers(table.store, table.path)).map((c) => c.id)).toEqual(['forever']);
  });

  it('snapshot expiry expires idle consumers first, so they no longer hold snapshots', async () => {
    // Prepare
    const table = await newTable({ 'consumer.expiration-time': '1 h' });
    await eightSnapshots(table);
    await addConsumer(table, 'abandoned', 2, 0);
    // Act
    const r = await expireSnapshots(table, { retainMin: 1, olderThanMs: 0, now: Date.now() + 2 * HOUR });
    // Assess
    expect(r.expiredConsumers).toEqual(['abandoned']);
    expect(r.expired).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(r.consumersNeverExpire).toBe(false);
  });

  it('keeps a consumer that moved between the listing and the removal', async () => {
    // Prepare: the consumer moves right after consumer expiration reads it for the first time.
    const table = await newTable({ 'consumer.expiration-time': '1 h' });
    await eightSnapshots(table);
    await addConsumer(table, 'racer', 2, 0);
    const store = table.store as MemoryStore;
    const realGet = store.get.bind(store);
    let reads = 0;
    store.get = async (key: string) => {
      if (key.endsWith('/consumer/consumer-racer') && ++reads === 2) await addConsumer(table, 'racer', 3, Date.now());
      return realGet(key);
    };
    // Act
    const r = await expireConsumers(table, { now: Date.now() + 2 * HOUR });
    // Assess
    expect(r.expired).toEqual([]);
    expect(r.remaining.map((c) => [c.id, c.nextSnapshot])).toEqual([['racer', 3]]);
  });
});
