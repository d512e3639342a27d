/**
 * An identified commit writes its identifier's index once, before its snapshot; expiry marks the
 * index `committed` inside its journal before it deletes the snapshot (snapshot/commit-identifier.ts,
 * maintenance/expiry-journal.ts). Whatever crashes where — the commit at any storage call, the
 * expiry run at any storage call — and however a retry from a new process interleaves with
 * expiry, the identifier lands exactly once: a retry finds the earlier commit, or commits once.
 */
import { describe, expect, it } from 'vitest';
import { pastFloor } from '../helpers/expiry-clock.js';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { expireSnapshots } from '../../lib/maintenance/expire-snapshots.js';
import { journalDir } from '../../lib/maintenance/expiry-journal.js';
import { readIdentifierIndex } from '../../lib/snapshot/commit-identifier.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { listAll, type StoredObject } from '../../lib/store/object-store.js';
import type { Table } from '../../lib/table/table.js';
import { processView } from '../helpers/process-view.js';
import { newTable, rowsAt, upsert } from './expiry-fixtures.js';

const ID = 'the-one';

/** A MemoryStore that runs a hook once, right before the first GET of a key the armed predicate picks. */
class BeforeGetStore extends MemoryStore {
  fired = 0;
  private armed?: { picks: (key: string) => boolean; hook: () => Promise<void> };

  beforeGet(picks: (key: string) => boolean, hook: () => Promise<void>): void {
    this.armed = { picks, hook };
  }

  override async get(key: string): Promise<StoredObject> {
    const armed = this.armed;
    if (armed?.picks(key)) {
      this.armed = undefined;
      this.fired++;
      await armed.hook();
    }
    return super.get(key);
  }
}

/** The table as a new process opens it. */
function open(store: MemoryStore): Promise<Table> {
  return new FolderCatalog(processView(store)).getTable('db.t');
}

async function prepared(store: MemoryStore = new MemoryStore()): Promise<{ store: MemoryStore; table: Table }> {
  const table = await newTable({}, processView(store));
  await upsert(table, [1], 'a');
  await upsert(table, [2], 'b');
  return { store, table };
}

/** The identified commit: key 99 set to `v`. */
function write(table: Table, v: string) {
  return table.write([{ id: 99, v }], { commitIdentifier: ID });
}

/** Expires every snapshot but the latest. */
function expireAll(table: Table) {
  return expireSnapshots(table, { now: pastFloor(), retainMin: 1, retainMax: 1, olderThanMs: 0 });
}

async function carrying(table: Table): Promise<number[]> {
  const out: number[] = [];
  for (const id of await table.snapshots.listIds())
    if ((await table.snapshots.read(id)).commitIdentifier === ID) out.push(id);
  return out;
}

async function value99(table: Table): Promise<string | undefined> {
  return (await rowsAt(table)).find((r) => r.startsWith('99='))?.slice(3);
}

