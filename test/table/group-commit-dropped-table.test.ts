/**
 * Commit messages queued for a table that was then dropped and created again at the same location
 * (same name) are refused by the group commit of the new table, loudly (the error names the batch
 * and its files), never committed into it: their files went with the dropped table. The new
 * table's own messages, in the same runs, commit as usual.
 */
import { describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { TableNotFoundError } from '../../lib/errors.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { encodeCommitMessage, parseCommitMessage, type CommitMessage } from '../../lib/table/commit-message.js';
import { GroupCommit, type QueuedCommit } from '../../lib/table/group-commit.js';
import { landRows } from '../../lib/table/land-rows.js';
import { BATCHES_PROPERTY } from '../../lib/table/recent-batches.js';
import type { Table } from '../../lib/table/table.js';
import { processView } from '../helpers/process-view.js';
import { rng, testSeed } from '../helpers/random.js';
import { readRows } from '../helpers/tables.js';

/** A writer's batch of rows `keys`, as the commit queue carries it (encoded and parsed back). */
async function queuedBatch(table: Table, id: string, keys: number[]): Promise<CommitMessage> {
  const queued: CommitMessage[] = [];
  await landRows(
    table,
    keys.map((k) => ({ id: BigInt(k), v: id })),
    keys.map(() => 0),
    {
      commitUser: 'ingest',
      commitIdentifier: id,
      sources: keys.map((k) => `sqs:${id}-${k}`),
      enqueue: async (m) => void queued.push(parseCommitMessage(encodeCommitMessage(m))),
    },
  );
  return queued[0];
}

describe('a table dropped and created again while its commit messages wait (randomized, seed printed)', () => {
  it("refuses the dropped table's batches, naming batch and files, and commits the new table's", async () => {
    const seed = testSeed('group-commit dropped table');
    const r = rng(seed);
    const store = new MemoryStore();
    const catalog = new FolderCatalog(store);
    const create = () =>
      catalog.createTable('db.t', {
        fields: parseSchemaText('id BIGINT, v STRING'),
        primaryKeys: ['id'],
        options: { bucket: String(r.int(1, 3)) },
      });
    // Prepare: 1-2 generations dropped, each with batches still queued (some committed before the drop)
    let key = 0;
    const stale: QueuedCommit[] = [];
    for (let generation = r.int(1, 2); generation > 0; generation--) {
      const table = await create();
      for (let b = r.int(1, 5); b > 0; b--) {
        const keys = Array.from({ length: r.int(1, 4) }, () => ++key);
        const q = { id: `old-${key}`, message: await queuedBatch(table, `old-${key}`, keys) };
        if (r.chance(0.3)) await new GroupCommit(table, [q]).settle(q.id);
        else stale.push(q);
      }
      await catalog.dropTable('db.t');
    }
    const table = await create();
    const current: QueuedCommit[] = [];
    const newKeys: number[] = [];
    for (let b = r.int(1, 5); b > 0; b--) {
      const keys = Array.from({ length: r.int(1, 4) }, () => ++key);
      newKeys.push(...keys);
      current.push({ id: `new-${key}`, message: await queuedBatch(table, `new-${key}`, keys) });
    }

    // Act: a commit function that opened the new table gets them mixed, in 1-3 invocations
    const committer = await new FolderCatalog({ ...processView(store), uri: `${store.uri}#committer` }).getTable(
      'db.t',
    );
    const all = [...stale, ...current].sort(() => r.next() - 0.5);
    const refused = new Map<string, Error>();
    for (let start = 0; start < all.length; ) {
      const invocation = all.slice(start, (start += r.int(1, 4)));
      const group = new GroupCommit(committer, invocation);
      for (const q of invocation) {
        const outcome = await group.settle(q.id);
        const e = outcome.refused.get(q.id);
        if (e) refused.set(q.id, e);
      }
    }

    // Assess: each stale batch refused with its name and files, the new ones committed, nothing else
    for (const q of stale) {
      const e = refused.get(q.id);
      expect(e, `seed ${seed}: ${q.id}`).toBeInstanceOf(TableNotFoundError);
      expect(e!.message).toContain(`batch ${q.id}`);
      expect(e!.message).toContain(q.message.batch.newFiles[0].file.fileName);
    }
    for (const q of current) expect(refused.get(q.id), `seed ${seed}: ${q.id}`).toBeUndefined();
    const landed: string[] = [];
    for (let id = 1; id <= ((await table.snapshots.latestId()) ?? 0); id++) {
      const s = (await table.snapshots.tryRead(id))!;
      landed.push(
        ...(s.properties?.[BATCHES_PROPERTY] ? (JSON.parse(s.properties[BATCHES_PROPERTY]) as string[]) : []),
      );
    }
    expect(landed.sort(), `seed ${seed}`).toEqual(current.map((q) => q.id).sort());
    const rows = await readRows(await catalog.getTable('db.t'));
    expect(
      rows.map((row) => Number(row.id)).sort((a, b) => a - b),
      `seed ${seed}`,
    ).toEqual(newKeys);
  });
});
