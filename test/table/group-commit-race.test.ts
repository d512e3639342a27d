/**
 * Two or more group commits folding the same batches, or batches of the same sources, at the same
 * moment (a second deployment, the CLI, a commit function beside a redrive: nothing but the FIFO
 * message group on AWS keeps them apart) land each source once: the commit that loses the race
 * for the snapshot id re-checks its batches against the snapshots that landed first and leaves out
 * what they hold.
 */
import { describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import type { CommitMessage } from '../../lib/table/commit-message.js';
import { GroupCommit, type QueuedCommit, type RunOutcome } from '../../lib/table/group-commit.js';
import { landRows } from '../../lib/table/land-rows.js';
import { BATCHES_PROPERTY, SOURCES_PROPERTY } from '../../lib/table/recent-batches.js';
import type { Table } from '../../lib/table/table.js';
import { processView } from '../helpers/process-view.js';
import { rng, testSeed } from '../helpers/random.js';
import { testTable } from '../helpers/tables.js';

/** A writer's batch of one row per source, handed to the group commit: its commit message. */
async function queuedBatch(table: Table, id: string, keys: number[]): Promise<CommitMessage> {
  const queued: CommitMessage[] = [];
  await landRows(
    table,
    keys.map((k) => ({ id: BigInt(k), v: id })),
    keys.map(() => 0),
    {
      commitUser: 'ingest',
      commitIdentifier: id,
      sources: keys.map((k) => `sqs:m${k}`),
      enqueue: async (m) => void queued.push(m),
    },
  );
  return queued[0];
}

/** Where each batch and source id landed, over every snapshot of the table. */
async function landedIn(table: Table): Promise<Map<string, number[]>> {
  const where = new Map<string, number[]>();
  const latest = (await table.snapshots.latestId()) ?? 0;
  for (let id = 1; id <= latest; id++) {
    const s = (await table.snapshots.tryRead(id))!;
    for (const p of [BATCHES_PROPERTY, SOURCES_PROPERTY])
      for (const x of s.properties?.[p] ? (JSON.parse(s.properties[p]) as string[]) : [])
        where.set(x, [...(where.get(x) ?? []), id]);
  }
  return where;
}

describe('group commits racing over the same sources land each once (randomized, seed printed)', () => {
  it('2-4 committers at once, warm and cold, each folding an overlapping pick of batches and their twins', async () => {
    const seed = testSeed('group-commit race');
    const r = rng(seed);
    const store = new MemoryStore();
    const writer = await testTable({
      schema: 'id BIGINT, v STRING',
      primaryKeys: ['id'],
      options: { bucket: '1' },
      store,
    });
    let opened = 0;
    /** A container of its own (its own window and snapshot cache). */
    const open = async (): Promise<Table> =>
      new FolderCatalog({ ...processView(store), uri: `${store.uri}#container-${++opened}` }).getTable('db.t');
    const containers = [await open(), await open(), await open(), await open()];
    let key = 0;
    let deliveredBatches = 0;
    let accounted = 0;
    const allBatches: string[] = [];
    for (let round = 0; round < 10; round++) {
      // Prepare: inputs of 1-3 sources, each written as 1-3 batches (twins: same sources, other identifiers)
      const batches: CommitMessage[] = [];
      for (let input = r.int(2, 5); input > 0; input--) {
        const keys = Array.from({ length: r.int(1, 3) }, () => ++key);
        for (let twin = r.int(1, 3); twin > 0; twin--) {
          const id = `b${keys[0]}-${twin}`;
          batches.push(await queuedBatch(writer, id, keys));
          allBatches.push(id);
        }
      }
      // Act: 2-4 committers at once, each with a pick of the round's batches (a batch may go to several)
      const picks = Array.from({ length: r.int(2, 4) }, () => {
        const pick = batches.filter(() => r.chance(0.6));
        return pick.length > 0 ? pick : [batches[r.int(0, batches.length - 1)]];
      });
      for (const b of batches) if (!picks.some((p) => p.includes(b))) picks[r.int(0, picks.length - 1)].push(b);
      for (let c = 0; c < picks.length; c++) if (r.chance(0.3)) containers[c] = await open();
      const outcomes = await Promise.all(
        picks.map(async (pick, c): Promise<RunOutcome> => {
          const queued: QueuedCommit[] = pick.map((message, i) => ({ id: `q${round}-${c}-${i}`, message }));
          return new GroupCommit(containers[c], queued).settle(queued[0].id);
        }),
      );
      for (const [c, o] of outcomes.entries()) {
        deliveredBatches += picks[c].length;
        accounted += o.skipped + (o.committed?.batches.length ?? 0);
        expect([...o.refused.values()].map(String), `seed ${seed}`).toEqual([]);
      }
    }

    // Assess: every source in exactly one snapshot, every batch in at most one, every run's batches
    // either committed by it or skipped
    const where = await landedIn(writer);
    for (let k = 1; k <= key; k++) expect(where.get(`sqs:m${k}`), `seed ${seed}: source m${k}`).toHaveLength(1);
    for (const id of allBatches) expect((where.get(id) ?? []).length, `seed ${seed}: ${id}`).toBeLessThanOrEqual(1);
    expect(accounted, `seed ${seed}`).toBe(deliveredBatches);
  });
});
