/**
 * A committer never re-creates an expired snapshot id (lib/snapshot/commit-steps.ts betHolds, the
 * expiry floor of lib/maintenance/expiry-range.ts). put-if-absent cannot tell a never-created id
 * from an expired one: a commit that created one would land below the latest snapshot, where no
 * reader of the latest sees it (a silent loss). Separate committers (one table object each, so
 * each bets on the snapshot it made or saw last) race expiry runs with tight retention under a
 * driven clock (Date and performance.now move together, only when the test says): between their
 * operations the clock jumps by nothing, a fraction of a second, or past the floor, and an expiry
 * run also fires in the middle of a commit, at a random snapshot request of it (after the base
 * check, before the put, ...). Every commit that reports it committed is in the latest snapshot.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { tableToRows } from '../../lib/format/columns.js';
import { expireSnapshots } from '../../lib/maintenance/expire-snapshots.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import type { ObjectStore } from '../../lib/store/object-store.js';
import type { Table } from '../../lib/table/table.js';
import { rng, testSeed, type Rng } from '../helpers/random.js';
import { testTable } from '../helpers/tables.js';

/**
 * `inner` with a hook awaited before each snapshot-file request (HEAD, GET, put-if-absent of
 * `snapshot/snapshot-N`): where the test makes expiry run in the middle of a commit.
 */
function racingStore(inner: MemoryStore, before: (op: string, key: string) => Promise<void>): ObjectStore {
  const snap = (key: string) => /\/snapshot\/snapshot-\d+$/.test(key);
  return {
    uri: inner.uri,
    get: async (k) => {
      if (snap(k)) await before('get', k);
      return inner.get(k);
    },
    getRange: (k, a, b) => inner.getRange(k, a, b),
    head: async (k) => {
      if (snap(k)) await before('head', k);
      return inner.head(k);
    },
    put: (k, b) => inner.put(k, b),
    putIfAbsent: async (k, b) => {
      if (snap(k)) await before('putIfAbsent', k);
      return inner.putIfAbsent(k, b);
    },
    putIfMatch: (k, b, e) => inner.putIfMatch(k, b, e),
    delete: (k) => inner.delete(k),
    list: (p, o) => inner.list(p, o),
  };
}

/** One seeded history: committers, expiry runs between and inside their commits, clock jumps. */
async function raceHistory(seed: number, r: Rng): Promise<void> {
  const raw = new MemoryStore();
  const created = await testTable({
    schema: 'id INT NOT NULL, v STRING',
    primaryKeys: ['id'],
    options: { bucket: '1', 'write-only': 'true', 'num-sorted-run.stop-trigger': '1000' },
    store: raw,
  });
  const retention = { retainMin: 1, retainMax: r.int(1, 3), olderThanMs: r.pick([0, 0, 500, 30_000]) };
  const expirer = await new FolderCatalog(raw).getTable(created.name);
  const expire = () => expireSnapshots(expirer, { ...retention, expireConsumers: false, expireIdentifiers: false });
  // An expiry run at a random snapshot request of a commit in flight, at most once a commit.
  let armed = false;
  const store = racingStore(raw, async () => {
    if (!armed || !r.chance(0.3)) return;
    armed = false;
    if (r.chance(0.5)) vi.advanceTimersByTime(r.int(0, 400));
    await expire();
  });
  const catalog = new FolderCatalog(store);
  const committers: Table[] = [];
  for (let i = 0, n = r.int(2, 3); i < n; i++) committers.push(await catalog.getTable(created.name));
  const committed = new Map<number, number>(); // row id -> snapshot id its commit reported
  let nextId = 1;
  for (let step = 0, steps = r.int(25, 45); step < steps; step++) {
    vi.advanceTimersByTime(r.pick([0, 0, 0, 50, 300, 900, 1_200, 5_000, 70_000]));
    if (r.chance(0.3)) {
      await expire();
      continue;
    }
    const id = nextId++;
    armed = r.chance(0.5);
    const res = await r.pick(committers).write([{ id, v: `row ${id}` }]);
    armed = false;
    if (res.snapshot !== undefined) committed.set(id, res.snapshot.id);
  }
  const reader = await new FolderCatalog(raw).getTable(created.name);
  const latest = await reader.snapshots.latest();
  const present = new Set(tableToRows(await reader.read(), reader.schema.fields).map((row) => Number(row.id)));
  const lost = [...committed].filter(([id]) => !present.has(id));
  expect(
    lost,
    `seed ${seed}: committed rows missing from snapshot ${latest?.id} (row id, snapshot its commit reported)`,
  ).toEqual([]);
}

describe('a committer never re-creates an expired snapshot id', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('separate warm committers racing tight expiry under a driven clock lose nothing (randomized)', async () => {
    const seed = testSeed('expired-id-bet');
    const r = rng(seed);
    for (let round = 0; round < 6; round++) {
      vi.useFakeTimers({ toFake: ['Date', 'performance'], now: Date.now() });
      await raceHistory(seed, r);
      vi.useRealTimers();
    }
  }, 300_000);
});
