/**
 * Fault injection during compaction: the store crashes at each of a compaction's storage calls
 * in turn (before the call takes effect, and after). Whatever the crash point, a reader never
 * meets a missing file and sees the same rows, and a re-run of the job finishes it.
 */
import { describe, expect, it } from 'vitest';
import { compactBucket, compactTable } from '../../lib/maintenance/compact.js';
import { RowKind } from '../../lib/schema/types.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import type { Table } from '../../lib/table/table.js';
import { ChangelogReplay, checkLevels, liveFilesByBucket, newTable, readState, sorted, writeChanges, type Change } from './fixtures.js';

/** A write-only table with six overlapping level-0 files (deletes included) in one bucket. */
async function prepared(): Promise<{ store: MemoryStore; table: Table }> {
  const store = new MemoryStore();
  const table = await newTable({ 'write-only': 'true', 'changelog-producer': 'lookup', 'target-file-size': '2 kb' }, store);
  for (let i = 0; i < 6; i++) {
    const changes: Change[] = [];
    for (let id = 1; id <= 20; id++) {
      if ((id + i) % 5 === 0) changes.push({ row: { id, region: 'eu', v: null, s: null }, kind: RowKind.DELETE });
      else changes.push({ row: { id, region: 'eu', v: BigInt(id * 10 + i), s: `r${i}` }, kind: RowKind.INSERT });
    }
    await writeChanges(table, changes);
  }
  return { store, table };
}

describe('a crash at any storage call of a compaction', () => {
  it('never shows a reader a missing file, and a re-run finishes the job', async () => {
    // Prepare: count the calls of one clean compaction.
    const clean = await prepared();
    const expected = sorted(await readState(clean.table));
    clean.store.resetCallLog();
    await compactBucket(clean.table, 'region=eu', 0, { full: true });
    const calls = clean.store.callLog.length;
    expect(calls).toBeGreaterThan(10);
    console.log(`[compact-faults] a clean full compaction makes ${calls} storage calls`);

    for (const when of ['before', 'after'] as const) {
      for (let nth = 1; nth <= calls; nth++) {
        const { store, table } = await prepared();
        const context = `crash ${when} call ${nth} of ${calls}`;
        store.crashAt({ nth, when });

        // Act: the job dies at call nth (or, crashing after the last call, just after finishing).
        await compactBucket(table, 'region=eu', 0, { full: true }).catch(() => undefined);
        store.restart();

        // Assess: every snapshot that exists reads in full, to the same rows.
        expect(sorted(await readState(table)), context).toEqual(expected);
        await checkLevels(table, context);
        // A re-run finishes the job: one max-level run, same rows, and a changelog that replays to them.
        await compactTable(table, { full: true });
        const files = (await liveFilesByBucket(table)).get('region=eu#0')!;
        expect(new Set(files.map((e) => e.file.level)), context).toEqual(new Set([table.options.numLevels - 1]));
        expect(sorted(await readState(table)), context).toEqual(expected);
        expect(sorted(await new ChangelogReplay(table).advance()), context).toEqual(expected);
      }
    }
  });
});
