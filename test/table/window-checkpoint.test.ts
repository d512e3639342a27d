/**
 * The deduplication window's checkpoint (lib/table/window-checkpoint.ts): a cold container learns
 * the window from the latest snapshot instead of reading every snapshot of the last 30 minutes,
 * and knows exactly what a scan of every snapshot would have told it — whatever committed the
 * snapshots (group commits of warm and cold containers, older writers without checkpoints, other
 * commits), however the commits raced, whatever expiry removed and whatever window the reader has.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { compactTable } from '../../lib/maintenance/compact.js';
import { expireSnapshots } from '../../lib/maintenance/expire-snapshots.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { alterTable } from '../../lib/table/alter.js';
import type { Snapshot } from '../../lib/snapshot/snapshot.js';
import { commitAppend } from '../../lib/table/append-commit.js';
import { messagesCommitIdentifier } from '../../lib/table/commit-identifiers.js';
import type { CommitMessage } from '../../lib/table/commit-message.js';
import { GroupCommit } from '../../lib/table/group-commit.js';
import { landRows } from '../../lib/table/land-rows.js';
import {
  BATCHES_PROPERTY,
  batchesProperty,
  RecentBatches,
  recentBatchesOf,
  SOURCES_PROPERTY,
} from '../../lib/table/recent-batches.js';
import type { Table } from '../../lib/table/table.js';
import { WINDOW_PROPERTY } from '../../lib/table/window-checkpoint.js';
import { rng, testSeed, type Rng } from '../helpers/random.js';
import { type Container, windowTable } from '../helpers/window-containers.js';

const MIN = 60_000;

/** A writer's batch of one row per source (keys `keys`), handed to the group commit: its commit message. */
async function queuedBatch(table: Table, id: string, keys: number[], sources: string[]): Promise<CommitMessage> {
  const queued: CommitMessage[] = [];
  await landRows(
    table,
    keys.map((k) => ({ id: BigInt(k), v: id })),
    keys.map(() => 0),
    { commitUser: 'ingest', commitIdentifier: id, sources, enqueue: async (m) => void queued.push(m) },
  );
  return queued[0];
}

/**
 * `c` once it has looked the latest snapshot up, its reads forgotten: the lookup reads the snapshot
 * the LATEST hint names when the hint lags (lib/snapshot/snapshot-manager.ts latestId), which is
 * not the window's doing; what `c` reads next is.
 */
async function lookedUp(c: Container): Promise<Container> {
  await c.table.commitSnapshots.latestId();
  c.snapshotGets.length = 0;
  return c;
}

/** Batches b0..b2 (sources sqs:m0..m2) group-committed by `committer`, one snapshot each: their ids. */
async function threeGroupCommits(writer: Table, committer: Container): Promise<number[]> {
  const landedIn: number[] = [];
  for (let i = 0; i < 3; i++) {
    const m = await queuedBatch(writer, `b${i}`, [i], [`sqs:m${i}`]);
    landedIn.push(
      (await new GroupCommit(committer.table, [{ id: `q${i}`, message: m }]).settle(`q${i}`)).committed!.snapshot.id,
    );
  }
  return landedIn;
}

/** The batch and source ids a snapshot holds. */
function idsOf(s: Snapshot): string[] {
  return [BATCHES_PROPERTY, SOURCES_PROPERTY].flatMap((p) =>
    s.properties?.[p] ? (JSON.parse(s.properties[p]) as string[]) : [],
  );
}

/** What an older writer committed: the group commit's properties without a checkpoint. */
async function oldWriterCommit(table: Table, run: CommitMessage[], identifier: string): Promise<Snapshot> {
  const sources = run.flatMap((m) => m.sources ?? []);
  const committed = await commitAppend(
    table,
    run.map((m) => m.batch),
    {
      commitUser: 'group-commit',
      commitIdentifier: identifier,
      properties: {
        [BATCHES_PROPERTY]: batchesProperty(run.map((m) => m.commitIdentifier)),
        ...(sources.length ? { [SOURCES_PROPERTY]: JSON.stringify(sources) } : {}),
      },
    },
  );
  return committed.snapshot;
}

afterEach(() => {
  vi.useRealTimers();
});

