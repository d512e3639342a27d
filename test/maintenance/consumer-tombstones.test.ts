/**
 * The lifetime of expired consumers' tombstones (`consumer.tombstone-retention`): kept forever
 * without the option, so resuming an expired id always fails loudly; with it, expiry removes an
 * old tombstone — after whatever else the id left — and the id is then a new consumer.
 */
import { describe, expect, it } from 'vitest';
import { ConsumerExpiredError } from '../../lib/errors.js';
import { expireSnapshots } from '../../lib/maintenance/expire-snapshots.js';
import { readConsumer, readTombstone, tombstoneKey } from '../../lib/snapshot/consumer.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { BeforeDeleteStore } from '../helpers/before-delete-store.js';
import { fromUtf8, listAll, utf8 } from '../../lib/store/object-store.js';
import { ensureConsumer } from '../../lib/stream/discovery.js';
import { progressKey } from '../../lib/stream/progress.js';
import { makeTable, put } from '../stream/fixtures.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** A table whose consumer c1 (at snapshot 1, snapshots 1..2 written) expired at `t0 + 2 h`. */
async function expiredConsumer(options: Record<string, string> = {}, store = new MemoryStore()) {
  const table = await makeTable({ bucket: '1', 'consumer.expiration-time': '1 h', ...options }, { store });
  await ensureConsumer(table, 'c1', { mode: 'earliest' });
  await put(table, [[1, 'a']]);
  await put(table, [[2, 'b']]);
  const t0 = Date.now();
  const r = await expireSnapshots(table, { now: t0 + 2 * HOUR, retainMin: 100 });
  expect(r.expiredConsumers).toEqual(['c1']);
  return { table, t0 };
}

describe('consumer tombstones', () => {
  it('are kept forever without consumer.tombstone-retention: a year later, resuming the id still fails loudly', async () => {
    const { table, t0 } = await expiredConsumer();

    const r = await expireSnapshots(table, { now: t0 + 365 * DAY, retainMin: 100 });

    expect(r.removedTombstones).toEqual([]);
    expect(await readTombstone(table.store, table.path, 'c1')).toBeDefined();
    await expect(ensureConsumer(table, 'c1')).rejects.toBeInstanceOf(ConsumerExpiredError);
  });

  it('are removed after consumer.tombstone-retention with what the id left; the id then starts as a new consumer', async () => {
    // Prepare: a tombstone, and a progress object a late reader of the expired run wrote after expiry.
    const { table, t0 } = await expiredConsumer({ 'consumer.tombstone-retention': '7 d' });
    await table.store.put(
      progressKey(table.path, 'c1', '', 0),
      utf8(JSON.stringify({ run: 'old', snapshot: 2, updated: t0 })),
    );
    // Act: inside the retention, then after it.
    const inside = await expireSnapshots(table, { now: t0 + 6 * DAY, retainMin: 100 });
    const refused = await ensureConsumer(table, 'c1').catch((e) => e);
    const after = await expireSnapshots(table, { now: t0 + 8 * DAY, retainMin: 100 });
    const left = (await listAll(table.store, `${table.path}/consumer/`)).map((o) => o.key);
    const fresh = await ensureConsumer(table, 'c1', { mode: 'latest' });
    // Assess
    expect(inside.removedTombstones).toEqual([]);
    expect(refused).toBeInstanceOf(ConsumerExpiredError);
    expect(after.removedTombstones).toEqual(['c1']);
    expect(left).toEqual([]);
    expect(fresh.nextSnapshot).toBe((await table.snapshots.latestId())! + 1);
    expect(await readConsumer(table.store, table.path, 'c1')).toBeDefined();
  });

  it('a tombstone re-written after expiry read it is not removed (conditional delete)', async () => {
    // Prepare: the store re-writes the tombstone at the moment expiry deletes it (a racing expiry run of a resumed-then-expired id).
    const store = new BeforeDeleteStore();
    const { table, t0 } = await expiredConsumer({ 'consumer.tombstone-retention': '7 d' }, store);
    const key = tombstoneKey(table.path, 'c1');
    store.beforeDelete(
      (k) => k === key,
      async () => {
        const t = JSON.parse(fromUtf8((await store.get(key)).body)) as Record<string, unknown>;
        await store.put(key, utf8(JSON.stringify({ ...t, reason: 'rewritten' })));
      },
    );
    // Act
    const r = await expireSnapshots(table, { now: t0 + 8 * DAY, retainMin: 100 });
    // Assess
    expect(store.fired).toBe(1);
    expect(r.removedTombstones).toEqual([]);
    expect(await readTombstone(table.store, table.path, 'c1')).toMatchObject({ reason: 'rewritten' });
  });
});
