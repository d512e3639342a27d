/**
 * Expiry under crashes: the store dies at every storage call of an expiry run, before or after
 * the call takes effect. At that moment every snapshot a reader can open must be complete, the
 * latest must read as before, and a second run must finish the job exactly as an uncrashed run
 * does (same objects left, same EARLIEST).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { expireSnapshots, type ExpireSnapshotsOptions } from '../../lib/maintenance/expire-snapshots.js';
import { earliestHintKey } from '../../lib/snapshot/paths.js';
import { createTag } from '../../lib/snapshot/tags.js';
import { StoreCrashedError, type MemoryStore } from '../../lib/store/memory-store.js';
import { fromUtf8, utf8 } from '../../lib/store/object-store.js';
import type { Table } from '../../lib/table/table.js';
import {
  addConsumer,
  cloneStore,
  eightSnapshots,
  expectVerified,
  newTable,
  reopen,
  rowsAt,
} from './expiry-fixtures.js';

interface Base {
  table: Table;
  store: MemoryStore;
  history: Map<number, string[]>;
  opts: ExpireSnapshotsOptions;
  /** Keys and EARLIEST after an uncrashed run. */
  cleanKeys: string[];
  cleanEarliest: string;
  /** Storage calls of an uncrashed run. */
  calls: number;
}

let base: Base;

beforeAll(async () => {
  // Prepare one table state to replay: changelog files, a tag on a snapshot that expires, a live
  // consumer holding snapshot 6, and an idle consumer (with progress) that consumer expiration removes.
  const table = await newTable({ 'changelog-producer': 'input', 'consumer.expiration-time': '1 h' });
  const history = await eightSnapshots(table);
  await createTag(table.store, table.path, 'two', 2);
  const now = Date.now() + 3 * 3_600_000;
  await addConsumer(table, 'live', 6, now);
  await addConsumer(table, 'idle', 2, 0);
  await table.store.put(
    `${table.path}/consumer/consumer-idle@progress/bucket-0`,
    utf8('{"run":"r","snapshot":1,"updated":0}'),
  );
  const opts: ExpireSnapshotsOptions = { retainMin: 1, olderThanMs: 0, now };
  const store = table.store as MemoryStore;
  const clean = await cloneStore(store);
  clean.resetCallLog();
  const r = await expireSnapshots(reopen(table, clean), opts);
  const calls = clean.callLog.length;
  expect(r.expired).toEqual([1, 2, 3, 4, 5]);
  expect(r.expiredConsumers).toEqual(['idle']);
  base = {
    table,
    store,
    history,
    opts,
    cleanKeys: clean.keys(),
    cleanEarliest: fromUtf8((await clean.get(earliestHintKey(table.path))).body),
    calls,
  };
}, 300_000);

/** Every snapshot a reader can open right now, read through the table API. */
async function expectOpenableSnapshotsComplete(table: Table, history: Map<number, string[]>): Promise<void> {
  await expectVerified(table);
  const earliest = await table.snapshots.earliestId();
  const latest = await table.snapshots.latestId();
  expect(latest).toBe(8);
  // The oldest a reader can open is where a crash leaves half-done work, if anywhere: read it fully.
  for (const id of new Set([earliest!, latest!]))
    expect(await rowsAt(table, { snapshotId: id })).toEqual(history.get(id));
  expect(await rowsAt(table, { tag: 'two' })).toEqual(history.get(2));
}

describe('expireSnapshots under crashes', () => {
  for (const when of ['before', 'after'] as const) {
    it(`a crash ${when} any storage call leaves every openable snapshot complete, and a re-run finishes the job`, async () => {
      expect(base.calls).toBeGreaterThan(20);
      for (let nth = 1; nth <= base.calls; nth++) {
        // Prepare
        const store = await cloneStore(base.store);
        const table = reopen(base.table, store);
        store.crashAt({ nth, when });
        // Act
        const crashed = await expireSnapshots(table, base.opts).then(
          () => undefined,
          (e: unknown) => e,
        );
        // Assess
        expect(crashed, `call ${nth} ${when}`).toBeInstanceOf(StoreCrashedError);
        store.restart();
        await expectOpenableSnapshotsComplete(table, base.history);
        await expireSnapshots(table, base.opts);
        expect(store.keys(), `re-run after a crash at call ${nth} ${when}`).toEqual(base.cleanKeys);
        expect(fromUtf8((await store.get(earliestHintKey(table.path))).body)).toBe(base.cleanEarliest);
      }
    }, 300_000);
  }
});