describe('a cold container reads the window from a checkpoint', () => {
  it('reads only the latest snapshot of a table with 30 group commits, and knows all of them', async () => {
    // Prepare: 30 group commits by one container (and the inline compactions they trigger)
    const { writer, open } = await windowTable();
    const committer = await open();
    const landedIn: number[] = [];
    for (let i = 0; i < 30; i++) {
      const m = await queuedBatch(writer, `b${i}`, [i], [`sqs:m${i}`]);
      const outcome = await new GroupCommit(committer.table, [{ id: `q${i}`, message: m }]).settle(`q${i}`);
      landedIn.push(outcome.committed!.snapshot.id);
    }
    const latest = (await writer.snapshots.latestId())!;
    expect(landedIn).toContain(latest); // the latest is a group commit's

    // Act: a cold container's first look, then another's group commit of a redelivered batch and a new one
    const cold = await lookedUp(await open());
    const recent = new RecentBatches(cold.table);
    await recent.refresh();
    const again = await queuedBatch(writer, 'b3', [3], ['sqs:m3']);
    const fresh = await queuedBatch(writer, 'b30', [30], ['sqs:m30']);
    const coldCommit = await lookedUp(await open());
    const outcome = await new GroupCommit(coldCommit.table, [
      { id: 'q3', message: again },
      { id: 'q30', message: fresh },
    ]).settle('q3');

    // Assess: no snapshot read but the latest, everything known, the redelivery skipped
    expect(cold.snapshotGets.filter((id) => id !== latest)).toEqual([]);
    for (let i = 0; i < 30; i++) {
      expect(recent.snapshotOf(`b${i}`)).toBe(landedIn[i]);
      expect(recent.snapshotOf(`sqs:m${i}`)).toBe(landedIn[i]);
    }
    expect(recent.knowsEverySnapshotAfter(Date.now() - 29 * MIN)).toBe(true);
    expect(coldCommit.snapshotGets.filter((id) => id !== latest)).toEqual([]);
    expect(outcome.skipped).toBe(1);
    expect(idsOf(outcome.committed!.snapshot)).toEqual(['b30', 'sqs:m30']);
  });

  it('reads only the latest snapshot when a compaction and an alter landed on the last group commit: they carry its checkpoint', async () => {
    // Prepare: 3 group commits, then a full compaction and an alter on top (no ids of their own)
    const { writer, open } = await windowTable();
    const landedIn = await threeGroupCommits(writer, await open());
    await compactTable(writer, { full: true });
    await alterTable(writer, [{ kind: 'add-column', name: 'note', type: parseSchemaText('n STRING')[0].type }]);
    const latest = (await writer.snapshots.latest())!;
    expect(latest.id).toBe(landedIn[2] + 2);

    // Act
    const cold = await lookedUp(await open());
    const recent = new RecentBatches(cold.table);
    await recent.refresh();

    // Assess: the latest read, nothing below it (before, the snapshots down to the last group
    // commit were read), and the window known as from every snapshot
    expect(cold.snapshotGets).toEqual([latest.id]);
    expect(latest.properties?.[WINDOW_PROPERTY]).toBeDefined();
    for (let i = 0; i < 3; i++) {
      expect(recent.snapshotOf(`b${i}`)).toBe(landedIn[i]);
      expect(recent.snapshotOf(`sqs:m${i}`)).toBe(landedIn[i]);
    }
    expect(recent.knowsEverySnapshotAfter(Date.now() - 29 * MIN)).toBe(true);
  });

  it('reads on below snapshots without a checkpoint (older writers, other commits) to the nearest one with it', async () => {
    // Prepare: 3 group commits, then an older writer's commit and a plain write on top
    const { writer, open } = await windowTable();
    const landedIn = await threeGroupCommits(writer, await open());
    const old = await oldWriterCommit(writer, [await queuedBatch(writer, 'old', [10], ['sqs:old'])], 'old-run');
    await landRows(writer, [{ id: 11n, v: 'plain' }], [0], {
      commitUser: 'cli',
      commitIdentifier: 'plain',
    });

    // Act
    const cold = await lookedUp(await open());
    const recent = new RecentBatches(cold.table);
    await recent.refresh();

    // Assess: the snapshots above the last group commit's read, down to it, whose checkpoint
    // holds the ones below
    expect(cold.snapshotGets).toContain(landedIn[2]);
    expect(Math.min(...cold.snapshotGets)).toBe(landedIn[2]);
    expect(recent.snapshotOf('sqs:old')).toBe(old.id);
    for (let i = 0; i < 3; i++) expect(recent.snapshotOf(`sqs:m${i}`)).toBe(landedIn[i]);
  });

  it('splits a large window over several checkpoints, each at most 32 KiB', async () => {
    // Prepare: 12 group commits of 300 sources each (~13 KiB of ids per snapshot)
    const { writer, open } = await windowTable();
    const committer = await open();
    const sourcesOf = (i: number) => Array.from({ length: 300 }, (_, j) => `sqs:${i}-${j}-${'x'.repeat(30)}`);
    const landedIn: number[] = [];
    for (let i = 0; i < 12; i++) {
      const m = await queuedBatch(writer, `b${i}`, [i], sourcesOf(i));
      landedIn.push(
        (await new GroupCommit(committer.table, [{ id: `q${i}`, message: m }]).settle(`q${i}`)).committed!.snapshot.id,
      );
    }

    // Act
    const cold = await lookedUp(await open());
    const recent = new RecentBatches(cold.table);
    await recent.refresh();
    const reads = [...cold.snapshotGets];

    // Assess: every id known, with fewer reads than snapshots; no checkpoint over its bound
    for (const id of landedIn) {
      const s = (await cold.table.commitSnapshots.tryRead(id))!;
      expect(s.properties![WINDOW_PROPERTY]?.length ?? 0).toBeLessThanOrEqual(32 * 1024);
    }
    for (let i = 0; i < 12; i++) for (const s of sourcesOf(i)) expect(recent.snapshotOf(s)).toBe(landedIn[i]);
    expect(reads.length).toBeLessThanOrEqual(landedIn.length / 2);
    expect(reads.length).toBeGreaterThan(1);
  });
});

