/**
 * Direct-mode ingestion (a writer that commits its own batches) keeps the deduplication window as
 * the group commit does: its snapshots carry the window's checkpoint, so a cold container checking
 * a redelivery reads the latest snapshot instead of every snapshot of the window, and two writers
 * landing the same sources at once land them once (the loser of the race for the snapshot id finds
 * them in the winner's snapshot).
 */
import { describe, expect, it } from 'vitest';
import { landedSources } from '../../lib/table/ingested-sources.js';
import { landRows } from '../../lib/table/land-rows.js';
import { SOURCES_PROPERTY } from '../../lib/table/recent-batches.js';
import { WINDOW_PROPERTY } from '../../lib/table/window-checkpoint.js';
import { rng, testSeed } from '../helpers/random.js';
import { type Container, windowTable } from '../helpers/window-containers.js';

describe('direct-mode ingestion and the deduplication window (randomized, seed printed)', () => {
  it('cold checks read the latest snapshot only; twins landed at once land once', async () => {
    const seed = testSeed('direct-mode window');
    const r = rng(seed);
    const { writer, open } = await windowTable();
    /** What an ingest of `keys` does in direct mode: check its sources, land the rest. */
    const ingest = async (c: Container, id: string, keys: number[]) => {
      const sources = keys.map((k) => `sqs:m${k}`);
      const landed = await landedSources(c.table, sources, { queued: false });
      const left = keys.filter((k) => !landed.has(`sqs:m${k}`));
      if (left.length === 0) return;
      await landRows(
        c.table,
        left.map((k) => ({ id: BigInt(k), v: id })),
        left.map(() => 0),
        { commitUser: 'ingest', commitIdentifier: id, sources: left.map((k) => `sqs:m${k}`) },
      );
    };
    const containers = [await open(), await open(), await open()];
    let key = 0;
    for (let step = 0; step < 25; step++) {
      const keys = Array.from({ length: r.int(1, 3) }, () => ++key);
      // The same messages to 1-3 writers at once (a second deployment, the CLI), some of them cold
      const writers = r.int(1, 3);
      for (let w = 0; w < writers; w++) if (r.chance(0.3)) containers[w] = await open();
      await Promise.all(containers.slice(0, writers).map((c, w) => ingest(c, `i${step}-${w}`, keys)));
    }

    // Act: a cold container checks a redelivery of random messages
    const cold = await open();
    const latest = (await writer.snapshots.latestId())!;
    await cold.table.commitSnapshots.latestId();
    cold.snapshotGets.length = 0;
    const asked = Array.from({ length: 5 }, () => `sqs:m${r.int(1, key)}`);
    const landed = await landedSources(cold.table, asked, { queued: false });

    // Assess: found from the snapshots down to the newest with a checkpoint (an inline compaction's
    // above it carries none); every source in exactly one snapshot
    let newestCheckpoint = latest;
    while (newestCheckpoint > 0 && !(await writer.snapshots.tryRead(newestCheckpoint))!.properties?.[WINDOW_PROPERTY])
      newestCheckpoint--;
    expect([...landed].sort(), `seed ${seed}`).toEqual([...new Set(asked)].sort());
    expect(latest - newestCheckpoint, `seed ${seed}`).toBeLessThanOrEqual(1);
    expect(
      cold.snapshotGets.filter((id) => id < newestCheckpoint),
      `seed ${seed}`,
    ).toEqual([]);
    const where = new Map<string, number[]>();
    for (let id = 1; id <= latest; id++) {
      const s = (await writer.snapshots.tryRead(id))!;
      for (const x of s.properties?.[SOURCES_PROPERTY] ? (JSON.parse(s.properties[SOURCES_PROPERTY]) as string[]) : [])
        where.set(x, [...(where.get(x) ?? []), id]);
    }
    for (let k = 1; k <= key; k++) expect(where.get(`sqs:m${k}`), `seed ${seed}: m${k}`).toHaveLength(1);
  });
});
