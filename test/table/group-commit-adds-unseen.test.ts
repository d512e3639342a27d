/**
 * The group commit of a young batch reads no manifest of a table with history (issue 32: a cold
 * commit invocation's requests do not grow with the table): the back-pressure check, the
 * partitions' bucket counts and the compaction-job check read what the snapshot carries per
 * bucket (lib/snapshot/bucket-summary.ts), and the batch's files are not looked for among the
 * live ones, as no snapshot up to the one its deduplication window read can hold them
 * (group-commit.ts addsUnseenThrough). On any other base — a lost race — they are looked for as
 * before, and a batch found live is refused, never added twice.
 */
import { describe, expect, it } from 'vitest';
import { CommitConflictError } from '../../lib/errors.js';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { bucketStates } from '../../lib/maintenance/compaction-jobs.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import type { ObjectStore } from '../../lib/store/object-store.js';
import { commitAppend, touchedBy } from '../../lib/table/append-commit.js';
import type { CommitMessage } from '../../lib/table/commit-message.js';
import { GroupCommit } from '../../lib/table/group-commit.js';
import { landRows } from '../../lib/table/land-rows.js';
import type { Table } from '../../lib/table/table.js';
import { processView } from '../helpers/process-view.js';
import { readRows, testTable } from '../helpers/tables.js';

/** A process of its own on `store`, recording the keys of the manifests it reads. */
function countingProcess(store: MemoryStore): { store: ObjectStore; manifestReads: string[] } {
  const manifestReads: string[] = [];
  const view = processView(store);
  const note = (k: string) => /\/manifest\/manifest-(?!list)/.test(k) && manifestReads.push(k);
  return {
    manifestReads,
    store: {
      ...view,
      get: (k) => (note(k), view.get(k)),
      getRange: (k, a, b) => (note(k), view.getRange(k, a, b)),
    },
  };
}

/** A writer's batch of `ids`, handed to the group commit: its commit message. */
async function queuedBatch(table: Table, name: string, ids: number[]): Promise<CommitMessage> {
  const queued: CommitMessage[] = [];
  await landRows(
    table,
    ids.map((id) => ({ id: BigInt(id), v: name })),
    ids.map(() => 0),
    { commitUser: 'ingest', commitIdentifier: name, enqueue: async (m) => void queued.push(m) },
  );
  return queued[0];
}

/** A 2-bucket table with `commits` earlier commits into both buckets (a manifest each). */
async function tableWithHistory(commits: number) {
  const store = new MemoryStore();
  const writer = await testTable({
    schema: 'id BIGINT, v STRING',
    primaryKeys: ['id'],
    options: { bucket: '2', 'write-only': 'true', 'num-sorted-run.stop-trigger': '100' },
    store,
  });
  for (let c = 0; c < commits; c++)
    await writer.write(Array.from({ length: 8 }, (_, i) => ({ id: BigInt(c * 8 + i), v: `h${c}` })));
  return { store, writer, open: (s: ObjectStore) => new FolderCatalog(s).getTable('db.t') };
}

describe('the group commit of a young batch', () => {
  it('reads no manifest of a table with history, and the compaction-job check after it none either', async () => {
    // Prepare: 6 commits into both buckets, then a batch into both, to a committer process of its own
    const { store, writer, open } = await tableWithHistory(6);
    const m = await queuedBatch(writer, 'b1', [100, 101, 102, 103, 104, 105, 106, 107]);
    expect(new Set(m.batch.newFiles.map((f) => f.bucket)).size).toBe(2);
    const p = countingProcess(store);
    const table = await open(p.store);

    // Act
    const outcome = await new GroupCommit(table, [{ id: 'm1', message: m }]).settle('m1');
    const states = await bucketStates(table, outcome.committed!.snapshot, touchedBy([m.batch]));

    // Assess: committed on snapshot 6 without a manifest read; the buckets' runs (up to 7) as the files give them
    expect(outcome.committed?.snapshot.id).toBe(7);
    expect(p.manifestReads).toEqual([]);
    const snapshot = outcome.committed!.snapshot;
    const fromFiles = await bucketStates(table, { ...snapshot, properties: {} }, touchedBy([m.batch]));
    expect(states).toEqual(fromFiles);
    expect(Math.max(...states.map((s) => s.sortedRuns))).toBe(7);
    expect((await readRows(table)).length).toBe(56);
  });

  it('looks its files up on a base other than the one vouched for, and refuses them when live', async () => {
    // Prepare: a batch committed as snapshot 3; the same files come again under another identifier
    const { writer } = await tableWithHistory(2);
    const m = await queuedBatch(writer, 'b1', [100, 101]);
    const first = await commitAppend(writer, [m.batch], { commitUser: 'u', commitIdentifier: 'first' });
    expect(first.snapshot.id).toBe(3);
    const again = (vouched: number) =>
      commitAppend(writer, [m.batch], {
        commitUser: 'u',
        commitIdentifier: `again-${vouched}`,
        commitOptions: { addsUnseenThrough: vouched, maxRetries: 0 },
      });

    // Act, Assess: vouched for snapshot 2, the commit is on 3: looked up, found live, refused
    await expect(again(2)).rejects.toThrow(CommitConflictError);
    await expect(again(2)).rejects.toThrow(/already live in snapshot 3/);
    expect((await writer.snapshots.latest({ fresh: true }))?.id).toBe(3);
    expect((await readRows(writer)).length).toBe(18);
  });
});
