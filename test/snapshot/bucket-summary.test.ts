/**
 * What a snapshot carries per bucket (lib/snapshot/bucket-summary.ts) against a scan of its
 * manifests: after random sequences of commits of every kind — writes from two table objects at
 * once (lost races), inline and explicit compactions (universal and full), overwrites, truncates,
 * dropped partitions, rollbacks, rescales, deletes — every snapshot's summary equals the one its
 * live files give, and the back-pressure and compaction-job answers from it (summary-runs.ts)
 * equal those from the files. Then the cases where no summary is carried and the readers fall back.
 */
import { describe, expect, it } from 'vitest';
import { CommitConflictError, StaleBucketCountError, WriteStallError } from '../../lib/errors.js';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { compactTable } from '../../lib/maintenance/compact.js';
import { planBucketCompaction, sortedRunCount } from '../../lib/maintenance/compact-plan.js';
import { compactionSettingsOf } from '../../lib/maintenance/compaction-settings.js';
import { bucketStates } from '../../lib/maintenance/compaction-jobs.js';
import { rollbackTo } from '../../lib/maintenance/rollback.js';
import { snapshotKey } from '../../lib/snapshot/paths.js';
import { summaryRuns } from '../../lib/maintenance/summary-runs.js';
import { readLiveFiles } from '../../lib/manifest/scan.js';
import type { ManifestEntry } from '../../lib/manifest/types.js';
import { RowKind } from '../../lib/schema/types.js';
import {
  BUCKETS_PROPERTY,
  type BucketSummary,
  bucketSummaryOf,
  encodeBucketSummary,
  addBucketFiles,
} from '../../lib/snapshot/bucket-summary.js';
import type { Snapshot } from '../../lib/snapshot/snapshot.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { rescaleTable } from '../../lib/table/rescale.js';
import type { Table } from '../../lib/table/table.js';
import { processView } from '../helpers/process-view.js';
import { rng, testSeed, type Rng } from '../helpers/random.js';
import { newTable } from '../maintenance/fixtures.js';

const STEPS = process.env.VARVE_STRESS === '1' ? 60 : 24;
const REGIONS = ['eu', 'us', 'ap'];

/** A summary in a form that compares equal whatever order its files were added in. */
function canonical(summary: BucketSummary): unknown {
  const parts = [...summary].sort((a, b) => (a[0] < b[0] ? -1 : 1));
  return parts.map(([p, part]) => [
    p,
    part.totalBuckets,
    [...part.buckets]
      .sort((a, b) => a[0] - b[0])
      .map(([b, f]) => [
        b,
        [...f.level0].sort((x, y) => x[0] - y[0] || x[1] - y[1] || x[2] - y[2] || x[3] - y[3]),
        [...f.levels].sort((x, y) => x[0] - y[0]),
      ]),
  ]);
}

/** Checks snapshot `s` of `table`: its summary is its live files', and so are the answers from it. */
async function checkSnapshot(table: Table, s: Snapshot, where: string): Promise<void> {
  const carried = bucketSummaryOf(s);
  expect(carried, `${where}: snapshot ${s.id} carries a summary`).toBeDefined();
  const live = await readLiveFiles(table.store, table.path, s);
  const scanned = addBucketFiles(new Map(), live);
  expect(canonical(carried!), `${where}: snapshot ${s.id} (${s.commitKind})`).toEqual(canonical(scanned));
  const settings = compactionSettingsOf(table);
  const byBucket = new Map<string, ManifestEntry[]>();
  for (const e of live) {
    const k = JSON.stringify([e.partition, e.bucket]);
    byBucket.set(k, [...(byBucket.get(k) ?? []), e]);
  }
  for (const [k, entries] of byBucket) {
    const [partition, bucket] = JSON.parse(k) as [string, number];
    expect(summaryRuns(carried!, { partition, bucket }, settings), `${where}: ${k} in snapshot ${s.id}`).toEqual({
      sortedRuns: sortedRunCount(entries, settings, table.compareKeys),
      due: planBucketCompaction(entries, settings, table.compareKeys, false) !== undefined,
    });
  }
}

function batch(r: Rng, regions: readonly string[]): { rows: Array<Record<string, unknown>>; kinds: number[] } {
  const seen = new Set<string>();
  const rows: Array<Record<string, unknown>> = [];
  const kinds: number[] = [];
  for (let i = r.int(1, 40); i > 0; i--) {
    const row = { id: r.int(1, 80), region: r.pick(regions), v: BigInt(r.int(0, 99)), s: `s${r.int(0, 9)}` };
    const key = `${row.region}|${row.id}`;
    if (seen.has(key)) continue;
    seen.add(key);
    rows.push(row);
    kinds.push(r.chance(0.15) ? RowKind.DELETE : RowKind.INSERT);
  }
  return { rows, kinds };
}

/**
 * Lost races and concurrent compactions are part of the history: only a conflict or a stall is
 * tolerated. Never a stale bucket count: a write routed by one is routed again (Table.write).
 */
async function tolerate(p: Promise<unknown>): Promise<void> {
  try {
    await p;
  } catch (e) {
    if (e instanceof StaleBucketCountError) throw e;
    if (!(e instanceof CommitConflictError) && !(e instanceof WriteStallError)) throw e;
  }
}

