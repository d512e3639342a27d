/**
 * Benchmark 6, streaming: commit-to-consumer latency in the local runtime (the core of
 * bench/stream-latency.ts): small commits to a table in a local folder warehouse, one consumer, and
 * for each commit the time from its in-process commit event (the snapshot file exists) to the
 * sink receiving its split.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LocalRuntime } from '../../lib/runtime/local-runtime.js';
import { LocalStore } from '../../lib/store/local-store.js';
import type { ChangeBatch, StreamSink } from '../../lib/stream/delivery.js';
import type { Table } from '../../lib/table/table.js';
import { keyIndexOf, makeRows, range } from '../lib/data.js';
import {
  addChecksums,
  assertChecksum,
  assertEqual,
  expectedChecksum,
  tableChecksum,
  type Checksum,
} from '../lib/checksum.js';
import { quantile, statsOf } from '../lib/harness.js';
import type { ChartSpec, SuiteContext, SuiteResult } from '../lib/results.js';
import { createBenchTable, freshDir } from '../lib/tables.js';

/** Commits whose latency is not recorded (code paths warming up). */
const WARMUP_COMMITS = 20;
const ROWS_PER_COMMIT = 4;
const PERCENTILES = [0.5, 0.9, 0.99];
const LABELS = new Map([
  [0.5, 'p50'],
  [0.9, 'p90'],
  [0.99, 'p99'],
  [1, 'max'],
]);
const REPO = fileURLToPath(new URL('../..', import.meta.url));
/** The aim for a change committed in one process to reach `varve tail` in another (local folder). */
const CROSS_PROCESS_P50_AIM_MS = 100;

/**
 * A bench table on a local folder whose store stamps the moment each snapshot file is created
 * (the create-only put returned): the start of a commit's delivery latency. The commit event
 * comes later (after the committer's bookkeeping), and a consumer woken by the folder watch can
 * be faster than it.
 */
