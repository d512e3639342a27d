/**
 * The commit paths the Lambdas use (landRowChunks' direct commit, the group commit) run the
 * table's commit hooks as a local writer's commit does: before the commit (a bucket over the stop
 * trigger is compacted first, or a write-only table refuses), after it (inline compaction, the
 * Iceberg export); a failing after-hook never makes the landed commit look failed.
 */
import { describe, expect, it } from 'vitest';
import { WriteStallError } from '../../lib/errors.js';
import { RowKind, type Row, type RowKindByte } from '../../lib/schema/types.js';
import type { CommitMessage } from '../../lib/table/commit-message.js';
import type { CommitHooks, TouchedBucket } from '../../lib/table/commit-hooks.js';
import { GroupCommit } from '../../lib/table/group-commit.js';
import { landRowChunks, type RowChunk } from '../../lib/table/land-rows.js';
import { Table } from '../../lib/table/table.js';
import { testTable } from '../helpers/tables.js';

function newTable(options: Record<string, string> = {}) {
  return testTable({ schema: 'id BIGINT, v STRING', primaryKeys: ['id'], options: { bucket: '2', ...options } });
}

function chunk(ids: number[], v: string): RowChunk {
  const rows: Row[] = ids.map((id) => ({ id: BigInt(id), v }));
  return { rows, kinds: rows.map(() => RowKind.INSERT as RowKindByte) };
}

async function kinds(table: Table): Promise<string[]> {
  const out: string[] = [];
  for (let id = 1; id <= ((await table.snapshots.latestId()) ?? 0); id++)
    out.push((await table.snapshots.read(id)).commitKind);
  return out;
}

/** `table` with hooks that record their calls (and fail where asked). */
function recorded(table: Table, fail: { before?: Error; after?: Error } = {}) {
  const calls: string[] = [];
  const show = (t: readonly TouchedBucket[]) =>
    t
      .map((b) => `b${b.bucket}`)
      .sort()
      .join(',');
  const hooks: CommitHooks = {
    beforeCommit: async (_t, { touched }) => {
      calls.push(`before ${show(touched)}`);
      if (fail.before) throw fail.before;
    },
    afterCommit: async (_t, snapshot, { touched }) => {
      calls.push(`after ${snapshot.id} ${show(touched)}`);
      if (fail.after) throw fail.after;
    },
  };
  return { table: new Table(table.store, table.name, table.path, table.schema, hooks), calls };
}

/** A commit message as the ingest function enqueues it (landRowChunks in queue mode). */
async function message(table: Table, ids: number[], v: string, identifier: string): Promise<CommitMessage> {
  let sent: CommitMessage | undefined;
  await landRowChunks(table, [chunk(ids, v)], {
    commitUser: 'ingest',
    commitIdentifier: identifier,
    enqueue: async (m) => void (sent = m),
  });
  return sent!;
}

describe('the commit hooks on the Lambda commit paths', () => {
  it("a direct landing compacts inline as a local writer does (the catalog's hooks)", async () => {
    // Prepare: compaction due from 2 sorted runs on, one bucket
    const local = await newTable({ bucket: '1', 'num-sorted-run.compaction-trigger': '2' });
    const lambda = await newTable({ bucket: '1', 'num-sorted-run.compaction-trigger': '2' });
    // Act: the same two commits through a writer and through landRowChunks
    for (const v of ['a', 'b']) {
      await local.write([{ id: 1n, v }], { kinds: [RowKind.INSERT] });
      await landRowChunks(lambda, [chunk([1], v)], { commitUser: 'ingest', commitIdentifier: `c-${v}` });
    }
    // Assess: the same snapshots (the second commit compacted after it), the same rows
    expect(await kinds(lambda)).toEqual(await kinds(local));
    expect(await kinds(lambda)).toEqual(['APPEND', 'APPEND', 'COMPACT']);
    expect((await lambda.read()).toArray().map((r) => r.v)).toEqual(['b']);
  });

  it('the group commit runs the hooks around its one snapshot, with every bucket it writes', async () => {
    // Prepare
    const base = await newTable();
    const { table, calls } = recorded(base);
    const queued = [
      {
        id: 'm1',
        message: await message(
          base,
          Array.from({ length: 20 }, (_, i) => i + 1),
          'x',
          'i1',
        ),
      },
      { id: 'm2', message: await message(base, [21], 'y', 'i2') },
    ];
    // Act
    const outcome = await new GroupCommit(table, queued).settle('m1');
    // Assess
    expect(outcome.committed?.snapshot.id).toBe(1);
    expect(calls).toEqual(['before b0,b1', 'after 1 b0,b1']);
  });

  it('a failing after-hook is reported and the commit stands; a refusing before-hook commits nothing', async () => {
    // Prepare
    const base = await newTable();
    const after = recorded(base, { after: new Error('export failed') });
    // Act
    const landed = await new GroupCommit(after.table, [
      { id: 'm1', message: await message(base, [1], 'x', 'i1') },
    ]).settle('m1');
    // Assess
    expect(landed.committed?.hookError?.message).toBe('export failed');
    expect(await base.snapshots.latestId()).toBe(1);

    // Prepare: a write-only table over its stop trigger refuses
    const stall = recorded(base, { before: new WriteStallError('bucket 0 has 9 sorted runs') });
    // Act / Assess
    await expect(
      landRowChunks(stall.table, [chunk([2], 'y')], { commitUser: 'ingest', commitIdentifier: 'c2' }),
    ).rejects.toBeInstanceOf(WriteStallError);
    expect(await base.snapshots.latestId()).toBe(1);
    expect(stall.calls).toHaveLength(1);
  });
});
