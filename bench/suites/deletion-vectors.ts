/**
 * Benchmark 9, deletion vectors (issue 31): the spread table of §2 (version 0 writes every key,
 * versions 1–4 each a random 40 % of them, so winners sit in every run) written into a table with
 * `deletion-vectors.enabled` and into one without, then
 *   - the write cost: the five writes with deletion-vector maintenance ÷ the same five without;
 *   - the merge-free read of the deletion-vector table ÷ parquet-wasm decoding the same live files;
 *   - the same read ÷ DuckDB (one thread) deduplicating the same files (§2's query).
 */
import { readFile } from 'node:fs/promises';
import type * as arrow from 'apache-arrow';
import { configureDecodePool, defaultDecodeThreads } from '../../lib/format/decode-pool.js';
import { readDeletionIndex } from '../../lib/manifest/deletion-index.js';
import { readLiveFiles } from '../../lib/manifest/scan.js';
import type { Table } from '../../lib/table/table.js';
import { addChecksums, assertChecksum, assertEqual, expectedChecksum, tableChecksum } from '../lib/checksum.js';
import { makeRows, range, sampleKeys, shuffled } from '../lib/data.js';
import { duckChecksum, mergeQuery, openDuckDB } from '../lib/duckdb.js';
import { compare, ratioOf, type RepPlan, type Variant } from '../lib/harness.js';
import { rawParquetDecode } from '../lib/raw-parquet.js';
import type { SuiteContext, SuiteResult } from '../lib/results.js';
import { BENCH_BUCKETS, createBenchTable, freshDir, liveFiles, removeDir, warehouseDir } from '../lib/tables.js';

const VERSIONS = 5;
const SPREAD_SHARE = 0.4;
const DV_OPTIONS = { 'deletion-vectors.enabled': 'true' };

/** The spread writes: per version its keys and their rows (built before any timing). */
interface Workload {
  k: number;
  inputs: arrow.Table[];
  /** The version of each key's newest row. */
  winner: Int32Array;
  /** Checksum of every stored row (all versions). */
  allRows: ReturnType<typeof expectedChecksum>;
  versions: number;
}

function workload(k: number): Workload {
  const winner = new Int32Array(k);
  const inputs: arrow.Table[] = [];
  const parts = [];
  let versions = 0;
  for (let v = 0; v < VERSIONS; v++) {
    const keys = v === 0 ? shuffled(k, 300) : sampleKeys(k, Math.round(k * SPREAD_SHARE), 300 + v);
    for (const key of keys) winner[key] = v;
    versions += keys.length;
    inputs.push(makeRows(keys, v));
    parts.push(expectedChecksum(keys, v));
  }
  return { k, inputs, winner, allRows: addChecksums(parts), versions };
}

/** The five writes, one commit each. */
async function writeAll(table: Table, w: Workload): Promise<void> {
  for (const input of w.inputs) {
    const writer = table.newWriter();
    try {
      await writer.writeArrow(input);
      const r = await writer.commit();
      if (!r.snapshot) throw new Error(`writing ${input.numRows} rows committed nothing`);
    } finally {
      await writer.close();
    }
  }
}

/** Write variants: the same five writes into a fresh table with and without deletion vectors. */
function writeVariant(ctx: SuiteContext, id: string, w: Workload, dv: boolean): Variant<Table, void> {
  const expected = expectedChecksum(range(w.k), w.winner);
  return {
    id,
    setup: async () => createBenchTable(await freshDir(ctx.tmp, id), 't', dv ? DV_OPTIONS : {}),
    run: (table) => writeAll(table, w),
    check: async (_, table) => {
      const snapshot = (await table.snapshots.latest())!;
      assertEqual(`deletion-vectors: ${id} keeps vectors`, snapshot.deletionVectors !== undefined, dv);
      assertChecksum(`deletion-vectors: ${id} read back`, tableChecksum(await table.read()), expected);
    },
    teardown: (table) => removeDir(warehouseDir(table)),
  };
}