/** One random step of every commit kind, on `a` or on `b` (two objects of the same table), or on both at once. */
async function step(r: Rng, a: Table, b: Table): Promise<string> {
  const t = r.chance(0.5) ? a : b;
  const w = () => batch(r, REGIONS);
  const kind = r.int(0, 19);
  if (kind < 8) {
    const x = w();
    await t.write(x.rows as never, { kinds: x.kinds });
    return 'write';
  }
  if (kind < 11) {
    const [x, y] = [w(), w()];
    await Promise.all([
      tolerate(a.write(x.rows as never, { kinds: x.kinds })),
      tolerate(b.write(y.rows as never, { kinds: y.kinds })),
    ]);
    return 'two writes at once';
  }
  if (kind < 13) {
    const x = w();
    await Promise.all([
      tolerate(compactTable(a, { full: r.chance(0.3) })),
      tolerate(b.write(x.rows as never, { kinds: x.kinds })),
    ]);
    return 'a compaction and a write at once';
  }
  if (kind === 13) {
    const x = batch(r, [r.pick(REGIONS)]);
    await (await t.latest()).overwrite(x.rows.map((row) => ({ ...row })) as never);
    return 'overwrite of a partition';
  }
  if (kind === 14) {
    await tolerate(
      (await t.latest()).dropPartition({ region: r.pick(REGIONS) }).catch((e) => {
        if (!/has no partition/.test(String(e))) throw e;
      }),
    );
    return 'drop partition';
  }
  if (kind === 15) {
    const latest = await t.snapshots.latest();
    if (latest && latest.id > 1) await rollbackTo(t, { snapshotId: r.int(Math.max(1, latest.id - 6), latest.id - 1) });
    return 'rollback';
  }
  if (kind === 16) {
    await rescaleTable(await t.latest(), { buckets: r.int(1, 4), force: true });
    return 'rescale';
  }
  if (kind === 17) {
    await (await t.latest()).deleteWhere(`id < ${r.int(1, 30)}`);
    return 'delete where';
  }
  if (kind === 18) {
    await (await t.latest()).truncate();
    return 'truncate';
  }
  await compactTable(await t.latest(), { full: r.chance(0.5) });
  return 'compaction';
}

describe('the per-bucket summary each snapshot carries', () => {
  for (const writeOnly of [false, true]) {
    it(`equals a scan of the live files after random commits of every kind${writeOnly ? ' (write-only)' : ' (inline compaction)'}`, {
      timeout: 240_000,
    }, async () => {
      const seed = testSeed(`bucket-summary/${writeOnly ? 'write-only' : 'inline'}`);
      const r = rng(seed);
      const store = new MemoryStore();
      const a = await newTable(
        {
          bucket: String(r.int(1, 3)),
          'num-sorted-run.compaction-trigger': String(r.int(2, 4)),
          'num-sorted-run.stop-trigger': String(r.int(5, 8)),
          'target-file-size': `${r.int(2, 6)} kb`,
          'write-only': String(writeOnly),
          ...(r.chance(0.3) ? { 'changelog-producer': 'lookup' } : {}),
        },
        store,
      );
      // Through a view of its own, as another process: its commits race a's (test/helpers/process-view.ts).
      const b = await new FolderCatalog(processView(store)).getTable(a.name);
      let checked = 0;
      for (let i = 0; i < STEPS; i++) {
        const what = await step(r, a, b).catch((e) => {
          // A write-only table stalls past the stop trigger: the next compaction step clears it.
          if (e instanceof WriteStallError) return 'a stalled write';
          throw e;
        });
        const latest = await a.snapshots.latest({ fresh: true });
        if (!latest) continue;
        for (let id = checked + 1; id <= latest.id; id++) {
          const s = await a.snapshots.tryRead(id);
          if (s) await checkSnapshot(await a.latest(), s, `seed ${seed}, step ${i} (${what})`);
        }
        checked = latest.id;
      }
      expect(checked, 'commits made').toBeGreaterThan(STEPS / 2);
    });
  }

  it('is left out over its size cap, and a commit on a base without one writes none: the checks read the files', async () => {
    // Prepare: a table whose first snapshot carries no summary (as an older writer's, or one over the cap).
    const store = new MemoryStore();
    const table = await newTable({ bucket: '2', 'write-only': 'true' }, store);
    await table.write([{ id: 1, region: 'eu', v: 1n, s: 'a' }] as never);
    const first = (await table.snapshots.latest())!;
    expect(bucketSummaryOf(first)).toBeDefined();
    const { [BUCKETS_PROPERTY]: _, ...rest } = first.properties!;
    await store.put(
      snapshotKey(table.path, 1),
      new TextEncoder().encode(JSON.stringify({ ...first, properties: rest })),
    );
    const reopened = await new FolderCatalog(store).getTable(table.name);

    // Act
    await reopened.write([{ id: 2, region: 'eu', v: 2n, s: 'b' }] as never);
    const second = (await reopened.snapshots.latest())!;
    const huge: BucketSummary = new Map();
    for (let p = 0; p < 2000; p++)
      huge.set(`region=p${p}`, {
        totalBuckets: 2,
        buckets: new Map([[0, { level0: [[1, 1, 1, 1]], levels: new Map() }]]),
      });

    // Assess: none carried on; the compaction-job check reads the files instead; over the cap,
    // nothing is encoded; a value that is not a summary is no summary.
    expect(second.id).toBe(2);
    expect(bucketSummaryOf(second)).toBeUndefined();
    const live = await readLiveFiles(store, reopened.path, second);
    const touched = [...new Set(live.map((e) => e.bucket))].map((bucket) => ({ partition: 'region=eu', bucket }));
    const states = await bucketStates(reopened, second, touched);
    expect(states.reduce((n, st) => n + st.sortedRuns, 0)).toBe(2);
    expect(encodeBucketSummary(huge)).toBeUndefined();
    expect(
      bucketSummaryOf({ ...first, properties: { [BUCKETS_PROPERTY]: '{"eu":[2,{"0":[[[1,2]],[]]}]}' } }),
    ).toBeUndefined();
    expect(bucketSummaryOf(undefined)).toEqual(new Map());
  });
});
