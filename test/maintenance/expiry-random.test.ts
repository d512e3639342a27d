/**
 * Randomized (seeded, replay with VARVE_SEED): writes, compactions, tags, consumers, crashed
 * commits, snapshot expiry (with and without a grace period) and orphan cleanup interleaved.
 * After every step every retained snapshot and every tag reads exactly what it read when it was
 * the latest, verifyTable passes, and no live consumer's position is below the earliest snapshot.
 */
import { describe, expect, it } from 'vitest';
import { expireSnapshots } from '../../lib/maintenance/expire-snapshots.js';
import { removeOrphanFiles } from '../../lib/maintenance/remove-orphans.js';
import { createTag, deleteTag } from '../../lib/snapshot/tags.js';
import { StoreCrashedError, type MemoryStore } from '../../lib/store/memory-store.js';
import { deleteConsumer } from '../../lib/snapshot/consumer.js';
import type { Table } from '../../lib/table/table.js';
import { rng, testSeed, type Rng } from '../helpers/random.js';
import { addConsumer, compactAll, expectVerified, newTable, rowsAt, upsert } from './expiry-fixtures.js';

interface World {
  table: Table;
  store: MemoryStore;
  r: Rng;
  /** Rows of each snapshot when it was the latest. */
  history: Map<number, string[]>;
  tags: Map<string, number>;
  consumers: Map<string, number>;
  /** Added to Date.now(): lets grace periods pass without waiting. */
  clock: number;
  log: string[];
  stats: { expired: number; deletedFiles: number; orphans: number; crashes: number };
}

async function recordNew(w: World, from: number): Promise<void> {
  const latest = (await w.table.snapshots.latestId()) ?? 0;
  for (let id = from; id <= latest; id++) w.history.set(id, await rowsAt(w.table, { snapshotId: id }));
}

async function step(w: World, n: number): Promise<void> {
  const { table, r } = w;
  const latest = (await table.snapshots.latestId()) ?? 0;
  const earliest = (await table.snapshots.earliestId()) ?? 1;
  const now = Date.now() + w.clock;
  const roll = r.next();
  if (roll < 0.35 || latest === 0) {
    const ids = Array.from({ length: r.int(1, 4) }, () => r.int(0, 15));
    const deletes = r.chance(0.4) ? [r.int(0, 15)].filter((d) => !ids.includes(d)) : [];
    w.log.push(`${n}: write ${ids} -${deletes}`);
    await upsert(table, [...new Set(ids)], `s${n}`, deletes);
    await recordNew(w, latest + 1);
  } else if (roll < 0.45) {
    w.log.push(`${n}: compact`);
    await compactAll(table);
    await recordNew(w, latest + 1);
  } else if (roll < 0.52) {
    const name = `t${n}`;
    const id = r.int(earliest, latest);
    w.log.push(`${n}: tag ${name} on ${id}`);
    await createTag(table.store, table.path, name, id);
    w.tags.set(name, id);
  } else if (roll < 0.56 && w.tags.size > 0) {
    const name = r.pick([...w.tags.keys()]);
    w.log.push(`${n}: delete tag ${name}`);
    await deleteTag(table.store, table.path, name);
    w.tags.delete(name);
  } else if (roll < 0.62 && w.consumers.size > 0) {
    // The consumers read on: each moves forward to somewhere up to past the latest.
    w.log.push(`${n}: consumers read`);
    for (const [id, next] of w.consumers) {
      const moved = r.int(next, latest + 1);
      await addConsumer(table, id, moved, now);
      w.consumers.set(id, moved);
    }
  } else if (roll < 0.66) {
    const id = `c${r.int(0, 2)}`;
    if (r.chance(0.4) && w.consumers.has(id)) {
      w.log.push(`${n}: delete consumer ${id}`);
      await deleteConsumer(table.store, table.path, id);
      w.consumers.delete(id);
    } else {
      // A live consumer only ever moves forward from a retained snapshot.
      const from = Math.max(earliest, w.consumers.get(id) ?? 0);
      const next = r.chance(0.5) ? Math.max(from, latest + 1) : r.int(from, latest + 1);
      w.log.push(`${n}: consumer ${id} at ${next}`);
      await addConsumer(table, id, next, now);
      w.consumers.set(id, next);
    }
  } else if (roll < 0.82) {
    const opts = {
      retainMin: r.int(1, 4),
      olderThanMs: 0,
      limit: r.int(1, 6),
      graceMs: r.chance(0.3) ? 5_000 : 0,
      now: now + 1,
    };
    w.log.push(`${n}: expire ${JSON.stringify(opts)}`);
    const res = await expireSnapshots(table, opts);
    w.stats.expired += res.expired.length;
    w.stats.deletedFiles += res.deletedFiles;
  } else if (roll < 0.9) {
    w.log.push(`${n}: remove orphans`);
    w.stats.orphans += (await removeOrphanFiles(table, { olderThanMs: 0, now: now + 1 })).deleted;
  } else if (roll < 0.96) {
    w.log.push(`${n}: crashed commit`);
    w.store.crashAt({ op: 'putIfAbsent', keyIncludes: '/snapshot/snapshot-' });
    await expect(upsert(table, [r.int(0, 15)], 'lost')).rejects.toThrow(StoreCrashedError);
    w.store.restart();
    w.stats.crashes++;
  } else {
    w.log.push(`${n}: clock +10 s`);
    w.clock += 10_000;
  }
}

