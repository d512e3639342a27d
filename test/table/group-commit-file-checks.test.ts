/**
 * When the group commit checks that a queued batch's files still exist (a HEAD each) before a
 * snapshot references them (lib/table/group-commit.ts filesMayBeGone): never for a young batch
 * that no snapshot can have held (the request budget of a commit invocation,
 * test/functions/cold-invocation-requests.test.ts), always for one older than its pending
 * registration's retention (a redrive days later) and for one written before an expired snapshot
 * the deduplication window met (it may have landed there, and expiry deleted its files since).
 * A checked batch whose files are gone is refused, and nothing references them.
 */
import { describe, expect, it } from 'vitest';
import { pastFloor } from '../helpers/expiry-clock.js';
import { rng, testSeed } from '../helpers/random.js';
import { alterTable } from '../../lib/table/alter.js';
import { removeOrphanFiles } from '../../lib/maintenance/remove-orphans.js';
import { verifyTable } from '../../lib/maintenance/verify-table.js';
import { CommitFilesMissingError } from '../../lib/errors.js';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { compactTable } from '../../lib/maintenance/compact.js';
import { expireSnapshots } from '../../lib/maintenance/expire-snapshots.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import type { ObjectStore } from '../../lib/store/object-store.js';
import type { CommitMessage } from '../../lib/table/commit-message.js';
import { GroupCommit } from '../../lib/table/group-commit.js';
import { landRows } from '../../lib/table/land-rows.js';
import { batchFileKeys } from '../../lib/table/append-commit.js';
import type { Table } from '../../lib/table/table.js';
import { processView } from '../helpers/process-view.js';
import { readRows, testTable } from '../helpers/tables.js';

const DAY = 86_400_000;

/** A process of its own on `store` (its own deduplication window), counting the HEADs of data files. */
function committerProcess(store: MemoryStore, name: string): { store: ObjectStore; fileHeads: string[] } {
  const fileHeads: string[] = [];
  return {
    fileHeads,
    store: {
      ...processView(store),
      uri: `${store.uri}#${name}`,
      head: (k) => {
        if (/\/bucket-\d+\/data-/.test(k)) fileHeads.push(k);
        return store.head(k);
      },
    },
  };
}

/** A writer's batch of `ids` (2 buckets), handed to the group commit: its commit message. */
async function queuedBatch(table: Table, name: string, ids: number[]): Promise<CommitMessage> {
  const queued: CommitMessage[] = [];
  await landRows(
    table,
    ids.map((id) => ({ id: BigInt(id), v: name })),
    ids.map(() => 0),
    { commitUser: 'ingest', commitIdentifier: name, enqueue: async (m) => void queued.push(m) },
  );
  expect(queued).toHaveLength(1);
  return queued[0];
}

async function setUp() {
  const store = new MemoryStore();
  const writer = await testTable({
    schema: 'id BIGINT, v STRING',
    primaryKeys: ['id'],
    options: { bucket: '2' },
    store,
  });
  const open = (s: ObjectStore) => new FolderCatalog(s).getTable('db.t');
  return { store, writer, open };
}

