/**
 * Fault injection during compaction: the store crashes at each of a compaction's storage calls
 * in turn (before the call takes effect, and after). Whatever the crash point, a reader never
 * meets a missing file and sees the same rows, and a re-run of the job finishes it.
 */
import { describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { compactBucket, compactTable } from '../../lib/maintenance/compact.js';
import { RowKind } from '../../lib/schema/types.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import type { Table } from '../../lib/table/table.js';
import { rng, testSeed } from '../helpers/random.js';
import {
  ChangelogReplay,
  checkLevels,
  liveFilesByBucket,
  newTable,
  readState,
  sorted,
  writeChanges,
  type Change,
} from './fixtures.js';

/**
 * Level-0 files of the swept compaction: four overlapping ones (deletes included) in the default
 * suite, six in compact-faults.stress.ts (`npm run stress`): each crash point costs a compaction,
 * two reads, a re-run and a changelog replay, and the number of points grows with the files.
 */
const FILES = process.env.VARVE_STRESS === '1' ? 6 : 4;

/**
 * A write-only table with FILES overlapping level-0 files in one bucket: written once, then each
 * call gets a copy of its objects opened afresh (as a new process would), so the crash sweep pays
 * for the compactions it checks rather than for the same writes each time.
 */
let written: MemoryStore | undefined;
async function prepared(): Promise<{ store: MemoryStore; table: Table }> {
  written ??= (await writeFiles()).store;
  const store = new MemoryStore();
  for (const key of written.keys()) await store.put(key, (await written.get(key)).body);
  return { store, table: await new FolderCatalog(store).getTable('db.t') };
}

async function writeFiles(): Promise<{ store: MemoryStore; table: Table }> {
  const store = new MemoryStore();
  const table = await newTable(
    { 'write-only': 'true', 'changelog-producer': 'lookup', 'target-file-size': '2 kb' },
    store,
  );
  for (let i = 0; i < FILES; i++) {
    const changes: Change[] = [];
    for (let id = 1; id <= 20; id++) {
      if ((id + i) % 5 === 0) changes.push({ row: { id, region: 'eu', v: null, s: null }, kind: RowKind.DELETE });
      else changes.push({ row: { id, region: 'eu', v: BigInt(id * 10 + i), s: `r${i}` }, kind: RowKind.INSERT });
    }
    await writeChanges(table, changes);
  }
  return { store, table };
}

describe('a crash at any storage call of a compaction', () => {
  // One test per side of the calls (each sweep is a compaction, two reads, a re-run and a replay
  // per call: half the work per test).
  for (const when of ['before', 'after'] as const) {
    it(`never shows a reader a missing file, and a re-run finishes the job (crash ${when} each call)`, async () => {
      // Prepare: count the calls of one clean compaction.
      const clean = await prepared();
      const expected = sorted(await readState(clean.table));
      clean.store.resetCallLog();
      await compactBucket(clean.table, 'region=eu', 0, { full: true });
      const calls = clean.store.callLog.length;
      expect(calls).toBeGreaterThan(10);
      console.log(`[compact-faults] a clean full compaction of ${FILES} files makes ${calls} storage calls`);

      for (let nth = 1; nth <= calls; nth++) {
        const { store, table } = await prepared();
        const context = `crash ${when} call ${nth} of ${calls}`;
        store.crashAt({ nth, when });

        // Act: the job dies at call nth (or, crashing after the last call, just after finishing).
        await compactBucket(table, 'region=eu', 0, { full: true }).catch(() => undefined);
        store.restart();

        // Assess: every snapshot that exists reads in full, to the same rows.
        expect(sorted(await readState(table)), context).toEqual(expected);
        await checkLevels(table, context);
        // A re-run finishes the job: one max-level run, same rows, and a changelog that replays to them.
        await compactTable(table, { full: true });
        const files = (await liveFilesByBucket(table)).get('region=eu#0')!;
        expect(new Set(files.map((e) => e.file.level)), context).toEqual(new Set([table.options.numLevels - 1]));
        expect(sorted(await readState(table)), context).toEqual(expected);
        expect(sorted(await new ChangelogReplay(table).advance()), context).toEqual(expected);
      }
    });
  }
});

describe('a crash during a compaction run over several buckets', () => {
  /** Three buckets with six level-0 files each (lookup producer: the run writes changelog too). */
  async function threeBuckets(): Promise<{ store: MemoryStore; table: Table }> {
    const store = new MemoryStore();
    const table = await newTable({ 'write-only': 'true', 'changelog-producer': 'lookup', bucket: '3' }, store);
    for (let i = 0; i < 6; i++) {
      await writeChanges(
        table,
        Array.from({ length: 30 }, (_, k) => ({
          row: { id: k + 1, region: 'eu', v: BigInt(i), s: null },
          kind: RowKind.INSERT,
        })),
      );
    }
    return { store, table };
  }

  async function compactSnapshots(table: Table): Promise<number[]> {
    const out: number[] = [];
    for (let id = 1; id <= ((await table.snapshots.latestId()) ?? 0); id++)
      if ((await table.snapshots.read(id)).commitKind === 'COMPACT') out.push(id);
    return out;
  }

  it('leaves the table readable, and the re-run lands the run exactly once (one COMPACT snapshot)', async () => {
    const seed = testSeed('compact-run-faults');
    const random = rng(seed);
    const clean = await threeBuckets();
    const expected = sorted(await readState(clean.table));
    clean.store.resetCallLog();
    await compactTable(clean.table, { full: true });
    const calls = clean.store.callLog.length;

    for (let round = 0; round < 6; round++) {
      const { store, table } = await threeBuckets();
      const nth = random.int(1, calls);
      const when = random.pick(['before', 'after'] as const);
      const context = `seed ${seed}: crash ${when} call ${nth} of ${calls}`;
      store.crashAt({ nth, when });

      await compactTable(table, { full: true }).catch(() => undefined);
      store.restart();

      // Readable, same rows, LSM invariants hold.
      expect(sorted(await readState(table)), context).toEqual(expected);
      await checkLevels(table, context);
      // The re-run finishes: exactly one COMPACT snapshot in the table (the crashed run's, if its
      // commit landed, or the re-run's), every bucket at the max level, and the changelog replays.
      await compactTable(table, { full: true });
      expect(await compactSnapshots(table), context).toHaveLength(1);
      const byBucket = await liveFilesByBucket(table);
      expect(byBucket.size, context).toBe(3);
      for (const files of byBucket.values())
        expect(
          files.every((e) => e.file.level === table.options.numLevels - 1),
          context,
        ).toBe(true);
      expect(sorted(await readState(table)), context).toEqual(expected);
      expect(sorted(await new ChangelogReplay(table).advance()), context).toEqual(expected);
      // And a third run has nothing to do.
      expect((await compactTable(table, { full: true })).snapshots, context).toEqual([]);
    }
  });
});
