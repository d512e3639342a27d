/**
 * Rollback to a snapshot or a tag, as a forward commit: a new OVERWRITE snapshot holding the
 * target's live files, later snapshots kept in the history, sequence numbers going on from the
 * latest, the latest schema kept; writers racing it land before it (undone, and named) or after
 * it (on its state); a journal of an earlier varve's rollback is finished first.
 */
import { describe, expect, it } from 'vitest';
import { expireSnapshots } from '../../lib/maintenance/expire-snapshots.js';
import { ROLLBACK_COMMIT_USER, rollbackTo } from '../../lib/maintenance/rollback.js';
import { readConsumer } from '../../lib/snapshot/consumer.js';
import { rollbackTargetOf } from '../../lib/snapshot/snapshot.js';
import { createTag, listTags } from '../../lib/snapshot/tags.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { utf8 } from '../../lib/store/object-store.js';
import { parseAddColumn } from '../../lib/schema/schema-evolution.js';
import { StreamScan } from '../../lib/stream/stream-scan.js';
import { Table } from '../../lib/table/table.js';
import { tableToRows } from '../../lib/format/columns.js';
import { commitToTable } from '../../lib/table/table-commit.js';
import { requestAction } from '../../lib/snapshot/commit.js';
import { SnapshotNotFoundError, TagError } from '../../lib/errors.js';
import { processView } from '../helpers/process-view.js';
import { addConsumer, eightSnapshots, expectVerified, newTable, rowsAt, upsert } from './expiry-fixtures.js';

/** A store whose next snapshot-file put first runs `onSnapshotPut` (another process acting meanwhile). */
class RacingStore extends MemoryStore {
  onSnapshotPut?: () => Promise<void>;
  override async putIfAbsent(key: string, body: Uint8Array) {
    const hook = key.includes('/snapshot/snapshot-') ? this.onSnapshotPut : undefined;
    if (hook) this.onSnapshotPut = undefined;
    if (hook) await hook();
    return super.putIfAbsent(key, body);
  }
}

