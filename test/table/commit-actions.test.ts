/**
 * Every commit path goes through the one commit loop (issue 28): for each action the loop knows
 * (COMMIT_ACTION_NAMES, the registry — not a list kept here), a table operation that commits it
 * runs the table's before- and after-commit hooks around its snapshot. The scenarios are a Record
 * over the registry's names, so a new action without a scenario does not compile.
 */
import { describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { compactTable } from '../../lib/maintenance/compact.js';
import { rollbackTo } from '../../lib/maintenance/rollback.js';
import { createTag } from '../../lib/snapshot/tags.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { COMMIT_ACTION_NAMES, requestAction, type CommitActionName } from '../../lib/snapshot/commit.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import type { CommitHooks } from '../../lib/table/commit-hooks.js';
import { Table } from '../../lib/table/table.js';
import { commitToTable } from '../../lib/table/table-commit.js';

/** A table (keyed, or an append table) whose hooks record every call as `before|after <action> <kind>`. */
async function recordedTable(opts: { primaryKey: boolean }): Promise<{ table: Table; calls: string[] }> {
  const catalog = new FolderCatalog(new MemoryStore());
  const created = await catalog.createTable('db.t', {
    fields: parseSchemaText('id BIGINT, dt STRING, v STRING'),
    primaryKeys: opts.primaryKey ? ['id', 'dt'] : [],
    partitionKeys: ['dt'],
    options: { bucket: '2', ...(opts.primaryKey ? {} : { 'bucket-key': 'id' }) },
  });
  const calls: string[] = [];
  const hooks: CommitHooks = {
    beforeCommit: async (_t, c) => void calls.push(`before ${c.action} ${c.kind}`),
    afterCommit: async (_t, s, c) => void calls.push(`after ${c.action} ${c.kind} ${s.id}`),
  };
  const table = new Table(created.store, created.name, created.path, created.schema, hooks);
  // Two partitions of rows to work on, committed before the hooks are looked at.
  await table.write([
    { id: 1n, dt: 'a', v: 'x' },
    { id: 2n, dt: 'b', v: 'y' },
  ]);
  await table.write([{ id: 3n, dt: 'a', v: 'z' }]);
  calls.length = 0;
  return { table, calls };
}

/** Per action: the table operations that commit it, each run on a fresh table. */
const SCENARIOS: Record<
  CommitActionName,
  Array<{ what: string; primaryKey: boolean; run: (t: Table) => Promise<unknown> }>
> = {
  append: [{ what: 'write', primaryKey: true, run: (t) => t.write([{ id: 9n, dt: 'a', v: 'w' }]) }],
  overwrite: [
    { what: 'write --overwrite', primaryKey: true, run: (t) => t.overwrite([{ id: 9n, dt: 'a', v: 'w' }]) },
    { what: 'truncate', primaryKey: true, run: (t) => t.truncate() },
    { what: 'drop-partition', primaryKey: true, run: (t) => t.dropPartition({ dt: 'a' }) },
  ],
  rewrite: [
    { what: 'delete --where on an append table', primaryKey: false, run: (t) => t.deleteWhere('id = 1') },
    { what: 'rescale', primaryKey: true, run: (t) => t.rescale({ buckets: 3, force: true }) },
  ],
  compact: [{ what: 'compact --full', primaryKey: true, run: (t) => compactTable(t, { full: true }) }],
  alter: [
    {
      what: 'alter',
      primaryKey: true,
      run: (t) => t.alter([{ kind: 'set-option', key: 'snapshot.num-retained.min', value: '5' }]),
    },
  ],
  request: [
    {
      what: 'a ready-made request',
      primaryKey: true,
      run: (t) =>
        commitToTable(
          t,
          requestAction({
            commitUser: 'u',
            commitIdentifier: 'empty',
            kind: 'APPEND',
            schemaId: t.schema.id,
            batches: [],
            allowEmpty: true,
          }),
        ),
    },
  ],
  rollback: [
    { what: 'rollback --to-snapshot', primaryKey: true, run: (t) => rollbackTo(t, { snapshotId: 1 }) },
    {
      what: 'rollback --to-tag',
      primaryKey: true,
      run: async (t) => {
        await createTag(t.store, t.path, 'first', 1);
        return rollbackTo(t, { tag: 'first' });
      },
    },
  ],
};

describe('every commit action runs the hooks through the one loop', () => {
  it('the scenarios cover the registry', () => {
    expect(Object.keys(SCENARIOS).sort()).toEqual([...COMMIT_ACTION_NAMES].sort());
  });

  for (const action of COMMIT_ACTION_NAMES) {
    for (const s of SCENARIOS[action]) {
      it(`${action}: ${s.what}`, async () => {
        // Prepare
        const { table, calls } = await recordedTable({ primaryKey: s.primaryKey });
        const before = (await table.snapshots.latestId())!;
        // Act
        await s.run(table);
        // Assess: the action's own commit, hooks before and after it, and its snapshot is the one reported.
        const latest = (await table.snapshots.latestId())!;
        const own = calls.filter((c) => c.split(' ')[1] === action);
        expect(own).toHaveLength(2);
        expect(own[0]).toMatch(new RegExp(`^before ${action} `));
        expect(own[1]).toMatch(new RegExp(`^after ${action} \\S+ \\d+$`));
        const committedAt = Number(own[1].split(' ')[3]);
        expect(committedAt).toBeGreaterThan(before);
        expect(committedAt).toBeLessThanOrEqual(latest);
        // Every snapshot made during the operation was announced to the after-hook.
        expect(calls.filter((c) => c.startsWith('after')).length).toBe(latest - before);
      });
    }
  }
});
