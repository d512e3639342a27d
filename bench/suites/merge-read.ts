/**
 * Benchmark 2, merge-read: K keys written 5 times (5 sorted runs per bucket, 5·K versions), read
 * as the merged latest state, against reading the same Parquet files without merging and against
 * DuckDB (one thread) deduplicating the same files with a window function.
 */
import { readFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import type * as arrow from 'apache-arrow';
import type { Table } from '../../lib/table/table.js';
import { range, sampleKeys, shuffled } from '../lib/data.js';
import { addChecksums, assertChecksum, expectedChecksum, tableChecksum, type Checksum } from '../lib/checksum.js';
import { duckChecksum, mergeQuery, openDuckDB } from '../lib/duckdb.js';
import { compare, ratioOf, type RepPlan, type Timings, type Variant } from '../lib/harness.js';
import { configureDecodePool, defaultDecodeThreads } from '../../lib/format/decode-pool.js';
import { rawParquetDecode } from '../lib/raw-parquet.js';
import type { SuiteContext, SuiteResult } from '../lib/results.js';
import { BENCH_BUCKETS, createBenchTable, freshDir, liveFiles, writeVersion } from '../lib/tables.js';

const VERSIONS = 5;
/** The spread case: versions after the first rewrite this share of the keys, each a random sample. */
const SPREAD_SHARE = 0.4;

type Duck = Awaited<ReturnType<typeof openDuckDB>>;

/** varve's merged read at one thread and at its default, and DuckDB's query at one thread and at its default, each checked against `expected`. */
function mergeVariants(
  what: string,
  table: Table,
  sql: string,
  duck: Duck,
  duckDefault: Duck,
  expected: Checksum,
): Variant<any, any>[] {
  const varve = (id: string, threads: number | undefined, label: string): Variant<undefined, arrow.Table> => ({
    id,
    run: async () => {
      await configureDecodePool(threads === undefined ? {} : { threads });
      return table.read();
    },
    check: (t) => assertChecksum(`${what}: ${label}`, tableChecksum(t), expected),
  });
  const duckdb = (id: string, d: Duck, label: string): Variant<undefined, void> => ({
    id,
    run: () => d.conn.run(`CREATE OR REPLACE TEMP TABLE merged AS ${sql}`).then(() => undefined),
    check: async () => assertChecksum(`${what}: ${label}`, await duckChecksum(d.conn, 'merged'), expected),
    teardown: () => d.conn.run('DROP TABLE merged').then(() => undefined),
  });
  return [
    varve('varve', 0, 'varve'),
    varve('varveDefault', undefined, 'varve (default threads)'),
    duckdb('duckdb', duck, 'DuckDB'),
    duckdb('duckdbDefault', duckDefault, 'DuckDB (default threads)'),
  ];
}

/**
 * The same read where the winners are spread over every run: version 0 writes every key, versions
 * 1–4 each a random 40 % of them, so a key's newest version sits in any of the 5 runs and every
 * file's value columns are decoded. Both engines at one thread and at their defaults.
 */
async function spreadCase(
  ctx: SuiteContext,
  k: number,
  plan: RepPlan,
): Promise<{ timings: Timings; files: number; versions: number; MB: number }> {
  const table = await createBenchTable(await freshDir(ctx.tmp, 'merge-spread'));
  const winner = new Int32Array(k);
  let versions = 0;
  for (let v = 0; v < VERSIONS; v++) {
    const keys = v === 0 ? shuffled(k, 300) : sampleKeys(k, Math.round(k * SPREAD_SHARE), 300 + v);
    for (const key of keys) winner[key] = v;
    versions += keys.length;
    await writeVersion(table, keys, v);
  }
  const files = await liveFiles(table, (await table.snapshots.latest())!);
  const expected = expectedChecksum(range(k), winner);
  const sql = mergeQuery(files);
  const duck = await openDuckDB();
  const duckDefault = await openDuckDB('default');
  try {
    const timings = await compare(
      plan,
      mergeVariants('merge-read (spread)', table, sql, duck, duckDefault, expected),
      (line) => ctx.log(`spread: ${line}`),
    );
    return { timings, files: files.length, versions, MB: +(files.reduce((s, f) => s + f.bytes, 0) / 1e6).toFixed(1) };
  } finally {
    duck.close();
    duckDefault.close();
  }
}

/** Runs benchmark 2. */
export async function runMergeRead(ctx: SuiteContext): Promise<SuiteResult> {
  const k = ctx.quick ? 100_000 : 1_000_000;
  const plan: RepPlan = ctx.quick ? { warmup: 1, reps: 2 } : { warmup: 1, reps: 5 };
  const table = await createBenchTable(await freshDir(ctx.tmp, 'merge'));
  const t0 = performance.now();
  for (let v = 0; v < VERSIONS; v++) await writeVersion(table, shuffled(k, 100 + v), v);
  const snapshot = (await table.snapshots.latest())!;
  const files = await liveFiles(table, snapshot);
  ctx.log(
    `merge-read: ${VERSIONS} versions of ${k} keys written in ${((performance.now() - t0) / 1000).toFixed(1)} s, ${files.length} files`,
  );
  const all = range(k);
  const expectedMerged = expectedChecksum(all, VERSIONS - 1);
  const expectedRaw = addChecksums(Array.from({ length: VERSIONS }, (_, v) => expectedChecksum(all, v)));
  const totalBytes = files.reduce((s, f) => s + f.bytes, 0);
  const duck = await openDuckDB();
  const duckDefault = await openDuckDB('default');
  const sql = mergeQuery(files);

  const [varve, varveDefault, duckdb, duckdbDefault] = mergeVariants(
    'merge-read',
    table,
    sql,
    duck,
    duckDefault,
    expectedMerged,
  );
  try {
    const timings = await compare(
      plan,
      [
        varve,
        varveDefault,
        {
          id: 'raw',
          run: async () =>
            Promise.all(files.map(async (f) => rawParquetDecode(new Uint8Array(await readFile(f.path))))),
          check: (ts: arrow.Table[]) =>
            assertChecksum('merge-read: raw read of the files', addChecksums(ts.map(tableChecksum)), expectedRaw),
        },
        duckdb,
        duckdbDefault,
      ],
      ctx.log,
    );
    const spread = await spreadCase(ctx, k, plan);
    return {
      id: 'merge-read',
      title: '2. Merge-read',
      method: [
        `Table: ${k.toLocaleString('en')} keys, each written ${VERSIONS} times (one commit per version, all keys, shuffled): ${BENCH_BUCKETS} buckets × ${VERSIONS} sorted runs = ${files.length} level-0 files, ${(k * VERSIONS).toLocaleString('en')} versions, ${(totalBytes / 1e6).toFixed(1)} MB zstd Parquet.`,
        `varve: \`table.read()\` of the latest snapshot (plan, read every file, merge per bucket, drop system columns). The read decodes key-first: key and \`_VALUE_KIND\` of every file (and \`_SEQUENCE_NUMBER\` too when the sequence ranges of files overlap; here they do not, so the versions of a key are ordered by the range of their file), the merge picks the winners (deduplicate with keys of at most 8 bytes: the runs folded pairwise, a run whose keys the result already holds replacing versions in place), then only the row groups holding winners have their value columns and \`_SEQUENCE_NUMBER\` decoded (here the newest file of each bucket, which wins every key: its columns are taken as decoded, no per-row gather). Measured on one thread (\`VARVE_DECODE_THREADS=0\`: every row group decoded inline), and at the default (${defaultDecodeThreads()} worker threads here: each bucket's section is decoded, merged and value-gathered whole on a worker of the merge pool, its result's Arrow buffers transferred back; the calling thread serves the workers' range reads and concatenates the buckets).`,
        'raw: read and decode the same files with parquet-wasm, no merge (the I/O + decode floor).',
        `DuckDB: one thread (\`SET threads = 1\`), and again at its default (${availableParallelism()} threads on this machine), \`CREATE TEMP TABLE AS\` the query below over the same files, so it materialises its result as varve does. Level-0 files store sequence numbers relative to their batch, so each file gets its sequence base from the manifests as a constant column.`,
        `\`\`\`sql\nWITH v AS (SELECT *, <base> + _SEQUENCE_NUMBER AS _seq FROM read_parquet('<file>') UNION ALL …),\n  newest AS (SELECT key, max(_seq) AS _seq FROM v GROUP BY key)\nSELECT key, i32, f, s, opt FROM v JOIN newest USING (key, _seq) WHERE _VALUE_KIND IN (0, 2)\n\`\`\``,
        `Spread case (the caveat of the headline above: there every key's winner is in the newest run, so varve decodes one run's values where DuckDB reads all five): version 0 writes all ${k.toLocaleString('en')} keys, versions 1–4 each a random ${SPREAD_SHARE * 100} % of them (${spread.versions.toLocaleString('en')} versions, ${spread.files} files, ${spread.MB} MB), so the winners sit in every run and varve decodes the value columns of every file; same engines, same query, same thread settings.`,
        'Of the ways a DuckDB user would write this dedup, measured side by side on this table at one thread (process CPU, 3 runs each, min – median): the newest sequence per key joined back (above) 1.9 – 2.1 s; `arg_max(struct, _base + _SEQUENCE_NUMBER) … GROUP BY key` 3.1 – 3.3 s; `QUALIFY row_number() OVER (PARTITION BY key ORDER BY … DESC) = 1` (the query of earlier runs) 3.3 – 3.7 s; `DISTINCT ON (key) … ORDER BY` 4.6 – 4.9 s. The bench uses the fastest.',
      ],
      checks: [
        `varve and DuckDB: ${k.toLocaleString('en')} rows whose checksum equals the generator's for version ${VERSIONS - 1} of every key (DuckDB's computed in SQL).`,
        `raw: ${(k * VERSIONS).toLocaleString('en')} rows whose checksum equals the sum over all versions.`,
      ],
      measurements: [
        {
          id: 'varve',
          label: `varve merge-read (${k.toLocaleString('en')} keys over ${VERSIONS} runs), one thread`,
          unit: 'ms',
          stats: timings.varve,
          params: { keys: k, versions: k * VERSIONS, files: files.length, MB: +(totalBytes / 1e6).toFixed(1) },
        },
        {
          id: 'varve-default',
          label: `varve merge-read, default threads (${defaultDecodeThreads()} decode-and-merge workers)`,
          unit: 'ms',
          stats: timings.varveDefault,
        },
        { id: 'raw', label: 'raw read + decode of the same files, no merge', unit: 'ms', stats: timings.raw },
        {
          id: 'duckdb',
          label: 'DuckDB, 1 thread, dedup (newest sequence per key joined back) into a temp table',
          unit: 'ms',
          stats: timings.duckdb,
        },
        {
          id: 'duckdb-default',
          label: `DuckDB, default threads (${availableParallelism()} cores), the same query`,
          unit: 'ms',
          stats: timings.duckdbDefault,
        },
        {
          id: 'spread-varve',
          label: 'spread case: varve merge-read, one thread',
          unit: 'ms',
          stats: spread.timings.varve,
          params: { versions: spread.versions, files: spread.files, MB: spread.MB },
        },
        {
          id: 'spread-varve-default',
          label: 'spread case: varve merge-read, default threads',
          unit: 'ms',
          stats: spread.timings.varveDefault,
        },
        { id: 'spread-duckdb', label: 'spread case: DuckDB, 1 thread', unit: 'ms', stats: spread.timings.duckdb },
        {
          id: 'spread-duckdb-default',
          label: 'spread case: DuckDB, default threads',
          unit: 'ms',
          stats: spread.timings.duckdbDefault,
        },
      ],
      ratios: [
        {
          id: 'merge-vs-raw',
          label: 'varve merge-read ÷ raw read of the same files',
          ...ratioOf(timings.varve, timings.raw),
          target: 1.2,
        },
        {
          id: 'merge-vs-duckdb',
          label: 'varve merge-read ÷ DuckDB (1 thread)',
          ...ratioOf(timings.varve, timings.duckdb),
          target: 1,
        },
        {
          id: 'merge-vs-duckdb-default',
          label:
            'varve merge-read ÷ DuckDB (both at their default thread counts: one decode-and-merge worker per core for varve, one thread per core for DuckDB)',
          ...ratioOf(timings.varveDefault, timings.duckdbDefault),
          target: 1,
        },
        {
          id: 'merge-vs-duckdb-spread',
          label: 'spread case (winners in every run): varve merge-read ÷ DuckDB, 1 thread',
          ...ratioOf(spread.timings.varve, spread.timings.duckdb),
          target: 1,
        },
        {
          id: 'merge-vs-duckdb-default-spread',
          label: 'spread case (winners in every run): varve merge-read ÷ DuckDB, default threads',
          ...ratioOf(spread.timings.varveDefault, spread.timings.duckdbDefault),
          target: 1,
        },
      ],
    };
  } finally {
    duck.close();
    duckDefault.close();
  }
}
