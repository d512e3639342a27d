/**
 * Benchmark 7, compaction: a full compaction of a table with 20 sorted runs per bucket, in MB/s of
 * input, against parquet-wasm reading and rewriting the same files (no merge) in the same run; and
 * merge-read time over 1, 5, 10 and 20 sorted runs (time travel to earlier snapshots of the same
 * table) and after the compaction.
 */
import { cp, open, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type * as arrow from 'apache-arrow';
import { COMPACT_ROW_GROUP_ROWS } from '../../lib/maintenance/compact-io.js';
import { compactTable, type CompactionSummary } from '../../lib/maintenance/compact.js';
import { LocalStore } from '../../lib/store/local-store.js';
import type { Table } from '../../lib/table/table.js';
import { range, sampleKeys, shuffled } from '../lib/data.js';
import {
  addChecksums,
  assertChecksum,
  assertEqual,
  expectedChecksum,
  tableChecksum,
  type Checksum,
} from '../lib/checksum.js';
import { compactCopy, duckChecksum, openDuckDB } from '../lib/duckdb.js';
import { compare, ratioOf, statsOf, type RepPlan } from '../lib/harness.js';
import { rawParquetBytes, rawParquetDecode, writeFileSynced } from '../lib/raw-parquet.js';
import type { ChartSpec, Measurement, Ratio, SuiteContext, SuiteResult } from '../lib/results.js';
import {
  BENCH_BUCKETS,
  createBenchTable,
  freshDir,
  liveFiles,
  openBenchTable,
  removeDir,
  warehouseDir,
  writeVersion,
} from '../lib/tables.js';

const RUNS = [1, 5, 10, 20];
/** Each update commit rewrites this fraction of the keys. */
const UPDATE_FRACTION = 0.1;

/** Runs benchmark 7. */
export async function runCompaction(ctx: SuiteContext): Promise<SuiteResult> {
  const k = ctx.quick ? 100_000 : 1_000_000;
  const plan: RepPlan = ctx.quick ? { warmup: 1, reps: 2 } : { warmup: 1, reps: 4 };
  const baseDir = await freshDir(ctx.tmp, 'compact-base');
  const table = await createBenchTable(baseDir);
  const versions = new Int32Array(k);
  const expectedAt = new Map<number, Checksum>();
  const writtenSums: Checksum[] = [];
  const t0 = performance.now();
  const first = shuffled(k, 300);
  await writeVersion(table, first, 0);
  writtenSums.push(expectedChecksum(first, 0));
  expectedAt.set(1, expectedChecksum(range(k), versions));
  const maxRuns = RUNS[RUNS.length - 1];
  for (let v = 1; v < maxRuns; v++) {
    const keys = sampleKeys(k, Math.round(k * UPDATE_FRACTION), 300 + v);
    const s = await writeVersion(table, keys, v);
    assertEqual('compaction: snapshot id of update', s.id, v + 1);
    for (const key of keys) versions[key] = v;
    writtenSums.push(expectedChecksum(keys, v));
    if (RUNS.includes(v + 1)) expectedAt.set(v + 1, expectedChecksum(range(k), versions));
  }
  const latest = (await table.snapshots.latest())!;
  const inputs = await liveFiles(table, latest);
  const bytesIn = inputs.reduce((s, f) => s + f.bytes, 0);
  const allWritten = addChecksums(writtenSums);
  ctx.log(
    `compaction: ${maxRuns} commits (${inputs.length} files, ${(bytesIn / 1e6).toFixed(1)} MB) built in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );

  let compacted: Table | undefined;
  const duck = await openDuckDB();
  const buckets = [...new Set(inputs.map((f) => f.bucket))].sort((a, b) => a - b);
  const compactTimings = await compare(
    plan,
    [
      {
        id: 'varve',
        setup: async () => {
          // Every repetition compacts a fresh copy of the 20-run table.
          const dir = await freshDir(ctx.tmp, 'compact-copy');
          await cp(baseDir, dir, { recursive: true });
          return openBenchTable(new LocalStore(dir));
        },
        run: (t: Table) => compactTable(t, { full: true }),
        check: async (summary: CompactionSummary, t: Table) => {
          assertEqual('compaction: buckets compacted', summary.bucketsCompacted, BENCH_BUCKETS);
          assertEqual('compaction: input files', summary.filesIn, inputs.length);
          assertChecksum(
            'compaction: table after full compaction',
            tableChecksum(await t.read()),
            expectedAt.get(maxRuns)!,
          );
        },
        teardown: async (t: Table) => {
          if (compacted) await removeDir(warehouseDir(compacted));
          compacted = t;
        },
      },
      {
        id: 'raw',
        setup: () => freshDir(ctx.tmp, 'compact-raw'),
        run: async (dir: string, untimed) => {
          const sums: Checksum[] = [];
          for (let i = 0; i < inputs.length; i++) {
            const decoded = rawParquetDecode(new Uint8Array(await readFile(inputs[i].path)));
            sums.push(untimed.exclude(() => tableChecksum(decoded)));
            await writeFileSynced(join(dir, `out-${i}.parquet`), rawParquetBytes(decoded));
          }
          return addChecksums(sums);
        },
        check: (sum: Checksum) => assertChecksum('compaction: raw read + rewrite of the input files', sum, allWritten),
        teardown: (dir: string) => removeDir(dir),
      },
      {
        // Same output: only the merged newest rows are written (the raw case above writes every input row).
        id: 'sameOutput',
        setup: () => freshDir(ctx.tmp, 'compact-duck'),
        run: async (dir: string) => {
          for (const b of buckets) {
            const out = join(dir, `bucket-${b}.parquet`);
            await duck.conn.run(
              compactCopy(
                inputs.filter((f) => f.bucket === b),
                out,
                COMPACT_ROW_GROUP_ROWS,
              ),
            );
            await fsyncFile(out);
          }
          return dir;
        },
        check: async (dir: string) => {
          const files = `read_parquet('${join(dir, 'bucket-*.parquet').replaceAll("'", "''")}')`;
          assertChecksum(
            'compaction: DuckDB same-output baseline',
            await duckChecksum(duck.conn, files),
            expectedAt.get(maxRuns)!,
          );
        },
        teardown: (dir: string) => removeDir(dir),
      },
    ],
    ctx.log,
  );
  duck.close();
  const compactedTable = compacted!;
  const outFiles = await liveFiles(compactedTable, (await compactedTable.snapshots.latest())!);
  const bytesOut = outFiles.reduce((s, f) => s + f.bytes, 0);

  const readVariants = RUNS.map((runs) => ({
    id: `runs-${runs}`,
    run: () => table.read({ snapshotId: runs }),
    check: (t: arrow.Table) =>
      assertChecksum(`compaction: read at ${runs} sorted runs`, tableChecksum(t), expectedAt.get(runs)!),
  }));
  readVariants.push({
    id: 'compacted',
    run: () => compactedTable.read(),
    check: (t: arrow.Table) =>
      assertChecksum('compaction: read after compaction', tableChecksum(t), expectedAt.get(maxRuns)!),
  });
  const reads = await compare(plan, readVariants, ctx.log);
  await removeDir(warehouseDir(compactedTable));

  const mbps = (ms: number) => bytesIn / 1e6 / (ms / 1000);
  const measurements: Measurement[] = [
    {
      id: 'compact',
      label: `varve full compaction (${inputs.length} files, ${(bytesIn / 1e6).toFixed(1)} MB in, ${(bytesOut / 1e6).toFixed(1)} MB out)`,
      unit: 'ms',
      stats: compactTimings.varve,
      params: {
        filesIn: inputs.length,
        MBin: +(bytesIn / 1e6).toFixed(1),
        MBout: +(bytesOut / 1e6).toFixed(1),
        filesOut: outFiles.length,
      },
    },
    {
      id: 'raw',
      label: 'raw: decode + re-encode + write every input file (no merge)',
      unit: 'ms',
      stats: compactTimings.raw,
    },
    {
      id: 'same-output',
      label: `same output: DuckDB (1 thread) dedups the same files and writes only the ${k.toLocaleString('en')} newest rows, one file per bucket`,
      unit: 'ms',
      stats: compactTimings.sameOutput,
    },
    {
      id: 'compact-mbps',
      label: 'varve compaction throughput (input MB/s)',
      unit: 'MB/s',
      stats: statsOf(compactTimings.varve.samples.map(mbps)),
    },
    {
      id: 'raw-mbps',
      label: 'raw read + rewrite throughput (input MB/s)',
      unit: 'MB/s',
      stats: statsOf(compactTimings.raw.samples.map(mbps)),
    },
  ];
  for (const runs of RUNS) {
    const versionsRead = k + (runs - 1) * Math.round(k * UPDATE_FRACTION);
    measurements.push({
      id: `read-${runs}`,
      label: `read at ${runs} sorted run${runs > 1 ? 's' : ''} per bucket (${versionsRead.toLocaleString('en')} versions)`,
      unit: 'ms',
      stats: reads[`runs-${runs}`],
      params: { runs, versions: versionsRead },
    });
  }
  measurements.push({
    id: 'read-compacted',
    label: 'read after full compaction (1 run per bucket)',
    unit: 'ms',
    stats: reads.compacted,
    params: { runs: 1 },
  });
  const ratios: Ratio[] = [
    {
      id: 'compact-vs-raw',
      label: 'varve full compaction ÷ raw read + rewrite of the same input',
      ...ratioOf(compactTimings.varve, compactTimings.raw),
    },
    {
      id: 'compact-vs-same-output',
      label: 'varve full compaction ÷ DuckDB dedup + write of the same merged rows (same output)',
      ...ratioOf(compactTimings.varve, compactTimings.sameOutput),
      // Issue 32's aim for compaction against DuckDB; §12 judges it on process CPU, this row on wall time.
      target: 1.5,
    },
    {
      id: 'read20-vs-compacted',
      label: `read at ${maxRuns} runs ÷ read after compaction`,
      ...ratioOf(reads[`runs-${maxRuns}`], reads.compacted),
    },
    {
      id: 'compacted-vs-1run',
      label: 'read after compaction ÷ read at 1 run (same key count, before any update)',
      ...ratioOf(reads.compacted, reads['runs-1']),
    },
  ];
  const chart: ChartSpec = {
    file: 'read-vs-runs.svg',
    title: `Merge-read of ${k.toLocaleString('en')} keys vs sorted runs per bucket`,
    xLabel: 'sorted runs per bucket',
    yLabel: 'ms (median, min–max)',
    series: [
      {
        name: 'before compaction',
        points: RUNS.map((runs) => ({
          x: runs,
          y: reads[`runs-${runs}`].median,
          lo: reads[`runs-${runs}`].min,
          hi: reads[`runs-${runs}`].max,
        })),
      },
      {
        name: `after full compaction of the ${maxRuns}-run table`,
        points: [{ x: 1, y: reads.compacted.median, lo: reads.compacted.min, hi: reads.compacted.max }],
      },
    ],
  };
  await removeDir(baseDir);
  return {
    id: 'compaction',
    title: '7. Compaction and read amplification',
    method: [
      `Table: ${k.toLocaleString('en')} keys written once (shuffled), then ${maxRuns - 1} commits each updating a seeded random ${UPDATE_FRACTION * 100}% of the keys: snapshot n has n sorted runs per bucket (${BENCH_BUCKETS} buckets, write-only, so nothing compacts inline).`,
      `Compaction, timed: \`compactTable(table, { full: true })\` on a fresh copy of the folder per repetition (all ${inputs.length} files, ${(bytesIn / 1e6).toFixed(1)} MB of zstd Parquet, into one file per bucket, plus the COMPACT commits). MB/s = input bytes / time.`,
      'raw, timed: decode every input file with parquet-wasm, re-encode it with the same settings and write it fsynced: the same bytes in, with no merge (so it writes more rows than the compaction).',
      `same output, timed: DuckDB on one thread, per bucket, \`COPY\` the §2 dedup query over that bucket's input files (plus the absolute \`_SEQUENCE_NUMBER\` and \`_VALUE_KIND\`, \`ORDER BY key\`) \`TO\` one Parquet file (\`COMPRESSION zstd, ROW_GROUP_SIZE ${COMPACT_ROW_GROUP_ROWS}\`), then fsync it: the rows a full compaction writes, by the plain method a user would reach for; DuckDB's own writer, no commit.`,
      'Reads, timed: `table.read({ snapshotId: n })` for n = 1, 5, 10, 20 (time travel in the same table), and `table.read()` of the compacted copy.',
    ],
    checks: [
      "Every read (and the compacted table, read back after each compaction) matches the generator's expected state at that snapshot (checksum).",
      'The compaction compacted every bucket and took every input file; the raw rewrite decodes to the sum of everything written; the DuckDB output files hold exactly the expected newest state (checksum in SQL).',
    ],
    measurements,
    ratios,
    charts: [chart],
  };
}

/** Fsyncs a file written by another writer (DuckDB's COPY), as LocalStore does for every object. */
async function fsyncFile(path: string): Promise<void> {
  const fh = await open(path, 'r+');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
