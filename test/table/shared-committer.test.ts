/**
 * The in-process group commit (lib/table/shared-committer.ts): writers of one process on one table
 * share a committer that folds their waiting batches into one snapshot, each batch's identifier
 * still landing exactly once table-wide.
 */
import * as arrow from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { readLiveFiles } from '../../lib/manifest/scan.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { batchIdentifiersOf, readIdentifierIndex } from '../../lib/snapshot/commit-identifier.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import type { ObjectStore } from '../../lib/store/object-store.js';
import { sharedCommitterOf } from '../../lib/table/shared-committer.js';
import type { Table } from '../../lib/table/table.js';
import { rng, testSeed } from '../helpers/random.js';

async function openTable(store: ObjectStore, create: boolean): Promise<Table> {
  const catalog = new FolderCatalog(store);
  if (!create) return catalog.getTable('db.t');
  return catalog.createTable('db.t', {
    fields: parseSchemaText('id BIGINT, v STRING'),
    primaryKeys: ['id'],
    options: { bucket: '3', 'write-only': 'true', 'num-sorted-run.stop-trigger': '1000' },
  });
}

/** `n` rows with keys from `first`, each row's value naming the commit that wrote it. */
function rowsOf(first: number, n: number, tag: string): arrow.Table {
  return new arrow.Table({
    id: arrow.vectorFromArray(BigInt64Array.from({ length: n }, (_, i) => BigInt(first + i))),
    v: arrow.vectorFromArray(
      Array.from({ length: n }, () => tag),
      new arrow.Utf8(),
    ),
  });
}

/** Per sequence base of the live files: the absolute range it covers; bases must not overlap. */
async function sequenceRanges(table: Table): Promise<Array<[number, number]>> {
  const latest = (await table.snapshots.latest())!;
  const ranges = new Map<number, [number, number]>();
  for (const e of await readLiveFiles(table.store, table.path, latest)) {
    const r = ranges.get(e.file.sequenceBase) ?? [Infinity, -Infinity];
    ranges.set(e.file.sequenceBase, [
      Math.min(r[0], e.file.minSequenceNumber),
      Math.max(r[1], e.file.maxSequenceNumber),
    ]);
  }
  return [...ranges.values()].sort((a, b) => a[0] - b[0]);
}

