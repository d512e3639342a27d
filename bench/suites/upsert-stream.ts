/**
 * Benchmark 13, an upsert stream: 2,000,000 rows in 20 commits of 100,000 (after the first, 30 %
 * of each commit updates keys written before, 70 % are new keys), then a full read of the table.
 * varve write-only (the merge deferred to the read), varve with its default inline compaction,
 * and DuckDB's PRIMARY KEY table fed with INSERT OR REPLACE. CPU time of the whole process.
 */
import { join } from 'node:path';
import type * as arrow from 'apache-arrow';
import type { Table } from '../../lib/table/table.js';
import { assertChecksum, expectedChecksum, tableChecksum, type Checksum } from '../lib/checksum.js';
import { makeRows, range, sampleKeys } from '../lib/data.js';
import { duckChecksum, openDuckDB } from '../lib/duckdb.js';
import { compare, ratioOf, statsOf, type RepPlan, type Stats } from '../lib/harness.js';
import { mulberry32 } from '../lib/random.js';
import { rawParquetBytes, writeFileSynced } from '../lib/raw-parquet.js';
import type { Measurement, Ratio, SuiteContext, SuiteResult } from '../lib/results.js';
import { BENCH_BUCKETS, createBenchTable, freshDir, removeDir } from '../lib/tables.js';

const COMMITS = 20;
const UPDATE_SHARE = 0.3;

/** Every commit's keys (shuffled: updates among new keys) and the expected state after the last. */
function workload(perCommit: number): { commits: Int32Array[]; expected: Checksum; keys: number } {
  const updates = Math.round(perCommit * UPDATE_SHARE);
  const commits: Int32Array[] = [];
  let next = 0;
  const version = new Int32Array(perCommit * COMMITS).fill(-1);
  for (let c = 0; c < COMMITS; c++) {
    const old = c === 0 ? new Int32Array(0) : sampleKeys(next, updates, 1100 + c);
    const fresh = range(perCommit - old.length, next);
    next += fresh.length;
    const keys = new Int32Array(perCommit);
    keys.set(old);
    keys.set(fresh, old.length);
    const rand = mulberry32(1200 + c);
    for (let i = keys.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      const x = keys[i];
      keys[i] = keys[j];
      keys[j] = x;
    }
    for (const k of keys) version[k] = c;
    commits.push(keys);
  }
  const live = range(next);
  return {
    commits,
    expected: expectedChecksum(
      live,
      Int32Array.from(live, (k) => version[k]),
    ),
    keys: next,
  };
}

