/**
 * Orphan cleanup whose cost does not grow with the table: the journal-driven path (pending
 * registrations only: one LIST when every commit landed, the files of an expired registration
 * deleted unless referenced or younger than the window), the bounded scan that resumes across
 * runs from its marker, and crashes at random points of a scan (seeded; replay with VARVE_SEED).
 */
import { describe, expect, it } from 'vitest';
import { orphanScanMarkerKey, readOrphanScanMarker, removeOrphanFiles } from '../../lib/maintenance/remove-orphans.js';
import { RowKind } from '../../lib/schema/types.js';
import { StoreCrashedError, type MemoryStore } from '../../lib/store/memory-store.js';
import { utf8 } from '../../lib/store/object-store.js';
import { commitAppend } from '../../lib/table/append-commit.js';
import type { CommitMessage } from '../../lib/table/commit-message.js';
import { landRows } from '../../lib/table/land-rows.js';
import { listPending, pendingKey } from '../../lib/table/pending-commits.js';
import type { Table } from '../../lib/table/table.js';
import { rng, testSeed } from '../helpers/random.js';
import { eightSnapshots, expectVerified, newTable, rowsAt } from './expiry-fixtures.js';

const DAY = 86_400_000;

/** Writes a batch and "sends" it to a commit queue that never delivers: registered under pending/, in no snapshot. */
async function queuedBatch(
  table: Table,
  id: string,
  ids: number[],
): Promise<{ files: string[]; message: CommitMessage }> {
  let message: CommitMessage | undefined;
  await landRows(
    table,
    ids.map((i) => ({ id: i, v: id })),
    ids.map(() => RowKind.INSERT),
    {
      commitUser: 'writer',
      commitIdentifier: id,
      enqueue: async (m) => void (message = m),
    },
  );
  const pending = (await listPending(table)).find((p) => p.batch?.commitIdentifier === id)!;
  return { files: pending.batch!.files, message: message! };
}

/** `n` files that look like data files of bucket 0 and that nothing references. */
async function strayFiles(table: Table, n: number): Promise<string[]> {
  const keys = Array.from(
    { length: n },
    (_, i) => `${table.path}/bucket-0/data-stray-${String(i).padStart(3, '0')}.parquet`,
  );
  for (const k of keys) await table.store.put(k, utf8('left by a crashed writer'));
  return keys;
}

describe('removeOrphanFiles, journal mode', () => {
  it('costs one LIST and nothing else when no registration has expired, however many files the table has', async () => {
    // Prepare: a table with history and stray files, and one batch still queued
    const table = await newTable();
    await eightSnapshots(table);
    const stray = await strayFiles(table, 40);
    const queued = await queuedBatch(table, 'w-1', [50, 51]);
    const store = table.store as MemoryStore;
    store.resetCallLog();

    // Act: 13 days later with no window at all (as if the batch waited in a dead-letter queue)
    const r = await removeOrphanFiles(table, { mode: 'journal', olderThanMs: 0, now: Date.now() + 13 * DAY });

    // Assess: one LIST of pending/ and one GET of the registration; nothing deleted
    expect(store.calls.list).toBe(1);
    expect(store.callLog.filter((c) => c.op === 'list').map((c) => c.key)).toEqual([`${table.path}/pending/`]);
    expect(store.calls.get).toBe(1);
    expect(store.calls.delete).toBe(0);
    expect(r).toMatchObject({ mode: 'journal', deleted: 0, listed: 0 });
    for (const k of [...stray, ...queued.files]) expect(await store.head(k)).toBeDefined();
  });

  it('deletes the files of an expired registration and the registration; keeps referenced files and ones younger than the window', async () => {
    // Prepare: an uncommitted batch, a committed one whose release was lost, and a registration
    // that expired although its file is fresh (registered late)
    const table = await newTable();
    const history = await eightSnapshots(table);
    const lost = await queuedBatch(table, 'lost', [60, 61]);
    const committed = await queuedBatch(table, 'committed', [70]);
    await commitAppend(table, [committed.message.batch], { commitUser: 'group', commitIdentifier: 'g-1' });
    const store = table.store as MemoryStore;
    const fresh = await queuedBatch(table, 'fresh', [80]);
    const now = Date.now() + 16 * DAY;
    store.setLastModified(pendingKey(table, 'lost'), Date.now() - 16 * DAY);
    store.setLastModified(pendingKey(table, 'committed'), Date.now() - 16 * DAY);
    store.setLastModified(pendingKey(table, 'fresh'), Date.now() - 16 * DAY);
    for (const f of fresh.files) store.setLastModified(f, now - 1000);

    // Act
    const dry = await removeOrphanFiles(table, { mode: 'journal', dryRun: true, now });
    const r = await removeOrphanFiles(table, { mode: 'journal', now });

    // Assess
    const deleted = r.orphans.map((o) => o.key).sort();
    expect(dry.orphans.map((o) => o.key).sort()).toEqual(deleted);
    expect(deleted).toEqual([...lost.files, pendingKey(table, 'lost'), pendingKey(table, 'committed')].sort());
    expect(r.tooRecent).toBe(fresh.files.length);
    for (const f of lost.files) expect(await store.head(f)).toBeUndefined();
    for (const f of [...committed.files, ...fresh.files]) expect(await store.head(f)).toBeDefined();
    expect((await listPending(table)).map((p) => p.batch?.commitIdentifier)).toEqual(['fresh']);
    expect(await rowsAt(table, { snapshotId: 8 })).toEqual(history.get(8));
    expect(await rowsAt(table)).toContain('70=committed');
    await expectVerified(table);
  });
});

