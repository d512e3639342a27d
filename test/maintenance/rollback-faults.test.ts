/**
 * Rollback under crashes: the store dies at every storage call of a rollback, before or after
 * the call takes effect. A rollback is one commit, so the table must then verify and hold either
 * the rows it had (the rollback did not land) or the target's (it did), and running the rollback
 * again must leave the target's rows. The target, the tags and the consumer come from a printed seed.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { rollbackTo } from '../../lib/maintenance/rollback.js';
import { createTag } from '../../lib/snapshot/tags.js';
import { StoreCrashedError, type MemoryStore } from '../../lib/store/memory-store.js';
import type { Table } from '../../lib/table/table.js';
import { rng, testSeed } from '../helpers/random.js';
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
  target: number;
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
  expect(done.snapshot!.id).toBe(9);
  base = { table, store, history, target, calls: clean.callLog.length };
}, 300_000);

describe('rollbackTo under crashes', () => {
  for (const when of ['before', 'after'] as const) {
    it(`a crash ${when} any storage call leaves the table as it was or rolled back, and running the rollback again finishes it`, async () => {
      expect(base.calls).toBeGreaterThan(5);
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
        expect([8, 9]).toContain(latest);
        expect(await rowsAt(fresh), `latest ${latest} after a crash at call ${nth} ${when}`).toEqual(
          base.history.get(latest === 9 ? base.target : 8),
        );
        const again = await rollbackTo(fresh, { snapshotId: base.target });
        expect(again.snapshot?.id ?? latest, `re-run after a crash at call ${nth} ${when}`).toBe(9);
        expect(await rowsAt(fresh)).toEqual(base.history.get(base.target));
        for (const id of [1, 2, 3, 4, 5, 6, 7, 8])
          expect(await rowsAt(fresh, { snapshotId: id })).toEqual(base.history.get(id));
        await expectVerified(fresh);
      }
    }, 300_000);
  }
});