/** Runs benchmark 9. */
export async function runDeletionVectors(ctx: SuiteContext): Promise<SuiteResult> {
  const k = ctx.quick ? 100_000 : 1_000_000;
  const plan: RepPlan = ctx.quick ? { warmup: 1, reps: 2 } : { warmup: 1, reps: 5 };
  const w = workload(k);
  await configureDecodePool();
  const writes = await compare(
    plan,
    [writeVariant(ctx, 'dvWrite', w, true), writeVariant(ctx, 'plainWrite', w, false)],
    (line) => ctx.log(`write: ${line}`),
  );

  const table = await createBenchTable(await freshDir(ctx.tmp, 'dv-read'), 't', DV_OPTIONS);
  await writeAll(table, w);
  const snapshot = (await table.snapshots.latest())!;
  const files = await liveFiles(table, snapshot);
  const entries = await readLiveFiles(table.store, table.path, snapshot);
  const vectors = await readDeletionIndex(table.store, table.path, snapshot);
  const deleted = vectors.reduce((s, v) => s + v.cardinality, 0);
  assertEqual('deletion-vectors: stored rows − deleted = keys', w.versions - deleted, k);
  const totalBytes = files.reduce((s, f) => s + f.bytes, 0);
  const expected = expectedChecksum(range(k), w.winner);
  const duck = await openDuckDB();
  const dvRead = (id: string, threads: number | undefined): Variant<undefined, arrow.Table> => ({
    id,
    run: async () => {
      await configureDecodePool(threads === undefined ? {} : { threads });
      return table.read();
    },
    check: (t) => assertChecksum(`deletion-vectors: ${id}`, tableChecksum(t), expected),
  });
  let timings;
  try {
    timings = await compare(
      plan,
      [
        dvRead('dv', 0),
        dvRead('dvDefault', undefined),
        {
          id: 'raw',
          run: async () => {
            const out: arrow.Table[] = [];
            for (const f of files) out.push(rawParquetDecode(new Uint8Array(await readFile(f.path))));
            return out;
          },
          check: (ts: arrow.Table[]) =>
            assertChecksum('deletion-vectors: raw decode', addChecksums(ts.map(tableChecksum)), w.allRows),
        },
        {
          id: 'duckdb',
          run: () => duck.conn.run(`CREATE OR REPLACE TEMP TABLE merged AS ${mergeQuery(files)}`).then(() => undefined),
          check: async () =>
            assertChecksum('deletion-vectors: DuckDB', await duckChecksum(duck.conn, 'merged'), expected),
          teardown: () => duck.conn.run('DROP TABLE merged').then(() => undefined),
        },
      ],
      (line) => ctx.log(`read: ${line}`),
    );
  } finally {
    duck.close();
    await configureDecodePool();
  }
  const MB = +(totalBytes / 1e6).toFixed(1);
  return {
    id: 'deletion-vectors',
    title: '9. Deletion vectors',
    method: [
      `Table: the spread case of §2 — version 0 writes all ${k.toLocaleString('en')} keys, versions 1–4 each a random ${SPREAD_SHARE * 100} % of them (${w.versions.toLocaleString('en')} rows, one commit per version, ${BENCH_BUCKETS} buckets, write-only: ${files.length} level-0 files, ${MB} MB zstd Parquet), with \`deletion-vectors.enabled=true\`: ${deleted.toLocaleString('en')} stored rows are marked deleted, in ${vectors.length} vectors over ${entries.length} files.`,
      'write: the five `writeArrow` + `commit`s into a fresh table with deletion vectors (each commit looks the keys of its new files up in the bucket’s older files and writes the changed vectors: a Puffin file per bucket and the snapshot’s vector index) against the same five into a fresh table without; input rows built before timing; default encoder threads.',
      `read: \`table.read()\` of the latest snapshot: merge-free (each live file decoded, its user columns only, and its vector applied as a filter of the Arrow batches; no merge). One thread (\`VARVE_DECODE_THREADS=0\`) and the default (${defaultDecodeThreads()} decode workers).`,
      'raw: parquet-wasm decoding every live file whole, one after another (the I/O + decode floor; it decodes the system columns too, and drops nothing).',
      'DuckDB: one thread, §2’s query (newest sequence per key joined back) over the same files into a temp table; it does not read the vectors.',
    ],
    checks: [
      `varve reads and DuckDB: ${k.toLocaleString('en')} rows whose checksum equals the generator’s for each key’s newest version; raw: the checksum of all ${w.versions.toLocaleString('en')} stored rows.`,
      'write: after each repetition the table reads back to the newest version of every key; the deletion-vector table’s snapshot carries a vector index, the plain one none.',
    ],
    measurements: [
      {
        id: 'dv-write',
        label: `write with deletion vectors: five commits (${w.versions.toLocaleString('en')} rows)`,
        unit: 'ms',
        stats: writes.dvWrite,
        params: { rows: w.versions },
      },
      {
        id: 'plain-write',
        label: 'the same five commits without deletion vectors',
        unit: 'ms',
        stats: writes.plainWrite,
      },
      {
        id: 'dv-read',
        label: 'merge-free read of the deletion-vector table, one thread',
        unit: 'ms',
        stats: timings.dv,
        params: { files: files.length, MB, deleted },
      },
      {
        id: 'dv-read-default',
        label: `merge-free read, default threads (${defaultDecodeThreads()} decode workers)`,
        unit: 'ms',
        stats: timings.dvDefault,
      },
      { id: 'raw', label: 'raw parquet-wasm decode of the same live files', unit: 'ms', stats: timings.raw },
      { id: 'duckdb', label: 'DuckDB, 1 thread, dedup of the same files', unit: 'ms', stats: timings.duckdb },
    ],
    ratios: [
      {
        id: 'dv-read-vs-raw',
        label: 'deletion-vector read (one thread) ÷ raw decode of the same live files',
        ...ratioOf(timings.dv, timings.raw),
        target: 1.1,
      },
      {
        id: 'dv-read-vs-duckdb',
        label: 'spread case: deletion-vector read ÷ DuckDB, both one thread',
        ...ratioOf(timings.dv, timings.duckdb),
        target: 0.8,
      },
      {
        id: 'dv-write-vs-plain',
        label: 'write with deletion-vector maintenance ÷ the same writes without',
        ...ratioOf(writes.dvWrite, writes.plainWrite),
        target: 1.5,
      },
    ],
  };
}
