/**
 * The lookup and full-compaction changelog producers on a table: the changelog files of every
 * snapshot, replayed from the first (+I/+U upsert, -U/-D delete), reproduce the table's state;
 * row-deduplicate suppresses no-op updates.
 */
import { describe, expect, it } from 'vitest';
import { WriteStallError } from '../../lib/errors.js';
import { compactTable } from '../../lib/maintenance/compact.js';
import { readChangelogFiles } from '../../lib/manifest/scan.js';
import { RowKind } from '../../lib/schema/types.js';
import { rng, testSeed, type Rng } from '../helpers/random.js';
import { ChangelogReplay, newTable, readState, sorted, writeChanges, type Change } from './fixtures.js';

const ENGINES: Record<string, Record<string, string>> = {
  deduplicate: {},
  aggregation: {
    'merge-engine': 'aggregation',
    'fields.v.aggregate-function': 'sum',
    'aggregation.remove-record-on-delete': 'true',
  },
};

/** Commits per sequence: sized for the default suite on a busy machine; changelog.stress.ts runs the full 25 (20). */
const STRESS = process.env.VARVE_STRESS === '1';
const COMMITS = STRESS ? 25 : 12;
const WRITE_ONLY_COMMITS = STRESS ? 20 : 12;

function genBatch(r: Rng): Change[] {
  const out: Change[] = [];
  const seen = new Set<string>();
  for (let i = r.int(1, 20); i > 0; i--) {
    const id = r.int(1, 40);
    const region = r.pick(['eu', 'us']);
    // One change per key per batch keeps the expected changelog a plain function of the batches.
    if (seen.has(`${region}|${id}`)) continue;
    seen.add(`${region}|${id}`);
    const del = r.chance(0.2);
    out.push({
      row: { id, region, v: del ? null : BigInt(r.int(0, 3)), s: del ? null : `s${r.int(0, 2)}` },
      kind: del ? RowKind.DELETE : RowKind.INSERT,
    });
  }
  return out;
}

/** Writes, compacting first when a write-only table stalls. */
async function write(table: Awaited<ReturnType<typeof newTable>>, batch: Change[]): Promise<void> {
  try {
    await writeChanges(table, batch);
  } catch (e) {
    if (!(e instanceof WriteStallError)) throw e;
    await compactTable(table);
    await writeChanges(table, batch);
  }
}

describe('lookup changelog producer', () => {
  for (const [engine, options] of Object.entries(ENGINES)) {
    it(`${engine}: the changelog follows every write at once and replays to the table`, async () => {
      const seed = testSeed(`changelog/lookup/${engine}`);
      const r = rng(seed);
      const table = await newTable({
        bucket: '2',
        'changelog-producer': 'lookup',
        'num-sorted-run.compaction-trigger': '3',
        'target-file-size': '3 kb',
        'compaction.memory-budget': '1 b',
        ...options,
      });
      const replay = new ChangelogReplay(table);
      for (let c = 0; c < COMMITS; c++) {
        await write(table, genBatch(r));
        // Every level-0 file was taken up right after the commit, with its changelog.
        expect(sorted(await replay.advance()), `seed ${seed}, commit ${c}`).toEqual(sorted(await readState(table)));
        if (r.chance(0.2)) await compactTable(table, { full: true });
      }
    });
  }

  it('write-only: the compaction job produces the changelog, level 0 first', async () => {
    const seed = testSeed('changelog/lookup/write-only');
    const r = rng(seed);
    const table = await newTable({ bucket: '2', 'changelog-producer': 'lookup', 'write-only': 'true' });
    const replay = new ChangelogReplay(table);
    for (let c = 0; c < WRITE_ONLY_COMMITS; c++) {
      await write(table, genBatch(r));
      if (r.chance(0.4)) {
        await compactTable(table, { full: r.chance(0.3) });
        expect(sorted(await replay.advance()), `seed ${seed}, commit ${c}`).toEqual(sorted(await readState(table)));
      }
    }
  });
});

describe('full-compaction changelog producer', () => {
  for (const [engine, options] of Object.entries(ENGINES)) {
    it(`${engine}: the changelog of full compactions replays to the table after the last one`, async () => {
      const seed = testSeed(`changelog/full-compaction/${engine}`);
      const r = rng(seed);
      const deltaCommits = r.int(1, 4);
      const table = await newTable({
        bucket: '2',
        'changelog-producer': 'full-compaction',
        'full-compaction.delta-commits': String(deltaCommits),
        ...options,
      });
      const replay = new ChangelogReplay(table);
      for (let c = 0; c < COMMITS; c++) {
        await write(table, genBatch(r));
        // Every delta-commits-th APPEND commit is followed by a full compaction of the table.
        if ((c + 1) % deltaCommits === 0) {
          expect(sorted(await replay.advance()), `seed ${seed}, commit ${c}`).toEqual(sorted(await readState(table)));
        }
      }
      await compactTable(table, { full: true });
      expect(sorted(await replay.advance()), `seed ${seed}, final`).toEqual(sorted(await readState(table)));
    });
  }
});

describe('changelog-producer.row-deduplicate', () => {
  async function changelogOfRewrite(producer: string, rowDeduplicate: boolean): Promise<number> {
    const table = await newTable({
      'changelog-producer': producer,
      'changelog-producer.row-deduplicate': String(rowDeduplicate),
      'full-compaction.delta-commits': '1',
    });
    const rows: Change[] = [1, 2, 3].map((id) => ({
      row: { id, region: 'eu', v: 7n, s: 'same' },
      kind: RowKind.INSERT,
    }));
    await writeChanges(table, rows);
    const before = (await table.snapshots.latestId())!;
    await writeChanges(table, rows);
    let logged = 0;
    for (let id = before + 1; id <= (await table.snapshots.latestId())!; id++) {
      for (const e of await readChangelogFiles(table.store, table.path, await table.snapshots.read(id)))
        logged += e.file.rowCount;
    }
    return logged;
  }

  for (const producer of ['lookup', 'full-compaction']) {
    it(`${producer}: writing the same values again logs -U/+U pairs, or nothing with row-deduplicate`, async () => {
      expect(await changelogOfRewrite(producer, false)).toBe(6);
      expect(await changelogOfRewrite(producer, true)).toBe(0);
    });
  }
});
