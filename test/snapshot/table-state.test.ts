import { describe, expect, it } from 'vitest';
import { SnapshotNotFoundError } from '../../lib/errors.js';
import { commit } from '../../lib/snapshot/commit.js';
import { readTableState } from '../../lib/snapshot/table-state.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { appendRequest, change, testCommitOptions } from '../manifest/factories.js';

const T = 'db.db/state';

describe('readTableState', () => {
  it('returns the live files of the latest or a given snapshot, and nothing for an empty table', async () => {
    // Prepare
    const store = new MemoryStore();
    expect(await readTableState(store, T)).toBeUndefined();
    await commit(store, T, appendRequest('u', 'c1', [change('a')]), testCommitOptions());
    await commit(store, T, appendRequest('u', 'c2', [change('b', {}, { partition: 'p=1' })]), testCommitOptions());
    // Act
    const latest = await readTableState(store, T);
    const first = await readTableState(store, T, 1);
    const filtered = await readTableState(store, T, undefined, { partition: (p) => p === 'p=1' });
    // Assess
    expect(latest?.snapshot.id).toBe(2);
    expect(latest?.files.map((e) => e.file.fileName).sort()).toEqual(['a', 'b']);
    expect(first?.files.map((e) => e.file.fileName)).toEqual(['a']);
    expect(filtered?.files.map((e) => e.file.fileName)).toEqual(['b']);
    await expect(readTableState(store, T, 9)).rejects.toThrow(SnapshotNotFoundError);
  });
});