describe('in-process group commit', () => {
  it('randomized: concurrent writers with repeated identifiers land every batch exactly once, in disjoint sequence ranges', async () => {
    // Prepare: a plan fixed by the seed (timing decides only which of two equal identifiers wins).
    const seed = testSeed('shared-committer');
    const r = rng(seed);
    const store = new MemoryStore({ latencyMs: 1 });
    const table = await openTable(store, true);
    const writers = r.int(4, 16);
    const plans: Array<Array<{ identifier: string; first: number; n: number }>> = [];
    const handedIn: string[] = [];
    let nextKey = 0;
    for (let w = 0; w < writers; w++) {
      const plan = [];
      for (let c = r.int(2, 6); c > 0; c--) {
        // Now and then a writer hands in an identifier another writer used (a retry, a re-send).
        const identifier = handedIn.length > 0 && r.chance(0.2) ? r.pick(handedIn) : `w${w}-c${c}`;
        handedIn.push(identifier);
        const n = r.int(1, 20);
        plan.push({ identifier, first: nextKey, n });
        nextKey += n;
      }
      plans.push(plan);
    }
    const committer = sharedCommitterOf(table);
    const roundsBefore = committer.rounds;
    const before = (await table.snapshots.latest())?.id ?? 0;
    // Act
    const outcomes = await Promise.all(
      plans.map(async (plan, w) => {
        const out = [];
        for (const p of plan) {
          const writer = table.newWriter({ commitUser: `writer-${w}` });
          await writer.writeArrow(rowsOf(p.first, p.n, p.identifier));
          const res = await writer.commit(p.identifier);
          await writer.close();
          out.push({ ...p, landed: !res.alreadyCommitted, snapshot: res.snapshot?.id });
        }
        return out;
      }),
    );
    // Assess: each identifier landed exactly once; its rows and no one else's are in the table.
    const all = outcomes.flat();
    const landed = all.filter((o) => o.landed);
    const identifiers = new Set(all.map((o) => o.identifier));
    expect(landed.map((o) => o.identifier).sort()).toEqual([...identifiers].sort());
    for (const o of all.filter((x) => !x.landed))
      expect(o.snapshot, `duplicate ${o.identifier} names the snapshot holding it`).toBe(
        landed.find((l) => l.identifier === o.identifier)!.snapshot,
      );
    const rows = await table.read();
    const expected = new Map<bigint, string>();
    for (const o of landed) for (let i = 0; i < o.n; i++) expected.set(BigInt(o.first + i), o.identifier);
    expect(rows.numRows).toBe(expected.size);
    const ids = rows.getChild('id')!.toArray() as BigInt64Array;
    const vs = rows.getChild('v')!.toArray() as string[];
    for (let i = 0; i < rows.numRows; i++) expect(vs[i]).toBe(expected.get(ids[i]));
    // Every landed batch has its own sequence base, and no two bases' ranges overlap.
    const ranges = await sequenceRanges(table);
    expect(ranges).toHaveLength(landed.length);
    for (let i = 1; i < ranges.length; i++) expect(ranges[i][0]).toBeGreaterThan(ranges[i - 1][1]);
    // The snapshots record each landed identifier once, and the rows counted match.
    const latest = (await table.snapshots.latest())!;
    const recorded: string[] = [];
    let deltaRows = 0;
    for (let id = before + 1; id <= latest.id; id++) {
      const s = await table.snapshots.read(id);
      recorded.push(...(batchIdentifiersOf(s).length > 0 ? batchIdentifiersOf(s) : [s.commitIdentifier]));
      deltaRows += s.deltaRecordCount;
    }
    expect(recorded.sort()).toEqual([...identifiers].sort());
    expect(deltaRows).toBe(expected.size);
    expect(committer.rounds - roundsBefore).toBe(latest.id - before);
    console.log(
      `[shared-committer] ${writers} writers, ${all.length} commits (${landed.length} landed) in ${latest.id - before} snapshots`,
    );
  });

  it('batches handed in while a round runs land together in the next snapshot, each identifier indexed', async () => {
    // Prepare: ten prepared batches.
    const table = await openTable(new MemoryStore(), true);
    const batches = [];
    for (let i = 0; i < 10; i++) {
      const w = table.newWriter();
      await w.writeArrow(rowsOf(i * 10, 10, `b${i}`));
      batches.push(await w.prepareCommit());
    }
    const committer = sharedCommitterOf(table);
    // Act: all handed in at once; the first starts a round alone, the other nine wait for the next.
    const outcomes = await Promise.all(
      batches.map((batch, i) =>
        committer.submit(table, { batch, identifier: `b${i}`, commitUser: `u${i}`, schemaId: table.schema.id }),
      ),
    );
    // Assess
    expect(outcomes.map((o) => o.snapshot!.id)).toEqual([1, ...Array(9).fill(2)]);
    expect(outcomes.filter((o) => o.announces)).toHaveLength(2);
    const second = await table.snapshots.read(2);
    expect(second.commitUser).toBe('writer-group');
    expect(batchIdentifiersOf(second)).toEqual(Array.from({ length: 9 }, (_, i) => `b${i + 1}`));
    for (let i = 1; i < 10; i++)
      expect((await readIdentifierIndex(table.store, table.path, `b${i}`))!.index).toMatchObject({
        attempt: 2,
        expiryMarks: true,
      });
    expect((await table.read()).numRows).toBe(100);
  });

  it("an identifier landing through another process's committer is left out of the round and reported as already committed", async () => {
    // Prepare: two "processes" = two store objects over the same objects, so two committers.
    const shared = new MemoryStore();
    const a = await openTable(shared, true);
    const b = await openTable(new Proxy(shared, {}), false);
    expect(sharedCommitterOf(a)).not.toBe(sharedCommitterOf(b));
    const wb = b.newWriter();
    await wb.writeArrow(rowsOf(1000, 5, 'other-process'));
    await wb.commit('dup');
    const prepared = [];
    for (let i = 0; i < 3; i++) {
      const w = a.newWriter();
      await w.writeArrow(rowsOf(i * 10, 10, `a${i}`));
      prepared.push(await w.prepareCommit());
    }
    // Act: a round of three where the middle one carries the identifier that already landed.
    const committer = sharedCommitterOf(a);
    const ids = ['a0', 'dup', 'a2'];
    const outcomes = await Promise.all(
      prepared.map((batch, i) =>
        committer.submit(a, { batch, identifier: ids[i], commitUser: 'a', schemaId: a.schema.id }),
      ),
    );
    // Assess
    expect(outcomes[1]).toMatchObject({ alreadyCommitted: true });
    expect(outcomes[1].snapshot!.id).toBe(1);
    expect(outcomes[0].alreadyCommitted || outcomes[2].alreadyCommitted).toBe(false);
    const keys = [...((await a.read()).getChild('id')!.toArray() as BigInt64Array)].map(Number).sort((x, y) => x - y);
    expect(keys).toEqual([
      ...Array.from({ length: 10 }, (_, i) => i),
      ...Array.from({ length: 10 }, (_, i) => 20 + i),
      1000,
      1001,
      1002,
      1003,
      1004,
    ]);
  });
});
