/**
 * Commits that merge manifests take their own entries into the merged manifest (manifest/merge.ts
 * encodeMergeWithDelta). Randomized, seeded: several committers at once (each a table instance of
 * its own, warm), upserts, deletes, partition overwrites and compactions (which remove entries),
 * a merge every few commits; then every snapshot read back equals the model at that snapshot,
 * and each snapshot's delta holds only its own commit's files.
 */
import { describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { CommitConflictError } from '../../lib/errors.js';
import { tableToRows } from '../../lib/format/columns.js';
import { readDeltaEntries, readSnapshotLists } from '../../lib/manifest/scan.js';
import { compactTable } from '../../lib/maintenance/compact.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { RowKind, type Row } from '../../lib/schema/types.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import type { Table } from '../../lib/table/table.js';
import { processView } from '../helpers/process-view.js';
import { rng, testSeed, type Rng } from '../helpers/random.js';
import { allSnapshots } from './table-checks.js';

type State = Map<string, bigint>;
/** What a committed operation did to the rows, applied in snapshot order. */
type Effect = (state: State) => void;

const REGIONS = ['eu', 'us', 'ap'];

function upsertBatch(r: Rng): Array<{ row: Row; kind: number }> {
  const out: Array<{ row: Row; kind: number }> = [];
  for (let i = r.int(1, 12); i > 0; i--) {
    const del = r.chance(0.25);
    out.push({
      row: { id: r.int(1, 30), region: r.pick(REGIONS), v: del ? null : BigInt(r.int(0, 999)) },
      kind: del ? RowKind.DELETE : RowKind.INSERT,
    });
  }
  return out;
}

async function readState(table: Table, snapshotId: number): Promise<State> {
  const state: State = new Map();
  for (const row of tableToRows(await table.read({ snapshotId }), table.schema.fields))
    state.set(`${row.region}|${row.id}`, row.v as bigint);
  return state;
}

function sorted(state: State): Array<[string, bigint]> {
  return [...state.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/** Records what snapshot `id` did; one operation per snapshot (no committer shares another's). */
function record(effects: Map<number, Effect>, id: number, effect: Effect): void {
  if (effects.has(id)) throw new Error(`two operations report snapshot ${id}`);
  effects.set(id, effect);
}

/** One committer's run: `ops` random operations, each recorded with the snapshot it made. */
async function committer(table: Table, r: Rng, ops: number, effects: Map<number, Effect>): Promise<void> {
  for (let k = 0; k < ops; k++) {
    const roll = r.next();
    if (roll < 0.12) {
      // Compaction removes entries (DELETE of its inputs) and changes no row; a conflict with a
      // concurrent overwrite of the same files is a real conflict, and commits nothing.
      const done = await compactTable(table, { full: r.chance(0.5) }).catch((e: unknown) => {
        if (e instanceof CommitConflictError) return undefined;
        throw e;
      });
      for (const id of done?.snapshots ?? []) record(effects, id, () => undefined);
      continue;
    }
    if (roll < 0.25) {
      // A partition overwrite: the region's rows become exactly these (its old files are DELETEd).
      const region = r.pick(REGIONS);
      const rows = Array.from({ length: r.int(1, 6) }, () => ({ id: r.int(1, 30), region, v: BigInt(r.int(0, 999)) }));
      const result = await table.overwrite(rows);
      record(effects, result.snapshot!.id, (state) => {
        for (const key of [...state.keys()]) if (key.startsWith(`${region}|`)) state.delete(key);
        for (const row of rows) state.set(`${region}|${row.id}`, row.v);
      });
      continue;
    }
    const batch = upsertBatch(r);
    const result = await table.write(
      batch.map((b) => b.row),
      { kinds: batch.map((b) => b.kind as 0) },
    );
    record(effects, result.snapshot!.id, (state) => {
      for (const b of batch) {
        const key = `${b.row.region}|${b.row.id}`;
        if (b.kind === RowKind.DELETE) state.delete(key);
        else state.set(key, b.row.v as bigint);
      }
    });
  }
}

describe('commits that merge manifests, randomized with concurrent committers', () => {
  it('every snapshot equals the model, each delta holds only its own files, merges write no extra manifest', async () => {
    // Prepare
    const seed = testSeed('commit-merge-fold');
    const r = rng(seed);
    const store = new MemoryStore();
    const mergeMinCount = r.int(2, 5);
    await new FolderCatalog(store).createTable('db.t', {
      fields: parseSchemaText('id INT NOT NULL, region STRING NOT NULL, v BIGINT'),
      primaryKeys: ['region', 'id'],
      partitionKeys: ['region'],
      options: {
        bucket: '2',
        'write-only': 'true',
        'num-sorted-run.stop-trigger': '1000',
        'manifest.merge-min-count': String(mergeMinCount),
      },
    });
    // Each committer sees the store through an object of its own, as a separate process would:
    // writers sharing a store object share its group committer (table/shared-committer.ts) and
    // would never race each other for a snapshot id.
    const committers = await Promise.all([0, 1, 2].map(() => new FolderCatalog(processView(store)).getTable('db.t')));
    const effects = new Map<number, Effect>();

    // Act: three committers at once, each on its own random stream.
    await Promise.all(committers.map((t, i) => committer(t, rng(seed + i + 1), 14, effects)));

    // Assess
    const label = `seed ${seed}, merge-min-count ${mergeMinCount}`;
    const snapshots = await allSnapshots(store, committers[0].path);
    expect(
      snapshots.map((s) => s.id),
      label,
    ).toEqual([...effects.keys()].sort((a, b) => a - b));
    const model: State = new Map();
    let folded = 0;
    for (const s of snapshots) {
      effects.get(s.id)!(model);
      expect(sorted(await readState(committers[0], s.id)), `snapshot ${s.id} (${s.commitKind}), ${label}`).toEqual(
        sorted(model),
      );
      const { delta } = await readSnapshotLists(store, committers[0].path, s);
      if (delta.some((m) => m.slice !== undefined)) folded++;
      if (s.commitKind === 'COMPACT') continue;
      // An APPEND's or OVERWRITE's new files are numbered from its parent's nextSequenceNumber:
      // a delta that also held base entries (the merged part of its manifest) would show older ones.
      const parentNext = s.id === 1 ? 0 : snapshots.find((p) => p.id === s.id - 1)!.nextSequenceNumber;
      for (const e of await readDeltaEntries(store, committers[0].path, s)) {
        if (e.kind === 'ADD')
          expect(
            e.file.minSequenceNumber,
            `snapshot ${s.id} delta file ${e.file.fileName}, ${label}`,
          ).toBeGreaterThanOrEqual(parentNext);
      }
    }
    console.log(
      `${label}: ${snapshots.length} snapshots, ${folded} of them merged manifests with their delta folded in`,
    );
    expect(folded, label).toBeGreaterThan(0);
  }, 120_000);
});
