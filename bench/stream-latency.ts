/**
 * Commit-to-consumer latency in the local runtime: one-row commits to a table in a local folder
 * warehouse, a consumer printing nothing, and for each commit the time from the in-process commit
 * event (the snapshot file exists) to the sink receiving the change. Prints p50/p90/p99/max;
 * asserts nothing.
 *   npx tsx bench/stream-latency.ts [commits=300] [changelog-producer=none] [gapMs=5] [compaction=inline|off]
 * With `lookup` the change is the changelog of the COMPACT snapshot the writer commits after the
 * APPEND one, so the time includes that compaction. The writer compacts inline in the same
 * process (Parquet work that holds the event loop); `off` raises the compaction triggers so the
 * numbers show the streaming path alone (not with `lookup`, which needs its compactions).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FolderCatalog } from '../lib/catalog/folder-catalog.js';
import { LocalRuntime } from '../lib/runtime/local-runtime.js';
import { parseSchemaText } from '../lib/schema/parse.js';
import { LocalStore } from '../lib/store/local-store.js';
import { callbackSink } from '../lib/stream/sinks.js';
import { onCommit } from '../lib/table/commit-events.js';

const commits = Number(process.argv[2] ?? 300);
const producer = process.argv[3] ?? 'none';
const gapMs = Number(process.argv[4] ?? 5);
const compaction = process.argv[5] ?? 'inline';

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'varve-latency-'));
  const table = await new FolderCatalog(new LocalStore(dir)).createTable('bench.latency', {
    fields: parseSchemaText('id BIGINT, n BIGINT'),
    primaryKeys: ['id'],
    options: {
      bucket: '4',
      'changelog-producer': producer,
      ...(compaction === 'off'
        ? { 'num-sorted-run.compaction-trigger': '100000', 'num-sorted-run.stop-trigger': '100000' }
        : {}),
    },
  });
  const committedAt = new Map<bigint, number>(); // n → time of its APPEND commit event
  const latencies: number[] = [];
  let next = 0n;
  const unsubscribe = onCommit((e) => {
    if (e.table === table.name && e.snapshot.commitKind === 'APPEND') committedAt.set(next, performance.now());
  });
  let received = 0;
  const sink = callbackSink((changes) => {
    const now = performance.now();
    for (const c of changes) {
      if (c.kind === '-U') continue;
      const at = committedAt.get(c.row.n as bigint);
      if (at !== undefined) latencies.push(now - at);
      received++;
    }
  });
  // A 1 s backstop: COMPACT commits (the lookup changelog) publish no commit event yet.
  const runtime = new LocalRuntime({
    discoveryIntervalMs: 1000,
    compactionIntervalMs: 0,
    expiryIntervalMs: 0,
    log: (l) => console.error(l),
  });
  await runtime.addConsumer({ table, consumerId: 'bench', sink, stream: { mode: 'latest' } });
  await runtime.start();
  const started = performance.now();
  for (let i = 0; i < commits; i++) {
    next = BigInt(i);
    await table.write([{ id: BigInt(i % 64), n: next }]);
    if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
  }
  await runtime.idle(120_000);
  const elapsed = performance.now() - started;
  await runtime.stop();
  unsubscribe();
  rmSync(dir, { recursive: true, force: true });

  const sorted = [...latencies].sort((a, b) => a - b);
  const f = (ms: number) => `${ms.toFixed(1)} ms`;
  console.log(
    `varve local runtime, commit-to-consumer latency, changelog-producer=${producer}, compaction ${compaction}, ` +
      `${commits} commits (${gapMs} ms apart), local folder warehouse`,
  );
  console.log(`  received ${received} changes for ${latencies.length} commits in ${(elapsed / 1000).toFixed(1)} s`);
  console.log(
    `  p50 ${f(percentile(sorted, 50))}  p90 ${f(percentile(sorted, 90))}  p99 ${f(percentile(sorted, 99))}  max ${f(sorted[sorted.length - 1])}`,
  );
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
