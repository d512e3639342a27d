/**
 * Factories and checks for compaction tests: a partitioned, bucketed table on a MemoryStore, the
 * table read back as a model-comparable map, LSM invariants per bucket, and the changelog
 * replayed from the first snapshot.
 */
import { expect } from 'vitest';
import { tableToRows } from '../../lib/format/columns.js';
import { readChangelogFiles, readLiveFiles } from '../../lib/manifest/scan.js';
import type { ManifestEntry } from '../../lib/manifest/types.js';
import { Levels } from '../../lib/mergetree/levels.js';
import { KIND_COLUMN, RowKind, type Row } from '../../lib/schema/types.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import type { ObjectStore } from '../../lib/store/object-store.js';
import { readEntry } from '../../lib/table/read.js';
import type { Table } from '../../lib/table/table.js';
import { testTable } from '../helpers/tables.js';

export type Value = { v: bigint | null; s: string | null };
export type State = Map<string, Value>;

/** A table `db.t (id INT, region STRING, v BIGINT, s STRING)`, key (region, id), partitioned by region. */
export async function newTable(
  options: Record<string, string>,
  store: ObjectStore = new MemoryStore(),
): Promise<Table> {
  return testTable({
    schema: 'id INT NOT NULL, region STRING NOT NULL, v BIGINT, s STRING',
    primaryKeys: ['region', 'id'],
    partitionKeys: ['region'],
    options,
    store,
  });
}

function keyOf(row: Row): string {
  return `${row.region}|${row.id}`;
}

/** The table's merged rows at a snapshot (latest by default), by key. */
export async function readState(table: Table, snapshotId?: number): Promise<State> {
  const state: State = new Map();
  for (const row of tableToRows(await table.read({ snapshotId }), table.schema.fields)) {
    state.set(keyOf(row), { v: row.v as bigint | null, s: row.s as string | null });
  }
  return state;
}

/** A state's entries in key order, for comparison. */
export function sorted(state: State): Array<[string, Value]> {
  return [...state.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/** The latest snapshot's live files, grouped per (partition, bucket). */
export async function liveFilesByBucket(table: Table): Promise<Map<string, ManifestEntry[]>> {
  const latest = await table.snapshots.latest();
  const out = new Map<string, ManifestEntry[]>();
  if (!latest) return out;
  for (const e of await readLiveFiles(table.store, table.path, latest)) {
    const id = `${e.partition}#${e.bucket}`;
    const list = out.get(id);
    if (list) list.push(e);
    else out.set(id, [e]);
  }
  return out;
}

/**
 * Asserts the LSM invariants of every bucket: levels ≥ 1 are each one sorted run (no overlap),
 * level 0 holds only writers' files, and no file of the max level holds a retraction.
 */
export async function checkLevels(table: Table, context: string): Promise<void> {
  for (const [bucket, entries] of await liveFilesByBucket(table)) {
    // Levels checks the overlap itself (CorruptMetadataError) when given the key order.
    const levels = new Levels(
      entries.map((e) => e.file),
      table.options.numLevels,
      table.compareKeys,
    );
    // Compaction never writes level 0: every level-0 file is a writer's flush.
    for (const f of levels.level0)
      expect(f.fileSource, `${context}: ${bucket} level-0 file ${f.fileName}`).toBe('APPEND');
    for (const f of levels.runOfLevel(levels.maxLevel)) {
      expect(f.deleteRowCount, `${context}: ${bucket} max-level file ${f.fileName} holds deletes`).toBe(0);
    }
  }
}

/**
 * Applies the changelog files of snapshots in order (+I/+U upsert, -U/-D delete), from the first
 * snapshot on; `advance` catches up with the latest snapshot and returns the replayed state.
 */
export class ChangelogReplay {
  readonly state: State = new Map();
  private next = 1;

  constructor(private readonly table: Table) {}

  async advance(): Promise<State> {
    const { table } = this;
    const latest = (await table.snapshots.latestId()) ?? 0;
    for (; this.next <= latest; this.next++) {
      const snapshot = await table.snapshots.read(this.next);
      for (const entry of await readChangelogFiles(table.store, table.path, snapshot)) {
        const t = await readEntry(table, entry);
        const kinds = t.getChild(KIND_COLUMN)!.toArray() as Int8Array;
        tableToRows(t, table.schema.fields).forEach((row, i) => {
          if (kinds[i] === RowKind.INSERT || kinds[i] === RowKind.UPDATE_AFTER)
            this.state.set(keyOf(row), { v: row.v as bigint | null, s: row.s as string | null });
          else this.state.delete(keyOf(row));
        });
      }
    }
    return this.state;
  }
}

/** Rows with their kinds for `table.write`. */
export interface Change {
  row: Row;
  kind: number;
}

/** Writes changes as one commit. */
export async function writeChanges(table: Table, changes: Change[]) {
  return table.write(
    changes.map((c) => c.row),
    { kinds: changes.map((c) => c.kind as 0) },
  );
}
