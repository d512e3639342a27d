/**
 * A write routed by a stale bucket count (lib/table/table.ts writeCommit, write-commit.ts): a
 * table object that missed another process's rescale, rollback or truncate routes a partition by
 * the count of the newest snapshot it knows; the commit refuses that (StaleBucketCountError), and
 * the write deletes its files, routes the rows again by the snapshot the commit read, and lands.
 * Random histories of two processes: every write of the stale one lands exactly its rows on top of
 * the snapshot before it, and no refused file is left behind.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { StaleBucketCountError } from '../../lib/errors.js';
import { rollbackTo } from '../../lib/maintenance/rollback.js';
import { removeOrphanFiles } from '../../lib/maintenance/remove-orphans.js';
import { RowKind } from '../../lib/schema/types.js';
import { readLiveFiles } from '../../lib/manifest/scan.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { rescaleTable } from '../../lib/table/rescale.js';
import type { Table } from '../../lib/table/table.js';
import { processView } from '../helpers/process-view.js';
import { rng, testSeed, type Rng } from '../helpers/random.js';
import { newTable, readState } from '../maintenance/fixtures.js';

const STEPS = process.env.VARVE_STRESS === '1' ? 80 : 30;
const REGIONS = ['eu', 'us', 'ap'];

function batch(r: Rng): { rows: Array<Record<string, unknown>>; kinds: number[] } {
  const seen = new Set<string>();
  const rows: Array<Record<string, unknown>> = [];
  const kinds: number[] = [];
  for (let i = r.int(1, 30); i > 0; i--) {
    const row = { id: r.int(1, 60), region: r.pick(REGIONS), v: BigInt(r.int(0, 99)), s: `s${r.int(0, 9)}` };
    if (seen.has(`${row.region}|${row.id}`)) continue;
    seen.add(`${row.region}|${row.id}`);
    rows.push(row);
    kinds.push(r.chance(0.15) ? RowKind.DELETE : RowKind.INSERT);
  }
  return { rows, kinds };
}

/** What the other process does, behind the writer's back: a change of bucket counts, or a plain write. */
async function otherProcess(r: Rng, b: Table): Promise<string> {
  const kind = r.int(0, 5);
  if (kind <= 1) {
    await rescaleTable(await b.latest(), { buckets: r.int(1, 5), force: true });
    return 'rescale';
  }
  if (kind === 2) {
    const region = r.pick(REGIONS);
    const rescaled = await rescaleTable(await b.latest(), { buckets: r.int(1, 5), force: true, partition: { region } })
      .then(() => true)
      .catch((e: unknown) => {
        if (/has no partition/.test(String(e))) return false; // truncated or rolled back to before it
        throw e;
      });
    return rescaled ? `rescale of ${region}` : 'nothing';
  }
  const latest = await b.snapshots.latest({ fresh: true });
  if (kind === 3 && latest && latest.id > 1) {
    await rollbackTo(b, { snapshotId: r.int(Math.max(1, latest.id - 8), latest.id - 1) });
    return 'rollback';
  }
  if (kind === 4) {
    await (await b.latest()).truncate();
    return 'truncate';
  }
  const x = batch(r);
  await (await b.latest()).write(x.rows as never, { kinds: x.kinds });
  return 'write';
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('a write routed by a stale bucket count', () => {
  it('is routed again and lands, its refused files deleted, after random rescales, rollbacks and truncates', {
    timeout: 240_000,
  }, async () => {
    const seed = testSeed('stale-routing');
    const r = rng(seed);
    const store = new MemoryStore();
    // Write-only, never stalled: what is under test is the routing, not the back-pressure.
    const a = await newTable(
      { bucket: String(r.int(1, 4)), 'write-only': 'true', 'num-sorted-run.stop-trigger': '1000' },
      store,
    );
    // Another process: its commits are unseen by `a` until a's own commit reads them.
    const b = await new FolderCatalog(processView(store)).getTable(a.name);
    let stale = 0;
    for (let i = 0; i < STEPS; i++) {
      const did = await otherProcess(r, b);
      const x = batch(r);
      const where = `seed ${seed}, step ${i} (after ${did})`;
      const result = await a.write(x.rows as never, { kinds: x.kinds });
      const id = result.snapshot!.id;
      // Exactly this batch on top of the snapshot before it.
      const expected = id === 1 ? new Map() : await readState(a, id - 1);
      x.rows.forEach((row, k) => {
        const key = `${row.region}|${row.id}`;
        if (x.kinds[k] === RowKind.DELETE) expected.delete(key);
        else expected.set(key, { v: row.v, s: row.s });
      });
      expect(await readState(a, id), where).toEqual(expected);
      if (did.startsWith('rescale') || did === 'rollback') stale++;
    }
    // Every data file in the store is referenced by a snapshot: the refused ones were deleted.
    const orphans = await removeOrphanFiles(await a.latest(), { dryRun: true, olderThanMs: 0 });
    expect(
      orphans.orphans.filter((o) => o.kind === 'data' || o.kind === 'changelog').map((o) => o.key),
      `seed ${seed}`,
    ).toEqual([]);
    expect(stale, `seed ${seed}: histories that change bucket counts`).toBeGreaterThan(0);
  });

  it('is refused with StaleBucketCountError naming the partition when a writer routes by an old count', async () => {
    // Prepare: a writer that learned eu's count, then another process rescales eu.
    const store = new MemoryStore();
    const a = await newTable({ bucket: '2', 'write-only': 'true' }, store);
    const b = await new FolderCatalog(processView(store)).getTable(a.name);
    await a.write([{ id: 1, region: 'eu', v: 1n, s: 'a' }] as never);
    const writer = a.newWriter();
    await writer.write([{ id: 2, region: 'eu', v: 2n, s: 'b' }] as never);
    await rescaleTable(await b.latest(), { buckets: 3, force: true, partition: { region: 'eu' } });

    // Act
    const refused = await writer.commit().catch((e: unknown) => e);
    await writer.close();

    // Assess: the typed conflict, with the partition and both counts; the writer's file is gone.
    expect(refused).toBeInstanceOf(StaleBucketCountError);
    const e = refused as StaleBucketCountError;
    expect([e.partition, e.liveBuckets, e.writtenBuckets]).toEqual(['region=eu', 3, 2]);
    const orphans = await removeOrphanFiles(await a.latest(), { dryRun: true, olderThanMs: 0 });
    expect(orphans.orphans.filter((o) => o.kind === 'data')).toEqual([]);
  });
  it('is not made by a writer whose table last looked over a minute ago: it looks for the latest first', async () => {
    // Prepare: a table object that learned the latest snapshot, then another process rescales eu,
    // and a minute passes (as in a warm function container between invocations).
    const store = new MemoryStore();
    const a = await newTable({ bucket: '2', 'write-only': 'true' }, store);
    const b = await new FolderCatalog(processView(store)).getTable(a.name);
    await a.write([{ id: 1, region: 'eu', v: 1n, s: 'a' }] as never);
    await rescaleTable(await b.latest(), { buckets: 3, force: true, partition: { region: 'eu' } });
    const now = performance.now.bind(performance);
    vi.spyOn(performance, 'now').mockImplementation(() => now() + 61_000);

    // Act: a streaming writer (no retry of its own)
    const writer = a.newWriter();
    await writer.write([{ id: 2, region: 'eu', v: 2n, s: 'b' }] as never);
    const result = await writer.commit();
    await writer.close();

    // Assess: routed by the rescaled count, committed
    const latest = await a.snapshots.latest({ fresh: true });
    expect(result.snapshot?.id).toBe(latest!.id);
    const live = await readLiveFiles(store, a.path, latest!);
    expect(new Set(live.map((e) => e.totalBuckets))).toEqual(new Set([3]));
  });
});