/** Runs benchmark 13. */
export async function runUpsertStream(ctx: SuiteContext): Promise<SuiteResult> {
  const perCommit = ctx.quick ? 10_000 : 100_000;
  const plan: RepPlan = ctx.quick ? { warmup: 0, reps: 1, clock: 'cpu' } : { warmup: 1, reps: 2, clock: 'cpu' };
  const w = workload(perCommit);
  const batches: arrow.Table[] = w.commits.map((keys, c) => makeRows(keys, c));
  // DuckDB reads each commit's rows from a Parquet file written here, untimed.
  const inputDir = await freshDir(ctx.tmp, 'upsert-stream-in');
  const inputFiles: string[] = [];
  for (let c = 0; c < COMMITS; c++) {
    const path = join(inputDir, `commit-${c}.parquet`);
    await writeFileSynced(path, rawParquetBytes(batches[c]));
    inputFiles.push(path);
  }
  ctx.log(
    `${COMMITS} commits × ${perCommit.toLocaleString('en')} rows, ${w.keys.toLocaleString('en')} keys at the end`,
  );
  const reads: Record<string, number[]> = { writeOnly: [], inline: [], duckdb: [] };
  const cpuMs = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  const varve = (id: 'writeOnly' | 'inline', options: Record<string, string>) => ({
    id,
    setup: async () => {
      const dir = await freshDir(ctx.tmp, `upsert-stream-${id}`);
      return { dir, table: await createBenchTable(dir, 't', options) };
    },
    run: async (c: { table: Table }) => {
      for (const batch of batches) {
        const writer = c.table.newWriter();
        try {
          await writer.writeArrow(batch);
          await writer.commit();
        } finally {
          await writer.close();
        }
      }
      const r0 = cpuMs();
      const rows = await c.table.read();
      reads[id].push(cpuMs() - r0);
      return rows;
    },
    check: (rows: arrow.Table) => assertChecksum(`upsert stream: varve ${id} read`, tableChecksum(rows), w.expected),
    teardown: (c: { dir: string }) => removeDir(c.dir),
  });
  const duck = await openDuckDB('default');
  const timings = await compare(
    plan,
    [
      varve('writeOnly', {}),
      varve('inline', { 'write-only': 'false' }),
      {
        id: 'duckdb',
        setup: () =>
          duck.conn.run(
            'CREATE OR REPLACE TABLE t (key BIGINT PRIMARY KEY, i32 INTEGER NOT NULL, f DOUBLE NOT NULL, s VARCHAR NOT NULL, opt VARCHAR)',
          ),
        run: async () => {
          for (const f of inputFiles)
            await duck.conn.run(`INSERT OR REPLACE INTO t SELECT * FROM read_parquet('${f.replaceAll("'", "''")}')`);
          const r0 = cpuMs();
          await duck.conn.run('CREATE OR REPLACE TEMP TABLE r AS SELECT * FROM t');
          reads.duckdb.push(cpuMs() - r0);
        },
        check: async () => assertChecksum('upsert stream: DuckDB read', await duckChecksum(duck.conn, 'r'), w.expected),
        teardown: async () => {
          await duck.conn.run('DROP TABLE r');
          await duck.conn.run('DROP TABLE t');
        },
      },
    ],
    ctx.log,
  );
  duck.close();
  await removeDir(inputDir);
  // The reads of the warm-up repetitions are not samples.
  const readStats = (id: string): Stats => statsOf(reads[id].slice(-plan.reps));
  const rows = (perCommit * COMMITS).toLocaleString('en');
  const measurements: Measurement[] = [
    {
      id: 'write-only',
      label: `varve write-only: ${COMMITS} commits (${rows} rows) + full read (process CPU)`,
      unit: 'ms',
      stats: timings.writeOnly,
    },
    {
      id: 'inline',
      label: 'varve with default inline compaction: the same commits + full read (process CPU)',
      unit: 'ms',
      stats: timings.inline,
    },
    {
      id: 'duckdb',
      label:
        'DuckDB PRIMARY KEY table, INSERT OR REPLACE per commit (from Parquet) + full read into a temp table (process CPU)',
      unit: 'ms',
      stats: timings.duckdb,
    },
    {
      id: 'read-write-only',
      label: '… of which the full read, varve write-only',
      unit: 'ms',
      stats: readStats('writeOnly'),
    },
    {
      id: 'read-inline',
      label: '… of which the full read, varve inline compaction',
      unit: 'ms',
      stats: readStats('inline'),
    },
    { id: 'read-duckdb', label: '… of which the full read, DuckDB', unit: 'ms', stats: readStats('duckdb') },
  ];
  const ratios: Ratio[] = [
    {
      id: 'upsert-stream-vs-duckdb',
      label: 'upsert stream + full read: varve (default inline compaction) ÷ DuckDB INSERT OR REPLACE, process CPU',
      ...ratioOf(timings.inline, timings.duckdb),
    },
    {
      id: 'upsert-stream-write-only-vs-duckdb',
      label: 'upsert stream + full read: varve write-only ÷ DuckDB INSERT OR REPLACE, process CPU',
      ...ratioOf(timings.writeOnly, timings.duckdb),
    },
    {
      id: 'upsert-stream-inline-cost',
      label: 'cost of default inline compaction: varve inline ÷ write-only (commits + read), process CPU',
      ...ratioOf(timings.inline, timings.writeOnly),
    },
  ];
  return {
    id: 'upsert-stream',
    title: '13. Upsert stream',
    method: [
      `${COMMITS} commits of ${perCommit.toLocaleString('en')} rows (${rows} in all): the first all new keys, each later one ${UPDATE_SHARE * 100} % updates of random keys written before and ${100 - UPDATE_SHARE * 100} % new keys, shuffled; ${w.keys.toLocaleString('en')} keys at the end. Then a full read.`,
      `varve, timed: per commit \`newWriter()\`, \`writeArrow\`, \`commit\`, then \`table.read()\`; a fresh ${BENCH_BUCKETS}-bucket table per repetition, once write-only (no compaction: the read merges every sorted run) and once with the default options (inline compaction as the writer's triggers call for it).`,
      'DuckDB, timed: default threads, a fresh `PRIMARY KEY` table, per commit `INSERT OR REPLACE INTO t SELECT * FROM read_parquet(<that commit’s rows>)` (the Parquet files written before timing), then `CREATE TEMP TABLE r AS SELECT * FROM t`.',
      'Every sample is the CPU time of the whole process (`process.cpuUsage`, every thread); the three run interleaved in rotating order.',
    ],
    checks: [
      "Each read (varve's, DuckDB's temp table) holds exactly the generator's newest version of every key (checksum).",
    ],
    measurements,
    ratios,
  };
}
