/**
 * Rollback under crashes: the store dies at every storage call of a rollback, before or after
 * the call takes effect. Then the table must verify, its latest snapshot must read as it did
 * when it was committed, and running the rollback again must leave exactly what an uncrashed
 * rollback leaves. The target, the tags and the consumer come from a printed seed.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { rollbackTo } from '../../lib/maintenance/rollback.js';
import { readConsumer } from '../../lib/snapshot/consumer.js';
import { createTag } from '../../lib/snapshot/tags.js';
import { StoreCrashedError, type MemoryStore } from '../../lib/store/memory-store.js';
import type { Table } from '../../lib/table/table.js';
import { rng, testSeed } from '../helpers/random.js';
import { addConsumer, cloneStore, eightSnapshots, expectVerified, newTable, reopen, rowsAt } from './expiry-fixtures.js';

interface Base {
  table: Table;
  store: MemoryStore;
  history: Map<number, string[]>;
  target: number;
  cleanKeys: string[];
  calls: number;
}

let base: Base;

beforeAll(async () => {
  const r = rng(testSeed('rollback-faults'));
  const table = await newTable({ 'changelog-producer': 'input' });
  const history = await eightSnapshots(table);
  const target = r.int(2, 7);
  await createTag(table.store, table.path, 'below', r.int(1, target));
  await createTag(table.store, table.path, 'above', r.int(target + 1, 8));
  await addConsumer(table, 'reader', r.int(target + 2, 9));
  const store = table.store as MemoryStore;
  const clean = await cloneStore(store);
  clean.resetCallLog();
  const done = await rollbackTo(reopen(table, clean), { snapshotId: target });
  expect(done.removedTags).toEqual(['above']);
  base = { table, store, history, target, cleanKeys: clean.keys(), calls: clean.callLog.length };
}, 300_000);

describe('rollbackTo under crashes', () => {
  for (const when of ['before', 'after'] as const) {
    it(`a crash ${when} any storage call leaves a readable table, and running the rollback again finishes it`, async () => {
      expect(base.calls).toBeGreaterThan(20);
      for (let nth = 1; nth <= base.calls; nth++) {
        // Prepare
        const store = await cloneStore(base.store);
        const table = reopen(base.table, store);
        store.crashAt({ nth, when });
        // Act
        const crashed = await rollbackTo(table, { snapshotId: base.target }).then(
          () => undefined,
          (e: unknown) => e,
        );
        // Assess
        expect(crashed, `call ${nth} ${when}`).toBeInstanceOf(StoreCrashedError);
        store.restart();
        const fresh = reopen(base.table, store);
        await expectVerified(fresh);
        const latest = (await fresh.snapshots.latestId())!;
        expect(latest).toBeGreaterThanOrEqual(base.target);
        expect(await rowsAt(fresh), `latest ${latest} after a crash at call ${nth} ${when}`).toEqual(base.history.get(latest));
        await rollbackTo(fresh, { snapshotId: base.target });
        expect(store.keys().filter((k) => !k.includes('/consumer/')), `re-run after a crash at call ${nth} ${when}`).toEqual(
          base.cleanKeys.filter((k) => !k.includes('/consumer/')),
        );
        expect((await readConsumer(store, fresh.path, 'reader'))!.nextSnapshot).toBe(base.target + 1);
        expect(await rowsAt(fresh)).toEqual(base.history.get(base.target));
      }
    }, 300_000);
  }
});