describe('the group commit checks the files of a batch only when they may be gone', () => {
  it('checks every batch when an ALTER it has not seen may have lowered the registration retention, and refuses those orphan cleanup deleted (randomized)', async () => {
    const seed = testSeed('group-commit stale retention');
    const r = rng(seed);
    for (let round = 0; round < 3; round++) {
      // Prepare: young batches; a committer opened the table before an ALTER lowered
      // orphan-files.pending-time-retained, and orphan cleanup ran under the new value
      const { store, writer, open } = await setUp();
      const batches: CommitMessage[] = [];
      for (let i = 0, n = r.int(1, 3); i < n; i++) batches.push(await queuedBatch(writer, `b${i}`, [2 * i, 2 * i + 1]));
      const p = committerProcess(store, 'committer');
      const stale = await open(p.store);
      await alterTable(writer, [
        { kind: 'set-option', key: 'orphan-files.pending-time-retained', value: r.pick(['1 ms', '5 ms']) },
      ]);
      const later = Date.now() + r.int(1_000, 50_000);
      const cleanup = await removeOrphanFiles(await open(store), { mode: 'journal', olderThanMs: 1, now: later });
      expect(cleanup.deleted, `seed ${seed}`).toBeGreaterThan(0);

      // Act
      const queued = batches.map((message, i) => ({ id: `m${i}`, message }));
      const outcome = await new GroupCommit(stale, queued).settle('m0');

      // Assess: those whose files are gone refused, no snapshot names a missing file, every batch checked
      for (const [i, m] of batches.entries()) {
        const missing = (await Promise.all(batchFileKeys(stale, [m.batch]).map((k) => store.head(k)))).some(
          (h) => h === undefined,
        );
        expect(outcome.refused.get(`m${i}`) instanceof CommitFilesMissingError, `seed ${seed} batch ${i}`).toBe(
          missing,
        );
      }
      await expect(verifyTable(await open(store))).resolves.toMatchObject({ ok: true });
      expect(p.fileHeads.length, `seed ${seed}`).toBe(
        batchFileKeys(
          stale,
          batches.map((m) => m.batch),
        ).length,
      );
    }
  });

  it('commits a young batch without checking its files', async () => {
    // Prepare: a batch written moments ago, in both buckets
    const { store, writer, open } = await setUp();
    const m = await queuedBatch(writer, 'b1', [1, 2, 3, 4, 5, 6, 7, 8]);
    expect(new Set(m.batch.newFiles.map((f) => f.bucket)).size).toBe(2);
    const p = committerProcess(store, 'committer');
    const table = await open(p.store);

    // Act
    const outcome = await new GroupCommit(table, [{ id: 'm1', message: m }]).settle('m1');

    // Assess: committed, no file checked, every row there
    expect(outcome.refused.size).toBe(0);
    expect(outcome.committed?.snapshot.id).toBe(1);
    expect(p.fileHeads).toEqual([]);
    expect((await readRows(table)).map((r) => Number(r.id)).sort()).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it('checks the files of a batch older than its registration retention and refuses it when one is gone', async () => {
    // Prepare: two batches whose commit messages come back 16 days later (orphan-files.pending-time-retained
    // is 15 d); orphan cleanup has deleted a file of the first
    const { store, writer, open } = await setUp();
    const gone = await queuedBatch(writer, 'b1', [1, 2]);
    const kept = await queuedBatch(writer, 'b2', [3, 4]);
    const lost = batchFileKeys(writer, [gone.batch])[0];
    await store.delete(lost);
    const p = committerProcess(store, 'committer');
    const table = await open(p.store);
    const later = Date.now() + 16 * DAY;

    // Act
    const group = new GroupCommit(
      table,
      [
        { id: 'm1', message: gone },
        { id: 'm2', message: kept },
      ],
      { now: () => later },
    );
    const outcome = await group.settle('m1');

    // Assess: every file of both checked once; the first refused, naming the lost file; the second committed
    const files = batchFileKeys(table, [gone.batch, kept.batch]);
    expect([...p.fileHeads].sort()).toEqual([...files].sort());
    expect(outcome.refused.get('m1')).toBeInstanceOf(CommitFilesMissingError);
    expect(outcome.refused.get('m1')?.message).toContain(lost.slice(lost.lastIndexOf('/') + 1));
    expect(outcome.refused.has('m2')).toBe(false);
    expect((await readRows(table)).map((r) => Number(r.id)).sort()).toEqual([3, 4]);
  });

  it('skips a landed batch that comes back after compaction and expiry removed its snapshot and files', async () => {
    // Prepare: batch b1 committed (snapshot 1) by one committer, b2 after it; a full compaction
    // replaces b1's files and expiry keeps the latest snapshot only, deleting them. Then b1's
    // message comes back to another committer in another invocation batch (another run identifier).
    const { store, writer, open } = await setUp();
    const b1 = await queuedBatch(writer, 'b1', [1, 2]);
    const first = await open(committerProcess(store, 'first').store);
    await new GroupCommit(first, [{ id: 'm1', message: b1 }]).settle('m1');
    const b2 = await queuedBatch(writer, 'b2', [3, 4]);
    await new GroupCommit(first, [{ id: 'm2', message: b2 }]).settle('m2');
    await compactTable(first, { full: true });
    const expiry = await expireSnapshots(first, { retainMin: 1, retainMax: 1, olderThanMs: 0, now: pastFloor() });
    expect(expiry.expired.length).toBeGreaterThan(0);
    expect(expiry.deleted.dataFiles).toBeGreaterThan(0);
    const p = committerProcess(store, 'second');
    const table = await open(p.store);

    // Act
    const outcome = await new GroupCommit(table, [{ id: 'm1-again', message: b1 }]).settle('m1-again');

    // Assess: the compaction's snapshot carries the window's checkpoint (with b1's snapshot), so b1
    // is known as landed: skipped (not a false reject), no file looked at, no snapshot made
    expect([...p.fileHeads]).toEqual([]);
    expect(outcome.refused.size).toBe(0);
    expect(outcome.skipped).toBe(1);
    expect(outcome.committed).toBeUndefined();
    expect((await readRows(table)).map((r) => Number(r.id)).sort()).toEqual([1, 2, 3, 4]);
  });

  it('checks a young batch written before an expired snapshot the window met, and refuses it when its files are gone', async () => {
    // Prepare: batch b1 written and queued but not committed; b2 committed, a full compaction and
    // expiry keeping the latest snapshot only; b1's file lost meanwhile. Then b1's message reaches
    // another committer, whose window meets the expired snapshots.
    const { store, writer, open } = await setUp();
    const b1 = await queuedBatch(writer, 'b1', [1, 2]);
    const first = await open(committerProcess(store, 'first').store);
    const b2 = await queuedBatch(writer, 'b2', [3, 4]);
    await new GroupCommit(first, [{ id: 'm2', message: b2 }]).settle('m2');
    await compactTable(first, { full: true });
    const expiry = await expireSnapshots(first, { retainMin: 1, retainMax: 1, olderThanMs: 0, now: pastFloor() });
    expect(expiry.expired.length).toBeGreaterThan(0);
    const lost = batchFileKeys(first, [b1.batch])[0];
    await store.delete(lost);
    const p = committerProcess(store, 'second');
    const table = await open(p.store);

    // Act
    const outcome = await new GroupCommit(table, [{ id: 'm1', message: b1 }]).settle('m1');

    // Assess: its files checked and found gone: refused, no snapshot made, the rows as before
    expect([...p.fileHeads].sort()).toEqual([...batchFileKeys(table, [b1.batch])].sort());
    expect(outcome.refused.get('m1')).toBeInstanceOf(CommitFilesMissingError);
    expect(outcome.committed).toBeUndefined();
    expect((await readRows(table)).map((r) => Number(r.id)).sort()).toEqual([3, 4]);
  });
});