describe('removeOrphanFiles, bounded resumable scan', () => {
  it('stops at its key budget and the next run resumes after the last key it listed, until the cycle completes', async () => {
    // Prepare
    const table = await newTable();
    const history = await eightSnapshots(table);
    const stray = await strayFiles(table, 25);
    const queued = await queuedBatch(table, 'q', [90]);
    const store = table.store as MemoryStore;
    const total = store.keys().filter((k) => k.startsWith(`${table.path}/`)).length;
    const now = Date.now() + 2 * DAY;

    // Act: runs of at most 10 keys each
    const runs = [];
    for (let i = 0; i < 20; i++) {
      const r = await removeOrphanFiles(table, { mode: 'scan', maxKeys: 10, now });
      runs.push({ ...r, marker: await readOrphanScanMarker(table) });
      if (r.cycleComplete) break;
    }

    // Assess: every run within budget, each slice after the previous one's last key, every key listed once
    expect(runs.length).toBe(Math.ceil(total / 10) + (total % 10 === 0 ? 1 : 0));
    for (const r of runs) expect(r.listed).toBeLessThanOrEqual(10);
    for (let i = 1; i < runs.length; i++) {
      for (const o of runs[i].orphans) expect(o.key > runs[i - 1].resumeAfter!).toBe(true);
      expect(runs[i - 1].marker?.startAfter).toBe(runs[i - 1].resumeAfter);
      expect(runs[i].cycleStartedAt).toBe(runs[0].cycleStartedAt);
    }
    const last = runs[runs.length - 1];
    expect(last.cycleListed).toBe(total);
    expect(last.marker).toBeUndefined();
    expect(await store.head(orphanScanMarkerKey(table))).toBeUndefined();
    expect(runs.flatMap((r) => r.orphans.map((o) => o.key)).sort()).toEqual(stray);
    for (const f of queued.files) expect(await store.head(f)).toBeDefined();
    expect(await rowsAt(table)).toEqual(history.get(8));
    await expectVerified(table);
    // A new cycle starts from the beginning
    const again = await removeOrphanFiles(table, { mode: 'scan', maxKeys: 10, now });
    expect(again.cycleListed).toBe(again.listed);
  });

  it('survives a crash at a random point of any run: nothing referenced or queued is lost, and the cycle still completes (seeded)', async () => {
    const seed = testSeed('orphan-scan-crash');
    const random = rng(seed);
    let crashes = 0;
    for (let round = 0; round < 4; round++) {
      // Prepare
      const table = await newTable();
      const history = await eightSnapshots(table);
      const stray = await strayFiles(table, random.int(5, 30));
      const queued = await queuedBatch(table, `q-${round}`, [90 + round]);
      const lost = await queuedBatch(table, `lost-${round}`, [95 + round]);
      const store = table.store as MemoryStore;
      const now = Date.now() + 2 * DAY;
      store.setLastModified(pendingKey(table, `lost-${round}`), now - 16 * DAY);
      const maxKeys = random.int(4, 15);

      // Act: journal runs and scan runs (in random order) until the scan cycle completes and the
      // expired registration is gone; some die at a random store call (delete, marker put, list, get, head)
      let complete = false;
      let journalDone = false;
      for (let run = 0; run < 100 && !(complete && journalDone); run++) {
        const mode = !journalDone && (complete || random.chance(0.5)) ? 'journal' : 'scan';
        if (random.chance(0.5)) {
          const op = random.pick(['delete', 'put', 'list', 'get', 'head'] as const);
          store.crashAt({
            op,
            nth: random.int(1, op === 'delete' ? 6 : 2),
            when: random.chance(0.5) ? 'before' : 'after',
          });
        }
        try {
          const r = await removeOrphanFiles(table, { mode, maxKeys, now });
          if (mode === 'scan') complete ||= r.cycleComplete === true;
          else journalDone = (await store.head(pendingKey(table, `lost-${round}`))) === undefined;
        } catch (e) {
          if (!(e instanceof StoreCrashedError)) throw e;
          crashes++;
        }
        store.restart();
        journalDone ||= (await store.head(pendingKey(table, `lost-${round}`))) === undefined;
      }

      // Assess
      expect(complete && journalDone, `seed ${seed} round ${round}`).toBe(true);
      for (const f of lost.files) expect(await store.head(f), `seed ${seed}: lost ${f}`).toBeUndefined();
      for (const k of stray) expect(await store.head(k), `seed ${seed}: ${k}`).toBeUndefined();
      for (const f of queued.files) expect(await store.head(f), `seed ${seed}: queued ${f}`).toBeDefined();
      for (let id = 1; id <= 8; id++) expect(await rowsAt(table, { snapshotId: id })).toEqual(history.get(id));
      await expectVerified(table);
    }
    console.log(`[orphan-scan-crash] seed=${seed} crashes=${crashes}`);
    expect(crashes).toBeGreaterThan(0);
  });
});
