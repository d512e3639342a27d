/**
 * Benchmark 6, streaming: commit-to-consumer latency in the local runtime (the core of
 * bench/stream-latency.ts): small commits to a table in a local folder warehouse, one consumer, and
 * for each commit the time from its in-process commit event (the snapshot file exists) to the
 * sink receiving its split.
 */
import { LocalRuntime } from '../../lib/runtime/local-runtime.js';
import type { ChangeBatch, StreamSink } from '../../lib/stream/delivery.js';
import { onCommit } from '../../lib/table/commit-events.js';
import { makeRows, range } from '../lib/data.js';
import { addChecksums, assertChecksum, assertEqual, expectedChecksum, tableChecksum, type Checksum } from '../lib/checksum.js';
import { quantile, statsOf } from '../lib/harness.js';
import type { ChartSpec, SuiteContext, SuiteResult } from '../lib/results.js';
import { createBenchTable, freshDir } from '../lib/tables.js';

/** Commits whose latency is not recorded (code paths warming up). */
const WARMUP_COMMITS = 20;
const ROWS_PER_COMMIT = 4;
const PERCENTILES = [0.5, 0.9, 0.99];
const LABELS = new Map([[0.5, 'p50'], [0.9, 'p90'], [0.99, 'p99'], [1, 'max']]);

/** Runs benchmark 6. */
export async function runStreaming(ctx: SuiteContext): Promise<SuiteResult> {
  const commits = ctx.quick ? 220 : 420;
  const gapMs = 10;
  const table = await createBenchTable(await freshDir(ctx.tmp, 'stream'));
  const committedAt = new Map<number, number>();
  const unsubscribe = onCommit((e) => {
    if (e.table === table.name && e.snapshot.commitKind === 'APPEND') committedAt.set(e.snapshot.id, performance.now());
  });
  const latencyBySnapshot = new Map<number, number>();
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
      const at = committedAt.get(batch.snapshotId);
      // The latency of a commit is when its last split arrives (all its buckets delivered).
      if (at !== undefined) latencyBySnapshot.set(batch.snapshotId, now - at);
      sums.push(tableChecksum(batch.data));
    },
  };
  const runtime = new LocalRuntime({ discoveryIntervalMs: 1000, compactionIntervalMs: 0, expiryIntervalMs: 0, log: (l) => ctx.log(`runtime: ${l}`) });
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
    unsubscribe();
  }
  const elapsed = performance.now() - started;
  // Every committed row arrived exactly once: the delivered rows are exactly the written ones.
  assertChecksum('streaming: rows delivered to the consumer', addChecksums(sums), expectedChecksum(range(commits * ROWS_PER_COMMIT), 0));
  const measured = snapshotOfCommit.slice(WARMUP_COMMITS);
  const latencies = measured.map((id) => latencyBySnapshot.get(id));
  assertEqual('streaming: commits with a measured delivery', latencies.filter((x) => x !== undefined).length, measured.length);
  const lat = statsOf(latencies as number[]);
  const sorted = [...lat.samples].sort((a, b) => a - b);
  const commitStats = statsOf(commitMs.slice(WARMUP_COMMITS));
  ctx.log(`streaming: ${commits} commits in ${(elapsed / 1000).toFixed(1)} s; latency p50 ${quantile(sorted, 0.5).toFixed(1)} ms, p99 ${quantile(sorted, 0.99).toFixed(1)} ms; ${redelivered} redelivered splits`);
  const chart: ChartSpec = {
    file: 'stream-latency.svg',
    title: `Commit-to-consumer latency, local runtime (${measured.length} commits)`,
    xLabel: 'percentile',
    yLabel: 'ms',
    series: [
      {
        name: 'latency',
        points: [0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1].map((q) => ({ x: q * 100, y: quantile(sorted, q), label: LABELS.get(q) })),
      },
    ],
  };
  return {
    id: 'streaming',
    title: '6. Streaming latency',
    method: [
      `${commits} commits of ${ROWS_PER_COMMIT} new rows each (writeArrow + commit, ${gapMs} ms apart) to a 4-bucket write-only table in a LocalStore; one consumer (\`scan.mode = latest\`, changelog-producer none) in a LocalRuntime in the same process, with discovery triggered by the in-process commit event (1 s backstop timer), compaction and expiry timers off.`,
      `Latency of a commit = from its commit event (the snapshot file exists) to the arrival of the last of its splits at the sink; the first ${WARMUP_COMMITS} commits are not recorded.`,
      'Ratio: median delivery latency in units of the median time of the commit itself (write + commit of the same rows), measured in the same loop.',
    ],
    checks: ['The rows delivered (each split once; redeliveries are counted and ignored) sum exactly to the rows committed (checksum), and every recorded commit was delivered.'],
    measurements: [
      { id: 'latency', label: 'commit-to-consumer latency', unit: 'ms', stats: lat, params: Object.fromEntries(PERCENTILES.map((q) => [`p${q * 100}`, +quantile(sorted, q).toFixed(2)])) },
      { id: 'commit', label: `the commit itself (writeArrow + commit of ${ROWS_PER_COMMIT} rows)`, unit: 'ms', stats: commitStats },
    ],
    ratios: [
      { id: 'latency-vs-commit', label: 'median delivery latency ÷ median commit time', value: lat.median / commitStats.median, min: lat.min / commitStats.median, max: lat.max / commitStats.median },
      { id: 'p99-vs-p50', label: 'latency p99 ÷ p50 (tail)', value: quantile(sorted, 0.99) / lat.median, min: quantile(sorted, 0.99) / lat.median, max: quantile(sorted, 0.99) / lat.median },
    ],
    tables: [{ title: 'Latency percentiles', columns: ['p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'commits recorded', 'redelivered splits'], rows: [[...PERCENTILES.map((q) => quantile(sorted, q).toFixed(1)), lat.max.toFixed(1), measured.length, redelivered]] }],
    charts: [chart],
  };
}