/** Padding that makes some snapshots' ids large enough to cut checkpoints. */
function sourceIds(r: Rng, prefix: string): string[] {
  const n = r.chance(0.3) ? r.int(200, 600) : r.int(0, 3);
  return Array.from({ length: n }, (_, j) => `sqs:${prefix}-${j}-${'p'.repeat(r.int(0, 40))}`);
}

describe('the window a cold container reads equals a scan of every snapshot (randomized, seed printed)', () => {
  it('group commits of warm and cold containers, older writers, plain commits, expiry, clock jumps, reader windows of 10 min to 2 h', async () => {
    const seed = testSeed('window-checkpoint model');
    const r = rng(seed);
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now());
    const { writer, open } = await windowTable();
    // Every snapshot ever committed, expired or not: id, time, ids.
    const history: Array<{ id: number; time: number; ids: string[] }> = [];
    const record = (s: Snapshot) => history.push({ id: s.id, time: s.timeMillis, ids: idsOf(s) });
    const slots: Container[] = [await open(), await open(), await open()];
    let n = 0;

    /** Checks `recent` (refreshed) against the history. */
    const check = (recent: RecentBatches, windowMs: number, earliest: number, what: string) => {
      const horizon = Date.now() - windowMs;
      for (const h of history) {
        for (const id of h.ids) {
          const found = recent.snapshotOf(id);
          // A snapshot in the window, with every snapshot above it still there, is always found;
          // anything found is where it really is, and in the window.
          if (h.time >= horizon && h.id >= earliest) expect(found, `${what}: ${id} of snapshot ${h.id}`).toBe(h.id);
          if (found !== undefined) expect([found, h.time >= horizon], `${what}: ${id}`).toEqual([h.id, true]);
        }
      }
      // What it says it knows completely, it knows (expired snapshots included: filesMayBeGone).
      for (const t of [horizon, horizon + 5 * MIN, Date.now() - 2 * MIN, ...history.map((h) => h.time)]) {
        if (!recent.knowsEverySnapshotAfter(t)) continue;
        for (const h of history.filter((x) => x.time > t && x.time >= horizon))
          for (const id of h.ids) expect(recent.snapshotOf(id), `${what}: knows after ${t}, ${id}`).toBe(h.id);
      }
    };

    for (let step = 0; step < 70; step++) {
      vi.setSystemTime(Date.now() + (r.chance(0.1) ? r.int(20, 40) * MIN : r.int(0, 3 * MIN)));
      const action = r.pick(['group', 'group', 'group', 'group', 'old', 'plain', 'restart', 'expire'] as const);
      if (action === 'group' || action === 'old') {
        const run: CommitMessage[] = [];
        for (let b = r.int(1, 3); b > 0; b--) {
          const id = `b${++n}`;
          run.push(await queuedBatch(writer, id, [n], sourceIds(r, id)));
        }
        // Older writers and plain writes run as CLI processes do: a table opened for the one commit.
        if (action === 'old') record(await oldWriterCommit((await open()).table, run, `old-${n}`));
        else {
          const slot = r.int(0, slots.length - 1);
          const queued = run.map((message, i) => ({ id: `q${n}-${i}`, message }));
          const outcome = await new GroupCommit(slots[slot].table, queued).settle(queued[0].id);
          record(outcome.committed!.snapshot);
        }
      } else if (action === 'plain') {
        const landed = await landRows((await open()).table, [{ id: BigInt(++n), v: 'plain' }], [0], {
          commitUser: 'cli',
          commitIdentifier: `plain-${n}`,
        });
        record(landed.snapshot!);
      } else if (action === 'restart') {
        slots[r.int(0, slots.length - 1)] = await open();
      } else {
        await expireSnapshots((await open()).table, { retainMin: 1, retainMax: r.int(2, 30), olderThanMs: 0 });
      }
      const earliest = (await writer.snapshots.earliestId()) ?? 1;
      const windowMs = r.pick([10, 30, 60, 120]) * MIN;
      const cold = await open();
      const recent = new RecentBatches(cold.table, Date.now, windowMs);
      await recent.refresh();
      check(recent, windowMs, earliest, `step ${step} (${action}), a cold reader of a ${windowMs / MIN}-minute window`);
      const warm = recentBatchesOf(slots[r.int(0, slots.length - 1)].table);
      await warm.refresh();
      check(warm, warm.windowMs, earliest, `step ${step} (${action}), a committer`);
    }
    expect(history.length).toBeGreaterThan(30);
  });
});