describe("identified commits with the mark in expiry's journal", () => {
  it('a crash at every storage call of the commit, then expiry, then a retry from a new process: exactly once', async () => {
    // Prepare: the call count of a clean identified commit.
    const clean = await prepared();
    clean.store.resetCallLog();
    await write(clean.table, 'first');
    const calls = clean.store.callLog.map((c) => `${c.op} ${c.key}`);
    // One write to the index, before the snapshot; none after it.
    const indexWrites = calls.filter((c) => c.includes('/commit/identifier-') && !c.startsWith('get'));
    expect(indexWrites).toHaveLength(1);
    expect(calls.indexOf(indexWrites[0])).toBeLessThan(
      calls.findIndex((c) => c.startsWith('putIfAbsent') && c.includes('/snapshot/snapshot-3')),
    );

    const outcomes: string[] = [];
    for (let k = 1; k <= calls.length; k++) {
      for (const when of ['before', 'after'] as const) {
        const label = `crash ${when} call ${k} (${calls[k - 1]})`;
        const { store, table } = await prepared();
        store.crashAt({ nth: k, when });
        // Act: the crashing commit, then other commits and an expiry of everything it may have made
        const error = await write(table, 'first').then(
          () => undefined,
          (e: unknown) => e,
        );
        store.restart();
        const other = await open(store);
        const landed = (await carrying(other)).length;
        expect(landed, label).toBeLessThanOrEqual(1);
        await upsert(other, [3], 'c');
        await upsert(other, [4], 'd');
        await expireAll(other);
        expect(await carrying(other), label).toEqual([]);
        const retry = await write(await open(store), 'retry');
        // Assess: found when it had landed, committed once when it had not — never twice.
        expect(retry.alreadyCommitted, label).toBe(landed === 1);
        expect(await value99(other), label).toBe(landed === 1 ? 'first' : 'retry');
        await upsert(other, [5], 'e');
        await expireAll(other);
        const again = await write(await open(store), 'again');
        expect(again.alreadyCommitted, label).toBe(true);
        expect(await value99(other), label).toBe(landed === 1 ? 'first' : 'retry');
        outcomes.push(`${when} ${k}: ${error === undefined ? 'returned' : (error as Error).name}, landed=${landed}`);
      }
    }
    console.log(`identified commit crash matrix (${outcomes.length} runs):\n  ${outcomes.join('\n  ')}`);
  });

  it('a crash at every storage call of the expiry run: a retry before and after the next run finds the commit', async () => {
    async function landedTable(): Promise<{ store: MemoryStore; table: Table }> {
      const p = await prepared();
      expect((await write(p.table, 'first')).snapshot?.id).toBe(3);
      await upsert(p.table, [3], 'c');
      await upsert(p.table, [4], 'd');
      return p;
    }
    const clean = await landedTable();
    const cleanExpirer = await open(clean.store);
    clean.store.resetCallLog();
    await expireAll(cleanExpirer);
    const calls = clean.store.callLog.map((c) => `${c.op} ${c.key}`);
    // The mark (a compare-and-swap of the index) comes before the snapshot holding the identifier goes.
    const mark = calls.findIndex((c) => c.startsWith('putIfMatch') && c.includes('/commit/identifier-'));
    expect(mark).toBeGreaterThan(0);
    expect(mark).toBeLessThan(calls.findIndex((c) => c.startsWith('delete') && c.endsWith('/snapshot/snapshot-3')));

    for (let k = 1; k <= calls.length; k++) {
      for (const when of ['before', 'after'] as const) {
        const label = `expiry crash ${when} call ${k} (${calls[k - 1]})`;
        const { store } = await landedTable();
        const expirer = await open(store);
        store.crashAt({ nth: k, when });
        await expireAll(expirer).catch(() => undefined);
        store.restart();
        // A retry while the crashed run's journal is unfinished
        const retry = await write(await open(store), 'retry');
        expect(retry.alreadyCommitted, label).toBe(true);
        // The next run finishes the journal; a retry after it still finds the commit.
        const table = await open(store);
        await expireAll(table);
        expect(await listAll(store, journalDir(table.path)), label).toEqual([]);
        expect(await carrying(table), label).toEqual([]);
        expect((await write(await open(store), 'again')).alreadyCommitted, label).toBe(true);
        expect(await value99(table), label).toBe('first');
      }
    }
  });

  it('a retry that read the index unmarked while expiry marks it and deletes the snapshot finds the commit', async () => {
    // Prepare: the identifier landed in snapshot 3; two more commits.
    const store = new BeforeGetStore();
    const { table } = await prepared(store);
    await write(table, 'first');
    await upsert(table, [3], 'c');
    await upsert(table, [4], 'd');
    const retrier = await open(store);
    // The retry reads the index (unmarked, attempt 3) and the latest snapshot; right before it reads
    // snapshot 3, a whole expiry run marks the index and deletes snapshots 1..4.
    store.beforeGet(
      (key) => key.endsWith('/snapshot/snapshot-3'),
      async () => void (await expireAll(await open(store))),
    );
    // Act
    const retry = await write(retrier, 'retry');
    // Assess: its takeover of the index failed on the etag the mark changed; it read the mark.
    expect(store.fired).toBe(1);
    expect(retry.alreadyCommitted).toBe(true);
    expect(await value99(table)).toBe('first');
    expect((await readIdentifierIndex(store, table.path, ID))?.index.committed).toBe(3);
  });
});