async function stampedTable(
  dir: string,
  options: Record<string, string> = {},
): Promise<{ table: Table; createdAt: Map<number, number> }> {
  const createdAt = new Map<number, number>();
  const inner = new LocalStore(dir);
  const store = new Proxy(inner, {
    get(target, prop) {
      if (prop === 'putIfAbsent') {
        return async (key: string, body: Uint8Array) => {
          const r = await target.putIfAbsent(key, body);
          const m = /\/snapshot\/snapshot-(\d+)$/.exec(key);
          if (r && m) createdAt.set(Number(m[1]), performance.now());
          return r;
        };
      }
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return { table: await createBenchTable(store, 't', options), createdAt };
}

/** Commit index of each key: commit i writes keys [i·ROWS_PER_COMMIT, (i+1)·ROWS_PER_COMMIT). */
function commitOfKey(key: number): number {
  return Math.floor(keyIndexOf(key) / ROWS_PER_COMMIT);
}

/** Arrival of rows by commit: a commit's latency is when the last of its rows arrived. */
class Arrivals {
  private readonly rows = new Map<number, number>();
  readonly doneAt = new Map<number, number>();

  note(key: number, at: number): void {
    const c = commitOfKey(key);
    const n = (this.rows.get(c) ?? 0) + 1;
    this.rows.set(c, n);
    if (n === ROWS_PER_COMMIT) this.doneAt.set(c, at);
  }
}

/**
 * Cross-process latency: `varve tail --follow` in child processes (one without a consumer id,
 * one with), this process committing; a change's latency is from this process's commit event to
 * the child's JSON line arriving here. Returns each tail's latencies (after warm-up) and checks
 * that every row arrived exactly once.
 */
async function crossProcessTails(ctx: SuiteContext, commits: number, gapMs: number): Promise<Record<string, number[]>> {
  const dir = await freshDir(ctx.tmp, 'stream-tail');
  const { table, createdAt } = await stampedTable(dir);
  const kinds: Record<string, string[]> = {
    'tail (no consumer id)': [],
    'tail --consumer-id': ['--consumer-id', 'bench'],
  };
  const tails = Object.entries(kinds).map(([name, extra]) => {
    const child = spawn(
      process.execPath,
      [join(REPO, 'bin/varve.mjs'), '--warehouse', dir, 'tail', table.name, '--from', 'latest', '--follow', ...extra],
      { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const arrivals = new Arrivals();
    let buffered = '';
    let err = '';
    let lines = 0;
    child.stdout.setEncoding('utf8').on('data', (text: string) => {
      const now = performance.now();
      buffered += text;
      const parts = buffered.split('\n');
      buffered = parts.pop()!;
      for (const line of parts) {
        if (line.trim() === '') continue;
        arrivals.note(Number((JSON.parse(line) as { row: { key: number | string } }).row.key), now);
        lines++;
      }
    });
    child.stderr.setEncoding('utf8').on('data', (t: string) => (err += t));
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    return { name, child, arrivals, lines: () => lines, err: () => err, exited };
  });
  const commitAt = new Map<number, number>();
  const commitOne = async (i: number) => {
    const writer = table.newWriter();
    await writer.writeArrow(makeRows(range(ROWS_PER_COMMIT, i * ROWS_PER_COMMIT), 0));
    const r = await writer.commit(`tail-${i}`);
    await writer.close();
    commitAt.set(i, createdAt.get(r.snapshot!.id)!);
  };
  try {
    // Warm-up: commit until both tails print, so they have started and follow the table.
    let i = 0;
    const deadline = Date.now() + 300_000;
    while (tails.some((t) => t.arrivals.doneAt.size === 0)) {
      if (Date.now() > deadline || tails.some((t) => t.child.exitCode !== null))
        throw new Error(`varve tail did not start: ${tails.map((t) => t.err()).join(' | ')}`);
      await commitOne(i++);
      await new Promise((r) => setTimeout(r, 200));
    }
    const first = i;
    for (; i < first + commits; i++) {
      await commitOne(i);
      await new Promise((r) => setTimeout(r, gapMs));
    }
    const end = Date.now() + 60_000;
    while (tails.some((t) => [...range(commits, first)].some((c) => !t.arrivals.doneAt.has(c)))) {
      if (Date.now() > end) throw new Error('cross-process tails did not receive every commit within 60 s');
      await new Promise((r) => setTimeout(r, 20));
    }
    const out: Record<string, number[]> = {};
    for (const t of tails) {
      // Each tail prints every row it follows exactly once (the warm-up may start mid-way).
      const printed = t.lines();
      const fromFirstSeen = Math.min(...t.arrivals.doneAt.keys());
      assertEqual(
        `streaming: ${t.name} printed each followed row once`,
        printed,
        (i - fromFirstSeen) * ROWS_PER_COMMIT,
      );
      out[t.name] = [...range(commits, first)].map((c) => t.arrivals.doneAt.get(c)! - commitAt.get(c)!);
    }
    return out;
  } finally {
    for (const t of tails) t.child.kill('SIGTERM');
    await Promise.all(tails.map((t) => t.exited));
  }
}

/**
 * In-process latency of a lookup table: the writer compacts inline after each APPEND and the
 * consumer reads the changelog of the COMPACT snapshot; latency from the APPEND's commit event.
 */
async function lookupInProcess(ctx: SuiteContext, commits: number, gapMs: number): Promise<number[]> {
  const { table, createdAt } = await stampedTable(await freshDir(ctx.tmp, 'stream-lookup'), {
    'changelog-producer': 'lookup',
    'write-only': 'false',
  });
  const arrivals = new Arrivals();
  const sums: Checksum[] = [];
  const seen = new Set<string>();
  const sink: StreamSink = {
    async write(batch: ChangeBatch) {
      const now = performance.now();
      if (seen.has(batch.splitId)) return;
      seen.add(batch.splitId);
      const keys = batch.data.getChild('key')!;
      for (let r = 0; r < batch.data.numRows; r++) arrivals.note(Number(keys.get(r)), now);
      if (batch.data.numRows > 0) sums.push(tableChecksum(batch.data));
    },
  };
  const runtime = new LocalRuntime({
    discoveryIntervalMs: 1000,
    compactionIntervalMs: 0,
    expiryIntervalMs: 0,
    log: (l) => ctx.log(`runtime: ${l}`),
  });
  await runtime.addConsumer({ table, consumerId: 'bench', sink, stream: { mode: 'latest' } });
  await runtime.start();
  const commitAt: number[] = [];
  try {
    for (let i = 0; i < commits; i++) {
      const writer = table.newWriter();
      await writer.writeArrow(makeRows(range(ROWS_PER_COMMIT, i * ROWS_PER_COMMIT), 0));
      const r = await writer.commit(`lookup-${i}`);
      await writer.close();
      commitAt.push(createdAt.get(r.snapshot!.id)!);
      await new Promise((res) => setTimeout(res, gapMs));
    }
    await runtime.idle(120_000);
  } finally {
    await runtime.stop();
  }
  // New keys only: the lookup changelog is one +I per row written, nothing lost or repeated.
  assertChecksum(
    'streaming (lookup): changelog rows delivered',
    addChecksums(sums),
    expectedChecksum(range(commits * ROWS_PER_COMMIT), 0),
  );
  return commitAt.slice(WARMUP_COMMITS).map((at, k) => arrivals.doneAt.get(k + WARMUP_COMMITS)! - at);
}

/** Runs benchmark 6. */
export async function runStreaming(ctx: SuiteContext): Promise<SuiteResult> {
  const commits = ctx.quick ? 220 : 420;
  const gapMs = 10;
  const { table, createdAt: committedAt } = await stampedTable(await freshDir(ctx.tmp, 'stream'));
  const arrivedAt = new Map<number, number>();
  const sums: Checksum[] = [];
  const seenSplits = new Set<string>();
  let redelivered = 0;
  const sink: StreamSink = {
    async write(batch: ChangeBatch) {
      const now = performance.now();
      if (seenSplits.has(batch.splitId)) {
        redelivered++;
        return;
      }
      seenSplits.add(batch.splitId);
      if (batch.data.numRows === 0) return;
      // The latency of a commit is when its last split arrives (all its buckets delivered).
      arrivedAt.set(batch.snapshotId, now);
      sums.push(tableChecksum(batch.data));
    },
  };
  const runtime = new LocalRuntime({
    discoveryIntervalMs: 1000,
    compactionIntervalMs: 0,
    expiryIntervalMs: 0,
    log: (l) => ctx.log(`runtime: ${l}`),
  });
  await runtime.addConsumer({ table, consumerId: 'bench', sink, stream: { mode: 'latest' } });
  await runtime.start();
  const commitMs: number[] = [];
  const snapshotOfCommit: number[] = [];
  const started = performance.now();
  try {
    for (let i = 0; i < commits; i++) {
      const t0 = performance.now();
      const writer = table.newWriter();
      await writer.writeArrow(makeRows(range(ROWS_PER_COMMIT, i * ROWS_PER_COMMIT), 0));
      const r = await writer.commit(`stream-${i}`);
      await writer.close();
      commitMs.push(performance.now() - t0);
      snapshotOfCommit.push(r.snapshot!.id);
      await new Promise((res) => setTimeout(res, gapMs));
    }
    await runtime.idle(120_000);
  } finally {
    await runtime.stop();
  }
  const elapsed = performance.now() - started;
  // Every committed row arrived exactly once: the delivered rows are exactly the written ones.
  assertChecksum(
    'streaming: rows delivered to the consumer',
    addChecksums(sums),
    expectedChecksum(range(commits * ROWS_PER_COMMIT), 0),
  );
  const measured = snapshotOfCommit.slice(WARMUP_COMMITS);
  const latencies = measured.map((id) =>
    arrivedAt.has(id) && committedAt.has(id) ? arrivedAt.get(id)! - committedAt.get(id)! : undefined,
  );
  assertEqual(
    'streaming: commits with a measured delivery',
    latencies.filter((x) => x !== undefined).length,
    measured.length,
  );
  const lat = statsOf(latencies as number[]);
  const sorted = [...lat.samples].sort((a, b) => a - b);
  const commitStats = statsOf(commitMs.slice(WARMUP_COMMITS));
  const lookup = await lookupInProcess(ctx, ctx.quick ? 120 : 220, gapMs);
  const lookupSorted = [...lookup].sort((a, b) => a - b);
  ctx.log(
    `streaming (lookup): latency p50 ${quantile(lookupSorted, 0.5).toFixed(1)} ms, p99 ${quantile(lookupSorted, 0.99).toFixed(1)} ms`,
  );
  const crossCommits = ctx.quick ? 60 : 200;
  const crossGapMs = 20;
  const cross = await crossProcessTails(ctx, crossCommits, crossGapMs);
  const crossRows: Array<Array<string | number>> = [];
  const crossMeasurements = [];
  const crossRatios = [];
  for (const [name, lats] of Object.entries(cross)) {
    const sortedLats = [...lats].sort((a, b) => a - b);
    ctx.log(
      `streaming (${name}, other process): latency p50 ${quantile(sortedLats, 0.5).toFixed(1)} ms, p99 ${quantile(sortedLats, 0.99).toFixed(1)} ms`,
    );
    crossRows.push([
      `varve ${name}, another process`,
      ...PERCENTILES.map((q) => quantile(sortedLats, q).toFixed(1)),
      Math.max(...lats).toFixed(1),
      lats.length,
      '–',
    ]);
    const st = statsOf(lats);
    const id = name.includes('consumer') ? 'cross-tail-consumer' : 'cross-tail';
    crossMeasurements.push({
      id,
      label: `commit-to-\`varve ${name}\` latency, another OS process (local folder)`,
      unit: 'ms',
      stats: st,
    });
    crossRatios.push({
      id: `${id}-p50-vs-aim`,
      label: `varve ${name} in another process: p50 latency ÷ ${CROSS_PROCESS_P50_AIM_MS} ms`,
      value: st.median / CROSS_PROCESS_P50_AIM_MS,
      min: st.min / CROSS_PROCESS_P50_AIM_MS,
      max: st.max / CROSS_PROCESS_P50_AIM_MS,
      target: 1,
    });
  }
  const lookupStats = statsOf(lookup);
  ctx.log(
    `streaming: ${commits} commits in ${(elapsed / 1000).toFixed(1)} s; latency p50 ${quantile(sorted, 0.5).toFixed(1)} ms, p99 ${quantile(sorted, 0.99).toFixed(1)} ms; ${redelivered} redelivered splits`,
  );
  const chart: ChartSpec = {
    file: 'stream-latency.svg',
    title: `Commit-to-consumer latency, local runtime (${measured.length} commits)`,
    xLabel: 'percentile',
    yLabel: 'ms',
    series: [
      {
        name: 'latency',
        points: [0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1].map((q) => ({
          x: q * 100,
          y: quantile(sorted, q),
          label: LABELS.get(q),
        })),
      },
    ],
  };
  return {
    id: 'streaming',
    title: '6. Streaming latency',
    method: [
      `${commits} commits of ${ROWS_PER_COMMIT} new rows each (writeArrow + commit, ${gapMs} ms apart) to a 4-bucket write-only table in a LocalStore; one consumer (\`scan.mode = latest\`, changelog-producer none) in a LocalRuntime in the same process, with discovery triggered by the in-process commit event and the snapshot folder watch (1 s backstop timer), compaction and expiry timers off.`,
      `Latency of a commit = from the moment its snapshot file exists (the create-only put returned, stamped by a store wrapper) to the arrival of the last of its splits at the sink; the first ${WARMUP_COMMITS} commits are not recorded.`,
      `Lookup: the same loop on a table with \`changelog-producer = lookup\` (not write-only): the writer compacts level 0 inline after each APPEND and the consumer reads the changelog of that COMPACT snapshot; latency from the APPEND snapshot's creation to the last changelog row of the commit, so it includes the compaction.`,
      `Cross-process: \`varve tail <table> --from latest --follow\` (and the same with \`--consumer-id\`, through the local runtime) in child OS processes started through bin/varve.mjs; this process commits ${crossCommits} commits ${crossGapMs} ms apart after a warm-up; latency = from the snapshot file's creation here to the child's JSON line arriving on its stdout pipe here. The tails wake on the snapshot folder's change notification (fs.watch; a 200 ms poll stays as the backstop).`,
      'Ratio: median delivery latency in units of the median time of the commit itself (write + commit of the same rows), measured in the same loop.',
    ],
    checks: [
      'The rows delivered (each split once; redeliveries are counted and ignored) sum exactly to the rows committed (checksum), and every recorded commit was delivered.',
      'Lookup: the changelog rows delivered sum exactly to the rows written (each a +I of a new key).',
      "Cross-process: every measured commit's rows are printed by each tail, and each tail printed every row it followed exactly once.",
    ],
    measurements: [
      {
        id: 'latency',
        label: 'commit-to-consumer latency',
        unit: 'ms',
        stats: lat,
        params: Object.fromEntries(PERCENTILES.map((q) => [`p${q * 100}`, +quantile(sorted, q).toFixed(2)])),
      },
      {
        id: 'commit',
        label: `the commit itself (writeArrow + commit of ${ROWS_PER_COMMIT} rows)`,
        unit: 'ms',
        stats: commitStats,
      },
      {
        id: 'latency-lookup',
        label: 'commit-to-consumer latency, changelog-producer lookup (includes the inline compaction)',
        unit: 'ms',
        stats: lookupStats,
      },
      ...crossMeasurements,
    ],
    ratios: [
      {
        id: 'latency-vs-commit',
        label: 'median delivery latency ÷ median commit time',
        value: lat.median / commitStats.median,
        min: lat.min / commitStats.median,
        max: lat.max / commitStats.median,
      },
      {
        id: 'p99-vs-p50',
        label: 'latency p99 ÷ p50 (tail)',
        value: quantile(sorted, 0.99) / lat.median,
        min: quantile(sorted, 0.99) / lat.median,
        max: quantile(sorted, 0.99) / lat.median,
      },
      {
        id: 'lookup-vs-none',
        label: 'median latency, lookup ÷ none (the inline compaction that produces the changelog)',
        value: lookupStats.median / lat.median,
        min: lookupStats.min / lat.median,
        max: lookupStats.max / lat.median,
      },
      ...crossRatios,
    ],
    tables: [
      {
        title: 'Latency percentiles',
        columns: ['path', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'commits recorded', 'redelivered splits'],
        rows: [
          [
            'local runtime, same process, changelog-producer none',
            ...PERCENTILES.map((q) => quantile(sorted, q).toFixed(1)),
            lat.max.toFixed(1),
            measured.length,
            redelivered,
          ],
          [
            'local runtime, same process, changelog-producer lookup',
            ...PERCENTILES.map((q) => quantile(lookupSorted, q).toFixed(1)),
            lookupStats.max.toFixed(1),
            lookup.length,
            '–',
          ],
          ...crossRows,
        ],
      },
    ],
    charts: [chart],
  };
}
