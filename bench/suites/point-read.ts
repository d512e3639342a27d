/**
 * Benchmark: point and key-range reads. A table of K keys in 4 buckets, read whole, read for one
 * key (`where: 'key = X'` on the whole primary key: one bucket by the bucket function, then the
 * row groups whose key statistics hold X, then only X's rows decoded), and read for a 1 % key
 * range (every bucket, the row groups of the range). DuckDB (one thread) answers the same point
 * query over the same files as the baseline of what a columnar engine does with row-group statistics.
 */
import { keyOf } from '../lib/data.js';
import { assertChecksum, assertEqual, expectedChecksum, tableChecksum } from '../lib/checksum.js';
import { duckChecksum, mergeQuery, openDuckDB } from '../lib/duckdb.js';
import { compare, ratioOf, type RepPlan } from '../lib/harness.js';
import { mulberry32 } from '../lib/random.js';
import type { SuiteContext, SuiteResult } from '../lib/results.js';
import { BENCH_BUCKETS, createBenchTable, freshDir, liveFiles, writeVersion } from '../lib/tables.js';
import { range } from '../lib/data.js';

/**
 * The same rows written with other `parquet.*` options, for a user choosing between a smaller
 * file and a cheaper key-range read: a string column's whole dictionary page is decoded before
 * any of its rows, so a few rows of a chunk cost what thousands do (reported, no aim).
 */
const WRITER_VARIANTS = [
  { id: 'dict64k', option: 'parquet.dictionary.page.size=64kb', options: { 'parquet.dictionary.page.size': '64kb' } },
  { id: 'nodict', option: 'parquet.enable.dictionary=false', options: { 'parquet.enable.dictionary': 'false' } },
] as const;