describe('rollbackTo', () => {
  it("commits one OVERWRITE snapshot holding the target's rows; the undone snapshots, their tags and consumers stay; the table goes on from there", async () => {
    // Prepare: APPENDs 1–3, compactions 4–5, APPENDs 6–8; tags on 2 and 7; consumers at 8 and 3.
    const table = await newTable({ 'changelog-producer': 'input' });
    const history = await eightSnapshots(table);
    await createTag(table.store, table.path, 'two', 2);
    await createTag(table.store, table.path, 'seven', 7);
    await addConsumer(table, 'ahead', 8);
    await addConsumer(table, 'behind', 3);
    const eight = await table.snapshots.read(8);
    // Act
    const r = await rollbackTo(table, { snapshotId: 5 });
    // Assess: snapshot 9 holds snapshot 5's rows and names 6..8 as undone; nothing was removed.
    expect(r.snapshot!.id).toBe(9);
    expect(r.snapshot!.commitKind).toBe('OVERWRITE');
    expect(r.snapshot!.commitUser).toBe(ROLLBACK_COMMIT_USER);
    expect(rollbackTargetOf(r.snapshot!)).toBe(5);
    expect(r.undone).toEqual({ from: 6, to: 8 });
    expect(r.removedFiles).toBeGreaterThan(0);
    expect(r.tagsOnUndone).toEqual(['seven']);
    expect(r.consumersPastTarget).toEqual([{ id: 'ahead', nextSnapshot: 8 }]);
    // Later writes win over restored rows: the sequence numbers go on from the latest snapshot.
    expect(r.snapshot!.nextSequenceNumber).toBe(eight.nextSequenceNumber);
    expect(await table.snapshots.listIds()).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(await rowsAt(table)).toEqual(history.get(5));
    for (const id of [2, 7, 8]) expect(await rowsAt(table, { snapshotId: id })).toEqual(history.get(id));
    expect(await rowsAt(table, { tag: 'seven' })).toEqual(history.get(7));
    expect((await listTags(table.store, table.path)).map((t) => t.name)).toEqual(['seven', 'two']);
    expect((await readConsumer(table.store, table.path, 'ahead'))!.nextSnapshot).toBe(8);
    await expectVerified(table);
    // The next commit is snapshot 10, on the rolled-back state; a key updated after the target
    // and written again now holds the new value (id 3 was 'e' at 7, 'a' at 5).
    expect(await upsert(table, [3, 42], 'z')).toBe(10);
    expect(await rowsAt(table)).toEqual(
      [...history.get(5)!.filter((row) => !row.startsWith('3=')), '3=z', '42=z'].sort(),
    );
    await expectVerified(table);
  });

  it('goes back to a tag, also when its snapshot has expired, and rolls a rollback back', async () => {
    const table = await newTable();
    const history = await eightSnapshots(table);
    await createTag(table.store, table.path, 'three', 3);
    await expireSnapshots(table, { retainMin: 2, olderThanMs: 0, now: Date.now() + 3_600_000 });
    expect(await table.snapshots.earliestId()).toBe(7);
    const r = await rollbackTo(table, { tag: 'three' });
    expect(r.target).toBe(3);
    expect(r.snapshot!.id).toBe(9);
    expect(r.undone).toEqual({ from: 4, to: 8 });
    expect(await rowsAt(table)).toEqual(history.get(3));
    await expectVerified(table);
    // Undo the rollback: back to 8.
    const back = await rollbackTo(table, { snapshotId: 8 });
    expect(back.snapshot!.id).toBe(10);
    expect(back.undone).toEqual({ from: 9, to: 9 });
    expect(await rowsAt(table)).toEqual(history.get(8));
    expect(await upsert(table, [99], 'y')).toBe(11);
    expect(await rowsAt(table)).toEqual([...history.get(8)!, '99=y'].sort());
    expect(await rowsAt(table, { tag: 'three' })).toEqual(history.get(3));
    await expectVerified(table);
  });

  it('to the latest snapshot, or to one holding the same files, commits nothing', async () => {
    const table = await newTable();
    await upsert(table, [1], 'a');
    await table.alter([{ kind: 'set-option', key: 'snapshot.num-retained.min', value: '5' }]);
    const latest = (await table.snapshots.latestId())!;
    for (const snapshotId of [latest, latest - 1]) {
      const r = await rollbackTo(table, { snapshotId });
      expect(r.snapshot).toBeUndefined();
      expect(r.undone).toBeUndefined();
    }
    expect(await table.snapshots.latestId()).toBe(latest);
  });

  it("takes its target's deletion-vector index as it is (exact for the files it holds again)", async () => {
    const table = await newTable();
    await upsert(table, [1], 'a');
    const indexed = await commitToTable(
      table,
      requestAction({
        commitUser: 'u',
        commitIdentifier: 'dv',
        kind: 'APPEND',
        schemaId: table.schema.id,
        batches: [],
        allowEmpty: true,
        deletionVectors: 'deletion-index-of-2',
      }),
    );
    expect(indexed.snapshot.deletionVectors).toBe('deletion-index-of-2');
    await upsert(table, [2], 'b');
    const r = await rollbackTo(table, { snapshotId: 2 });
    expect(r.snapshot!.deletionVectors).toBe('deletion-index-of-2');
    expect((await table.snapshots.read(r.snapshot!.id)).deletionVectors).toBe('deletion-index-of-2');
  });

  it('on a deletion-vector table, a row superseded only by an undone commit is live again (merge-free read = merged read)', async () => {
    const table = await newTable({ 'deletion-vectors.enabled': 'true' });
    await upsert(table, [1, 2], 'a');
    await upsert(table, [1], 'b', [2]);
    await upsert(table, [3], 'c');
    const r = await rollbackTo(table, { snapshotId: 1 });
    expect(await rowsAt(table)).toEqual(['1=a', '2=a']);
    expect(r.snapshot!.deletionVectors).toBe((await table.snapshots.read(1)).deletionVectors);
    expect(
      tableToRows(await table.read({ ignoreDeletionVectors: true }), table.schema.fields)
        .map((row) => `${row.id}=${row.v}`)
        .sort(),
    ).toEqual(['1=a', '2=a']);
    await upsert(table, [2], 'd');
    expect(await rowsAt(table)).toEqual(['1=a', '2=d']);
    await expectVerified(table);
  });

  it('refuses a target that does not exist, naming what does', async () => {
    const table = await newTable();
    await upsert(table, [1], 'a');
    await expect(rollbackTo(table, { snapshotId: 9 })).rejects.toThrow(SnapshotNotFoundError);
    await expect(rollbackTo(table, { snapshotId: 9 })).rejects.toThrow(/available snapshots .* 1\.\.1/);
    await expect(rollbackTo(table, { tag: 'nope' })).rejects.toThrow(TagError);
  });

  it('keeps the latest schema: the restored rows read in the current columns, writes take them', async () => {
    const table = await newTable();
    await upsert(table, [1], 'a');
    await table.alter([parseAddColumn('extra STRING')]);
    const altered = await (await table.latest()).write([{ id: 2, v: 'b', extra: 'x' }]);
    const r = await rollbackTo(table, { snapshotId: 1 });
    expect(r.snapshot!.schemaId).toBe(altered.snapshot!.schemaId);
    const reopened = await table.latest();
    expect(reopened.schema.fields.map((f) => f.name)).toEqual(['id', 'v', 'extra']);
    await reopened.write([{ id: 3, v: 'c', extra: 'y' }]);
    expect(await rowsAt(reopened)).toEqual(['1=a', '3=c']);
    // Time travel reads the undone snapshot in its own schema.
    expect(await rowsAt(reopened, { snapshotId: altered.snapshot!.id })).toEqual(['1=a', '2=b']);
    await expectVerified(reopened);
  });

  it('a retry of an identifier whose commit a rollback undid is deduplicated: it landed once (write it under a new identifier to apply it again)', async () => {
    const table = await newTable();
    await upsert(table, [1], 'a');
    const first = await table.write([{ id: 2, v: 'b' }], { commitIdentifier: 'batch-7' });
    expect(first.snapshot!.id).toBe(2);
    await rollbackTo(table, { snapshotId: 1 });
    const again = await table.write([{ id: 2, v: 'b' }], { commitIdentifier: 'batch-7' });
    expect(again.alreadyCommitted).toBe(true);
    expect(again.snapshot!.id).toBe(2);
    expect(await rowsAt(table)).toEqual(['1=a']);
    const anew = await table.write([{ id: 2, v: 'b' }], { commitIdentifier: 'batch-7-again' });
    expect(anew.alreadyCommitted).toBe(false);
    expect(await rowsAt(table)).toEqual(['1=a', '2=b']);
  });

  it("a writer in another process whose cached base predates the rollback lands on the rollback's state", async () => {
    const store = new MemoryStore();
    const a = await newTable({}, store);
    await upsert(a, [1], 'a');
    await upsert(a, [2], 'b');
    await upsert(a, [3], 'undone');
    await rollbackTo(new Table(processView(store), a.name, a.path, a.schema), { snapshotId: 1 });
    const id = await upsert(a, [4], 'd');
    expect(id).toBe(5);
    expect(await rowsAt(a)).toEqual(['1=a', '4=d']);
    await expectVerified(a);
  });

  it('a commit that lands first while the rollback plans is undone by it, and named', async () => {
    // Prepare: the rollback's snapshot put lets a writer in another process commit first.
    const store = new RacingStore();
    const admin = await newTable({}, store);
    await upsert(admin, [1], 'a');
    await upsert(admin, [2], 'b');
    const writer = new Table(processView(store), admin.name, admin.path, admin.schema);
    store.onSnapshotPut = async () => void (await upsert(writer, [3], 'raced'));
    // Act
    const r = await rollbackTo(admin, { snapshotId: 1 });
    // Assess: the rollback lost snapshot 3, planned again on it, and undid it too.
    expect(r.snapshot!.id).toBe(4);
    expect(r.undone).toEqual({ from: 2, to: 3 });
    expect(await rowsAt(admin)).toEqual(['1=a']);
    expect(await rowsAt(admin, { snapshotId: 3 })).toEqual(['1=a', '2=b', '3=raced']);
    await expectVerified(admin);
  });

  it("a commit racing the rollback's put lands after it, on the rolled-back state", async () => {
    const store = new RacingStore();
    const writer = await newTable({}, store);
    await upsert(writer, [1], 'a');
    await upsert(writer, [2], 'undone');
    const admin = new Table(processView(store), writer.name, writer.path, writer.schema);
    store.onSnapshotPut = async () => void (await rollbackTo(admin, { snapshotId: 1 }));
    // Act: the writer planned snapshot 3 on snapshot 2; the rollback takes 3 before its put.
    const id = await upsert(writer, [3], 'c');
    // Assess
    expect(id).toBe(4);
    expect(await rowsAt(admin)).toEqual(['1=a', '3=c']);
    await expectVerified(admin);
  });

  it('streams skip the rollback snapshot with an overwrite-skipped plan, even with streaming-read-overwrite', async () => {
    const table = await newTable({ 'streaming-read-overwrite': 'true' });
    await upsert(table, [1], 'a');
    await upsert(table, [2], 'b');
    await rollbackTo(table, { snapshotId: 1 });
    const scan = new StreamScan(table, { mode: 'from-snapshot', snapshotId: 3 });
    const plan = await scan.plan();
    expect(plan?.snapshot.id).toBe(3);
    expect(plan?.overwriteSkipped).toBe(true);
    expect(plan?.splits).toEqual([]);
  });

  it('finishes a journal an earlier varve left unfinished: its tags go, consumers past the latest move back, then the rollback runs', async () => {
    // Prepare: an earlier varve's rollback to 3 had removed snapshots 8..6 (newest first) and crashed.
    const table = await newTable();
    const history = await eightSnapshots(table);
    await createTag(table.store, table.path, 'seven', 7);
    await addConsumer(table, 'ahead', 9);
    const uuids: Record<string, string> = {};
    for (const id of [4, 5, 6, 7, 8])
      uuids[String(id)] = (await table.snapshots.read(id)).properties!['varve.commit-uuid'];
    const journal = {
      version: 1,
      target: 3,
      createdAt: Date.now(),
      snapshots: uuids,
      tags: ['seven'],
      dataFiles: [],
      changelogFiles: [],
      manifests: [],
      manifestLists: [],
    };
    await table.store.put(`${table.path}/rollback/rollback`, utf8(JSON.stringify(journal)));
    for (const id of [8, 7, 6]) await table.store.delete(table.snapshots.snapshotKey(id));
    const fresh = new Table(table.store, table.name, table.path, table.schema);
    // Act
    const r = await rollbackTo(fresh, { snapshotId: 3 });
    // Assess
    expect(r.legacy).toMatch(
      /finished the rollback to snapshot 3 that an earlier varve left unfinished: it had removed snapshots 6\.\.8, the latest snapshot is 5; removed its tags seven; moved consumers back: ahead \(from 9 to 6\)/,
    );
    expect(await table.store.head(`${table.path}/rollback/rollback`)).toBeUndefined();
    expect(r.snapshot!.id).toBe(6);
    expect(r.undone).toEqual({ from: 4, to: 5 });
    expect(await rowsAt(fresh)).toEqual(history.get(3));
    expect((await readConsumer(table.store, table.path, 'ahead'))!.nextSnapshot).toBe(6);
    await expectVerified(fresh);
  });
});
