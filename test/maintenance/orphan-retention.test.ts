/**
 * Orphan cleanup racing an ALTER of `orphan-files.pending-time-retained` (remove-orphans.ts
 * pendingTimeRetained): an ALTER creates its schema file, then its snapshot, and a cleanup may run
 * between the two, or with a table object opened before the ALTER. A pending registration is kept
 * while the cleanup's own schema, the newest schema or the schema the latest snapshot names still
 * retains it; only once it is older than all of them are it and its files deleted. Randomized
 * (seed printed): old and new values, which side of the ALTER's commit point, whose view, the
 * registration's age, journal or full cleanup.
 */
import { describe, expect, it } from 'vitest';
import { removeOrphanFiles } from '../../lib/maintenance/remove-orphans.js';
import { applySchemaChanges } from '../../lib/schema/schema-evolution.js';
import { createSchemaFile } from '../../lib/schema/schema-manager.js';
import { RowKind } from '../../lib/schema/types.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { landRows } from '../../lib/table/land-rows.js';
import { listPending, pendingKey } from '../../lib/table/pending-commits.js';
import type { Table } from '../../lib/table/table.js';
import { rng, testSeed } from '../helpers/random.js';
import { newTable } from './expiry-fixtures.js';

const DAY = 86_400_000;
const ROUNDS = process.env.VARVE_STRESS === '1' ? 60 : 16;
const KEY = 'orphan-files.pending-time-retained';

/** A batch written and "sent" to a commit queue that never delivers: registered under pending/, in no snapshot. */
async function queuedBatch(table: Table, id: string): Promise<string[]> {
  await landRows(table, [{ id: 50, v: id }], [RowKind.INSERT], {
    commitUser: 'writer',
    commitIdentifier: id,
    enqueue: async () => {},
  });
  return (await listPending(table)).find((p) => p.batch?.commitIdentifier === id)!.batch!.files;
}

describe('orphan cleanup of pending registrations during an ALTER of their retention', () => {
  it('keeps a registration while its view, the newest schema or the latest snapshot retains it', async () => {
    const seed = testSeed('orphan-retention');
    const r = rng(seed);
    for (let round = 0; round < ROUNDS; round++) {
      // Prepare: a table with a snapshot and a queued batch, then an ALTER of the retention
      // either only written (its schema file, not its snapshot) or committed.
      const [before, after] = [r.int(1, 20), r.int(1, 20)];
      const store = new MemoryStore();
      const table = await newTable({ [KEY]: `${before} d` }, store);
      await table.write([{ id: 1, v: 'a' }] as never);
      const files = await queuedBatch(table, 'queued');
      const change = [{ kind: 'set-option' as const, key: KEY, value: `${after} d` }];
      const committed = r.chance(0.5);
      if (committed) await table.alter(change);
      else await createSchemaFile(store, table.path, applySchemaChanges(table.schema, change, Date.now()));
      const view = r.chance(0.5) ? table : await table.latest();
      const now = Date.now() + 1000;
      const ageDays = r.int(0, 24) + 0.5;
      store.setLastModified(pendingKey(table, 'queued'), now - ageDays * DAY);
      const mode = r.pick(['journal', 'full'] as const);

      // Act
      await removeOrphanFiles(view, { mode, now, olderThanMs: 0 });

      // Assess: kept exactly while younger than the longest retention any of them names: the
      // view's, the newest schema's (the ALTER's) and the latest snapshot's (the ALTER's once committed).
      const viewDays = view.schema.id === 0 ? before : after;
      const kept = ageDays < Math.max(viewDays, after, committed ? after : before);
      const where =
        `seed ${seed}, round ${round}: ${before} d → ${after} d (${committed ? 'committed' : 'schema file only'}), ` +
        `view at schema ${view.schema.id}, registration ${ageDays} d old, ${mode} cleanup`;
      expect((await store.head(pendingKey(table, 'queued'))) !== undefined, where).toBe(kept);
      for (const f of files) expect((await store.head(f)) !== undefined, `${where}: ${f}`).toBe(kept);
    }
  });
});