async function checkInvariants(w: World): Promise<void> {
  const { table } = w;
  await expectVerified(table);
  const ids = await table.snapshots.listIds();
  const earliest = (await table.snapshots.earliestId()) ?? 1;
  expect(ids[0]).toBe(earliest);
  for (const id of ids) expect(await rowsAt(table, { snapshotId: id }), `snapshot ${id}`).toEqual(w.history.get(id));
  for (const [name, id] of w.tags) expect(await rowsAt(table, { tag: name }), `tag ${name}`).toEqual(w.history.get(id));
  for (const [id, next] of w.consumers) expect(next, `consumer ${id}`).toBeGreaterThanOrEqual(earliest);
}

describe('expiry, orphan cleanup and reads interleaved (randomized)', () => {
  it('every retained snapshot and tag reads what it read when it was the latest', async () => {
    // Prepare
    const seed = testSeed('expiry-random');
    const r = rng(seed);
    const table = await newTable({ 'changelog-producer': r.chance(0.5) ? 'input' : 'none' });
    const w: World = {
      table,
      store: table.store as MemoryStore,
      r,
      history: new Map(),
      tags: new Map(),
      consumers: new Map(),
      clock: 0,
      log: [],
      stats: { expired: 0, deletedFiles: 0, orphans: 0, crashes: 0 },
    };
    try {
      // Act and assess, step by step
      for (let n = 0; n < 60; n++) {
        await step(w, n);
        await checkInvariants(w);
      }
      // Finally everything unreferenced goes: no grace pending, no orphan left behind.
      w.clock += 60_000;
      await expireSnapshots(table, { retainMin: 1, olderThanMs: 0, now: Date.now() + w.clock });
      await removeOrphanFiles(table, { olderThanMs: 0, now: Date.now() + w.clock });
      const left = await removeOrphanFiles(table, { olderThanMs: 0, dryRun: true, now: Date.now() + w.clock });
      expect(left.orphans).toEqual([]);
      expect(w.store.keys().filter((k) => k.includes('/expiry/'))).toEqual([]);
      await checkInvariants(w);
      console.log(`[expiry-random] seed=${seed}: ${JSON.stringify(w.stats)}`);
    } catch (e) {
      console.log(`[expiry-random] seed=${seed}, steps:\n${w.log.join('\n')}`);
      throw e;
    }
  }, 240_000);
});