/** Runs the point-read benchmark. */
export async function runPointRead(ctx: SuiteContext): Promise<SuiteResult> {
  const k = ctx.quick ? 200_000 : 1_000_000;
  const plan: RepPlan = ctx.quick ? { warmup: 1, reps: 3 } : { warmup: 1, reps: 7 };
  const table = await createBenchTable(await freshDir(ctx.tmp, 'point'));
  await writeVersion(table, range(k), 0);
  const files = await liveFiles(table, (await table.snapshots.latest())!);
  const variants = [];
  for (const v of WRITER_VARIANTS) {
    const t = await createBenchTable(await freshDir(ctx.tmp, `point-${v.id}`), 't', v.options);
    await writeVersion(t, range(k), 0);
    const bytes = (await liveFiles(t, (await t.snapshots.latest())!)).reduce((s, f) => s + f.bytes, 0);
    variants.push({ ...v, table: t, bytes });
  }
  const span = Math.round(k / 100);
  const next = mulberry32(4242);
  const pick = () => Math.floor(next() * k);
  // Each repetition asks for another key (and range): nothing is answered from a cache of the last one.
  let point = pick();
  let from = Math.min(pick(), k - span);
  const rangeOf = (t: typeof table, id: string) => ({
    id,
    setup: () => (from = Math.min(pick(), k - span)),
    run: (f: number) => t.read({ where: `key >= ${keyOf(f)} AND key < ${keyOf(f + span)}` }),
    check: (r: Awaited<ReturnType<typeof t.read>>, f: number) =>
      assertChecksum(`point-read: ${id} from key ${keyOf(f)}`, tableChecksum(r), expectedChecksum(range(span, f), 0)),
  });
  const fullOf = (t: typeof table, id: string) => ({
    id,
    run: () => t.read(),
    check: (r: Awaited<ReturnType<typeof t.read>>) =>
      assertChecksum(`point-read: ${id}`, tableChecksum(r), expectedChecksum(range(k), 0)),
  });
  const duck = await openDuckDB();
  const merged = mergeQuery(files);
  try {
    const timings = await compare(
      plan,
      [
        ...variants.flatMap((v) => [fullOf(v.table, `full-${v.id}`), rangeOf(v.table, `range-${v.id}`)]),
        fullOf(table, 'full'),
        {
          id: 'point',
          setup: () => (point = pick()),
          run: (x: number) => table.read({ where: `key = ${keyOf(x)}` }),
          check: (t, x: number) =>
            assertChecksum(`point-read: key ${keyOf(x)}`, tableChecksum(t), expectedChecksum([x], 0)),
        },
        rangeOf(table, 'range'),
        {
          id: 'duckdb',
          setup: () => pick(),
          run: (x: number) =>
            duck.conn
              .run(`CREATE OR REPLACE TEMP TABLE hit AS SELECT * FROM (${merged}) WHERE key = ${keyOf(x)}`)
              .then(() => x),
          check: async (x: number) =>
            assertChecksum(
              `point-read: DuckDB key ${keyOf(x)}`,
              await duckChecksum(duck.conn, 'hit'),
              expectedChecksum([x], 0),
            ),
        },
      ],
      ctx.log,
    );
    const defaultBytes = files.reduce((s, f) => s + f.bytes, 0);
    const mb = (bytes: number) => (bytes / 1e6).toFixed(1);
    // The mechanism, once, off the clock: what the point read skipped.
    let explain: import('../../lib/table/read-pruning.js').ReadExplain | undefined;
    await table.read({ where: `key = ${keyOf(point)}`, explain: (e) => (explain = e) });
    assertEqual('point-read: files read', explain!.filesRead, 1);
    const rg = explain!.rowGroups!;
    ctx.log(
      `point-read: explain ${JSON.stringify({ filesRead: explain!.filesRead, skippedByBucket: explain!.skippedByBucket, ...rg })}; last range from key index ${from}`,
    );
    return {
      id: 'point-read',
      title: '8. Point and key-range reads',
      method: [
        `Table: ${k.toLocaleString('en')} keys written once: ${BENCH_BUCKETS} buckets, ${files.length} level-0 files (row groups of 65,536 rows), ${(files.reduce((s, f) => s + f.bytes, 0) / 1e6).toFixed(1)} MB zstd Parquet.`,
        "full: `table.read()`. point: `table.read({ where: 'key = X' })`, another X each repetition: the bucket function names one bucket (the other files are skipped unread), the row groups of its file whose `key` statistics exclude X are skipped, the one left has its key column decoded and binary-searched, and only X's row of the other columns is decoded (parquet-rs skips the pages around it).",
        `range: \`key >= A AND key < B\` over ${span.toLocaleString('en')} keys (1 %): every bucket, only the row groups and rows of the range.`,
        `Writer options (reported, no aim): the same rows in tables created with ${variants.map((v) => `\`${v.option}\``).join(' and ')}, each read whole and for a 1 % range; their ratios are to the default table's full read, and their files' size to the default table's.`,
        'DuckDB: one thread, the same point query over the merge of the same files (`SELECT * FROM (<dedup>) WHERE key = X` into a temp table; DuckDB pushes the filter into its Parquet scan and skips row groups by their statistics).',
        `Point read's --explain, once after the timed runs: ${explain!.skippedByBucket} files skipped by bucket, ${rg.skippedByStats} row groups skipped by key statistics, ${rg.skippedByKeys} by decoded keys, ${rg.read} read with ${rg.rowsRead} row(s) decoded.`,
      ],
      checks: [
        'full: the generator checksum of every key; point and range: the checksum of exactly the asked keys (DuckDB too, computed in SQL).',
      ],
      measurements: [
        {
          id: 'full',
          label: `full read of ${k.toLocaleString('en')} keys`,
          unit: 'ms',
          stats: timings.full,
          params: { keys: k, files: files.length },
        },
        { id: 'point', label: 'point read on the whole primary key', unit: 'ms', stats: timings.point },
        { id: 'range', label: `key-range read (${span.toLocaleString('en')} keys)`, unit: 'ms', stats: timings.range },
        { id: 'duckdb', label: 'DuckDB, 1 thread, the same point query', unit: 'ms', stats: timings.duckdb },
        ...variants.flatMap((v) => [
          { id: `full-${v.id}`, label: `full read, ${v.option}`, unit: 'ms', stats: timings[`full-${v.id}`] },
          {
            id: `range-${v.id}`,
            label: `key-range read (${span.toLocaleString('en')} keys), ${v.option}`,
            unit: 'ms',
            stats: timings[`range-${v.id}`],
          },
        ]),
      ],
      ratios: [
        {
          id: 'point-vs-full',
          label: 'point read ÷ full read of the same table',
          ...ratioOf(timings.point, timings.full),
          target: 0.1,
        },
        { id: 'range-vs-full', label: '1 % key-range read ÷ full read', ...ratioOf(timings.range, timings.full) },
        {
          id: 'point-vs-duckdb',
          label: 'point read ÷ DuckDB point query (1 thread)',
          ...ratioOf(timings.point, timings.duckdb),
        },
        ...variants.flatMap((v) => [
          {
            id: `range-${v.id}-vs-full`,
            label: `1 % key-range read with ${v.option} ÷ full read (default table)`,
            ...ratioOf(timings[`range-${v.id}`], timings.full),
          },
          {
            id: `full-${v.id}-vs-full`,
            label: `full read with ${v.option} ÷ full read (default table)`,
            ...ratioOf(timings[`full-${v.id}`], timings.full),
          },
        ]),
      ],
      tables: [
        {
          title: 'Data files of the same rows by writer options',
          columns: ['options', 'MB (zstd)', '÷ default'],
          rows: [
            ['defaults (dictionaries for STRING columns, 1 MB dictionary pages)', mb(defaultBytes), '1.00×'],
            ...variants.map((v) => [v.option, mb(v.bytes), `${(v.bytes / defaultBytes).toFixed(2)}×`]),
          ],
        },
      ],
    };
  } finally {
    duck.close();
  }
}
