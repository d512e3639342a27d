/**
 * Benchmark 12, the CPU of a full compaction against DuckDB and against varve's own codec floor:
 * 10 overlapping sorted runs of 200,000 keys each (a random fifth of 1,000,000 keys per commit, so
 * about 892,000 keys survive), one bucket, merged into one zstd Parquet file sorted by key. CPU
 * time of the whole process (every thread), interleaved repetition by repetition.
 */
import { cp, open, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { readDataFile, writeDataFile } from '../../lib/format/data-file.js';
import { COMPACT_ROW_GROUP_ROWS } from '../../lib/maintenance/compact-io.js';
import { compactTable, type CompactionSummary } from '../../lib/maintenance/compact.js';
import { LocalStore } from '../../lib/store/local-store.js';
import type { Table } from '../../lib/table/table.js';
import * as arrow from 'apache-arrow';
import { parquetMetadata } from 'hyparquet';
import { range, sampleKeys } from '../lib/data.js';
import {
  addChecksums,
  assertChecksum,
  assertEqual,
  expectedChecksum,
  tableChecksum,
  type Checksum,
} from '../lib/checksum.js';
import { compactCopy, duckChecksum, openDuckDB } from '../lib/duckdb.js';
import { compare, ratioOf, type RepPlan } from '../lib/harness.js';
import { rawParquetDecode, writeFileSynced } from '../lib/raw-parquet.js';
import type { Measurement, Ratio, SuiteContext, SuiteResult } from '../lib/results.js';
import { createBenchTable, freshDir, liveFiles, openBenchTable, removeDir, writeVersion } from '../lib/tables.js';

const RUNS = 10;

/** Runs benchmark 12. */
export async function runCompactionCpu(ctx: SuiteContext): Promise<SuiteResult> {
  const k = ctx.quick ? 100_000 : 1_000_000;
  const perRun = k / 5;
  const plan: RepPlan = ctx.quick ? { warmup: 1, reps: 2, clock: 'cpu' } : { warmup: 1, reps: 3, clock: 'cpu' };
  const baseDir = await freshDir(ctx.tmp, 'compact-cpu-base');
  const table = await createBenchTable(baseDir, 't', { bucket: '1' });
  const versions = new Int32Array(k).fill(-1);
  const written: Checksum[] = [];
  for (let v = 0; v < RUNS; v++) {
    const keys = sampleKeys(k, perRun, 900 + v);
    await writeVersion(table, keys, v);
    written.push(expectedChecksum(keys, v));
    for (const key of keys) versions[key] = v;
  }
  const live = range(k).filter((key) => versions[key] >= 0);
  const expected = expectedChecksum(
    live,
    Int32Array.from(live, (key) => versions[key]),
  );
  const allWritten = addChecksums(written);
  const inputs = await liveFiles(table, (await table.snapshots.latest())!);
  assertEqual('compaction CPU: input files', inputs.length, RUNS);
  const bytesIn = inputs.reduce((s, f) => s + f.bytes, 0);
  ctx.log(
    `${RUNS} runs × ${perRun.toLocaleString('en')} rows, ${(bytesIn / 1e6).toFixed(1)} MB in, ${live.length} keys out`,
  );

  // The codec floor encodes exactly what the compaction wrote: its output, decoded once (untimed),
  // with the same choice of string columns written without a dictionary (read from its footer).
  let output: arrow.Table | undefined;
  let plainColumns: string[] = [];
  const duck = await openDuckDB();
  const timings = await compare(
    plan,
    [
      {
        id: 'varve',
        setup: async () => {
          const dir = await freshDir(ctx.tmp, 'compact-cpu-copy');
          await cp(baseDir, dir, { recursive: true });
          return { dir, table: await openBenchTable(new LocalStore(dir)) };
        },
        run: (c: { table: Table }) => compactTable(c.table, { full: true }),
        check: async (summary: CompactionSummary, c: { table: Table }) => {
          assertEqual('compaction CPU: input files compacted', summary.filesIn, RUNS);
          assertEqual('compaction CPU: output files', summary.filesOut, 1);
          assertChecksum('compaction CPU: table after compaction', tableChecksum(await c.table.read()), expected);
          if (output === undefined) {
            const [out] = await liveFiles(c.table, (await c.table.snapshots.latest())!);
            const bytes = new Uint8Array(await readFile(out.path));
            output = await readDataFile(bytes);
            plainColumns = stringColumnsWithoutDictionary(bytes, output.schema);
          }
        },
        teardown: (c: { dir: string }) => removeDir(c.dir),
      },
      {
        id: 'floor',
        setup: () => freshDir(ctx.tmp, 'compact-cpu-floor'),
        run: async (dir: string, untimed) => {
          const sums: Checksum[] = [];
          for (const f of inputs) {
            const decoded = rawParquetDecode(new Uint8Array(await readFile(f.path)));
            sums.push(untimed.exclude(() => tableChecksum(decoded)));
          }
          // The first repetition runs after varve's warm-up, which decoded the output.
          const bytes = writeDataFile(output!, {
            compression: 'zstd',
            sortedBy: 'key',
            rowGroupSize: COMPACT_ROW_GROUP_ROWS,
            uniqueColumns: plainColumns,
          });
          await writeFileSynced(join(dir, 'out.parquet'), bytes);
          return addChecksums(sums);
        },
        check: (sum: Checksum) => assertChecksum('compaction CPU: floor decodes every input row', sum, allWritten),
        teardown: (dir: string) => removeDir(dir),
      },
      {
        id: 'duckdb',
        setup: () => freshDir(ctx.tmp, 'compact-cpu-duck'),
        run: async (dir: string) => {
          const out = join(dir, 'out.parquet');
          await duck.conn.run(compactCopy(inputs, out, COMPACT_ROW_GROUP_ROWS));
          await fsyncFile(out);
          return out;
        },
        check: async (out: string) =>
          assertChecksum(
            'compaction CPU: DuckDB output',
            await duckChecksum(duck.conn, `read_parquet('${out.replaceAll("'", "''")}')`),
            expected,
          ),
        teardown: (dir: string) => removeDir(dir),
      },
    ],
    ctx.log,
  );
  duck.close();
  await removeDir(baseDir);
  const measurements: Measurement[] = [
    {
      id: 'varve',
      label: `varve full compaction, ${RUNS} runs × ${perRun.toLocaleString('en')} rows → ${live.length.toLocaleString('en')} rows, 1 bucket (process CPU)`,
      unit: 'ms',
      stats: timings.varve,
      params: { runs: RUNS, rowsPerRun: perRun, rowsOut: live.length, MBin: +(bytesIn / 1e6).toFixed(1) },
    },
    {
      id: 'floor',
      label:
        "varve's codec floor: parquet-wasm decodes every input file and encodes the compaction's output rows (process CPU)",
      unit: 'ms',
      stats: timings.floor,
    },
    {
      id: 'duckdb',
      label: 'DuckDB (1 thread): dedup of the same files COPY-ed sorted by key into one zstd file (process CPU)',
      unit: 'ms',
      stats: timings.duckdb,
    },
  ];
  const ratios: Ratio[] = [
    {
      id: 'compact-cpu-vs-duckdb',
      label: 'varve full compaction CPU ÷ DuckDB (1 thread) CPU, same output',
      ...ratioOf(timings.varve, timings.duckdb),
      target: 1.5,
    },
    {
      id: 'compact-cpu-vs-floor',
      label:
        "varve full compaction CPU ÷ varve's codec floor (parquet-wasm decode of the inputs + encode of the output)",
      ...ratioOf(timings.varve, timings.floor),
      target: 1.3,
    },
    {
      id: 'floor-vs-duckdb',
      label: 'codec floor CPU ÷ DuckDB (1 thread) CPU: what parquet-wasm alone costs against all of DuckDB',
      ...ratioOf(timings.floor, timings.duckdb),
    },
  ];
  return {
    id: 'compaction-cpu',
    title: '12. Full compaction CPU',
    method: [
      `Table: 1 bucket, ${RUNS} commits, each writing a seeded random ${perRun.toLocaleString('en')} of ${k.toLocaleString('en')} keys (write-only: ${RUNS} overlapping level-0 sorted runs, ${(bytesIn / 1e6).toFixed(1)} MB of zstd Parquet); ${live.length.toLocaleString('en')} keys survive.`,
      "Every sample is the CPU time of the whole process (`process.cpuUsage`, user + system, every thread: varve's and DuckDB's worker threads count), not wall time; the three run interleaved, in rotating order, every repetition.",
      `varve, timed: \`compactTable(table, { full: true })\` on a fresh copy of the folder: read, merge, one zstd output file (${COMPACT_ROW_GROUP_ROWS.toLocaleString('en')}-row groups), fsynced, committed.`,
      "floor, timed: parquet-wasm decodes every input file (the sync reader) and encodes the rows the compaction wrote (its output, decoded once untimed) with varve's own writer settings into one fsynced file: the codec work any compaction here does, with no merge. The floor writes without a dictionary exactly the string columns varve's output has none for (read from its footer): a compaction writes a string column plain when its first rows are at least 90 % distinct values (`opt` here; `s`, 50,000 values, keeps its dictionary).",
      `DuckDB, timed: one thread, \`COPY\` of the §2 dedup query over the ${RUNS} files (absolute \`_SEQUENCE_NUMBER\`, \`_VALUE_KIND\`, \`ORDER BY key\`) to one zstd Parquet file (\`ROW_GROUP_SIZE ${COMPACT_ROW_GROUP_ROWS}\`), fsynced: its own native codec, no commit.`,
    ],
    checks: [
      "varve's compacted table and DuckDB's output file hold exactly the generator's newest state of every key (checksum; DuckDB's in SQL); varve took all 10 files and wrote 1.",
      'The floor decodes the sum of every row written.',
    ],
    measurements,
    ratios,
  };
}

/** The Utf8 columns of a Parquet file none of whose chunks has a dictionary page. */
function stringColumnsWithoutDictionary(bytes: Uint8Array, schema: arrow.Schema): string[] {
  const meta = parquetMetadata(
    bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer,
  );
  return schema.fields
    .filter((f) => arrow.DataType.isUtf8(f.type))
    .map((f) => f.name)
    .filter((name) =>
      meta.row_groups.every((g) =>
        g.columns.every(
          (c) => c.meta_data?.path_in_schema[0] !== name || c.meta_data.dictionary_page_offset === undefined,
        ),
      ),
    );
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