/**
 * The group commit of an older varve: the window read snapshot by snapshot (30 minutes), each
 * batch skipped when its identifier, or every one of its sources, is there; no checkpoint written.
 */
async function olderGroupCommit(table: Table, run: Array<{ id: string; message: CommitMessage }>): Promise<void> {
  const known = new Set<string>();
  const latest = await table.commitSnapshots.latestId();
  for (let id = latest ?? 0; id >= 1; id--) {
    const s = await table.commitSnapshots.tryRead(id);
    if (!s || s.timeMillis < Date.now() - 30 * MIN) break;
    for (const x of idsOf(s)) known.add(x);
  }
  const fresh = run.filter(({ message: m }) => {
    if (known.has(m.commitIdentifier) || (m.sources?.length && m.sources.every((s) => known.has(s)))) return false;
    for (const x of [m.commitIdentifier, ...(m.sources ?? [])]) known.add(x);
    return true;
  });
  const identifier = messagesCommitIdentifier(
    'commit',
    run.map((q) => q.id),
  );
  if (fresh.length > 0)
    await oldWriterCommit(
      table,
      fresh.map((q) => q.message),
      identifier,
    );
}

describe('redelivered batches commit once across cold containers and older writers (randomized, seed printed)', () => {
  it('runs redelivered after a crash past their commit, in other compositions, to warm, cold and older committers, two at once', async () => {
    const seed = testSeed('window-checkpoint redeliveries');
    const r = rng(seed);
    const { writer, open } = await windowTable();
    // Prepare: batches of 1-3 sources (one row each); some written twice under two identifiers
    // (the same messages landed again in another composition)
    type Queued = { id: string; message: CommitMessage };
    const queued: Queued[] = [];
    let key = 0;
    for (let b = 0; b < 18; b++) {
      const keys = Array.from({ length: r.int(1, 3) }, () => ++key);
      const sources = keys.map((k) => `sqs:m${k}`);
      queued.push({ id: `q${b}`, message: await queuedBatch(writer, `b${b}`, keys, sources) });
      if (r.chance(0.3))
        queued.push({ id: `q${b}-again`, message: await queuedBatch(writer, `b${b}-again`, keys, sources) });
    }
    const containers: Container[] = [await open(), await open(), await open()];

    type How = 'warm' | 'cold' | 'older';
    /** One delivery of `run` to a container (or an older committer). */
    const deliver = async (run: Queued[], slot: number, how: How): Promise<void> => {
      if (how === 'older') await olderGroupCommit((await open()).table, run);
      else {
        if (how === 'cold') containers[slot] = await open();
        const commit = new GroupCommit(containers[slot].table, run);
        for (const q of run) await commit.settle(q.id);
      }
    };
    const pickHow = () => r.pick(['warm', 'warm', 'cold', 'older'] as const);

    // Act: deliver until every message is acknowledged, sometimes two runs at once
    const pending = [...queued];
    let deliveries = 0;
    while (pending.length > 0) {
      const shuffled = [...pending].sort(() => r.next() - 0.5);
      const first = shuffled.splice(0, r.int(1, Math.min(4, shuffled.length)));
      const hows = [pickHow(), pickHow()];
      // Two runs at once may hold the same sources (a batch and its twin, in two committers: a
      // second deployment, the CLI): the one that loses the race for the snapshot id finds them in
      // the winner's snapshot. An older committer does not look again, so beside one the two runs
      // hold no source in common (on AWS a table's commit messages are one FIFO message group).
      const inFirst = new Set(first.flatMap((q) => q.message.sources ?? []));
      const others = hows.includes('older')
        ? shuffled.filter((q) => !(q.message.sources ?? []).some((x) => inFirst.has(x)))
        : shuffled;
      const second = others.length > 0 && r.chance(0.3) ? others.slice(0, r.int(1, Math.min(3, others.length))) : [];
      // A crash after the commit: not acknowledged, delivered again.
      const acked = [!r.chance(0.4), !r.chance(0.4)];
      await Promise.all([
        deliver(first, 0, hows[0]),
        ...(second.length ? [deliver(second, 1 + r.int(0, 1), hows[1])] : []),
      ]);
      for (const [i, run] of [first, second].entries())
        if (acked[i]) for (const q of run) pending.splice(pending.indexOf(q), 1);
      deliveries++;
    }

    // Assess: every source in exactly one snapshot, every batch in at most one, a batch left out
    // only when its twin holds its sources
    const batchesIn = new Map<string, number[]>();
    const sourcesIn = new Map<string, number[]>();
    const latest = (await writer.snapshots.latestId())!;
    for (let id = 1; id <= latest; id++) {
      const s = (await writer.snapshots.tryRead(id))!;
      for (const [property, into] of [
        [BATCHES_PROPERTY, batchesIn],
        [SOURCES_PROPERTY, sourcesIn],
      ] as const)
        for (const x of s.properties?.[property] ? (JSON.parse(s.properties[property]) as string[]) : [])
          into.set(x, [...(into.get(x) ?? []), id]);
    }
    const what = `seed ${seed}, ${deliveries} deliveries`;
    for (let k = 1; k <= key; k++) expect(sourcesIn.get(`sqs:m${k}`), `${what}: source m${k}`).toHaveLength(1);
    for (const { message: m } of queued) {
      const landed = batchesIn.get(m.commitIdentifier) ?? [];
      expect(landed.length, `${what}: batch ${m.commitIdentifier} in ${landed}`).toBeLessThanOrEqual(1);
      if (landed.length === 0) {
        const twin = m.commitIdentifier.endsWith('-again')
          ? m.commitIdentifier.slice(0, -'-again'.length)
          : `${m.commitIdentifier}-again`;
        expect(batchesIn.get(twin), `${what}: batch ${m.commitIdentifier} lost`).toHaveLength(1);
      }
    }
    expect(deliveries).toBeGreaterThan(5);
  });
});
