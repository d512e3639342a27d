/**
 * Benchmark 3, upsert cost against table size: a batch of 10k updated keys committed into tables
 * of two sizes. varve writes the batch as level-0 files and commits (the cost of the batch);
 * the copy-on-write baseline reads every Parquet file of the table, replaces the updated rows and
 * rewrites the files (the cost of the table), as a format without merge-on-read must.
 */
import { join } from 'node:path';
import { readFile } from 'node:fs/promises';
import type * as arrow from 'apache-arrow';
import { gatherRows, singleBatch } from '../../lib/format/columns.js';
import { readDeltaEntries } from '../../lib/manifest/scan.js';
import { readEntry } from '../../lib/table/read.js';
import type { Table } from '../../lib/table/table.js';
import { keyOf, makeRows, range, sampleKeys, shuffled } from '../lib/data.js';
import {
  BenchCheckError,
  addChecksums,
  assertChecksum,
  assertEqual,
  expectedChecksum,
  tableChecksum,
  type Checksum,
} from '../lib/checksum.js';
import { compare, ratioUnpaired, type RepPlan, type Untimed } from '../lib/harness.js';
import { rawParquetBytes, rawParquetDecode, rawParquetWrite, writeFileSynced } from '../lib/raw-parquet.js';
import type { ChartSpec, Measurement, Ratio, SuiteContext, SuiteResult } from '../lib/results.js';
import { createBenchTable, freshDir, removeDir, warehouseDir, writeVersion } from '../lib/tables.js';

const BATCH = 10_000;
/** Rows per file of the copy-on-write table (and per varve commit while building). */
const FILE_ROWS = 1_000_000;

/** A table state both sides track: the version of every key, and its checksum. */
class ExpectedState {
  readonly versions: Int32Array;
  checksum: Checksum;

  constructor(readonly size: number) {
    this.versions = new Int32Array(size);
    this.checksum = expectedChecksum(range(size), 0);
  }

  /** Applies a batch (keys at `version`): the checksum changes by the replaced rows only. */
  apply(keys: Int32Array, version: number): void {
    const old = expectedChecksum(
      keys,
      Int32Array.from(keys, (k) => this.versions[k]),
    );
    this.checksum = addChecksums([this.checksum, old, expectedChecksum(keys, version)], [1, -1, 1]);
    for (const k of keys) this.versions[k] = version;
  }
}

/** Index of `key` in a sorted BigInt64Array, or -1. */
function find(keys: BigInt64Array, key: bigint): number {
  let lo = 0;
  let hi = keys.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const v = keys[mid];
    if (v === key) return mid;
    if (v < key) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/** Copy-on-write of one file: decode, replace the rows of `keys` with their new version, re-encode. */
function rewriteFile(bytes: Uint8Array, keys: number[], version: number): arrow.Table {
  const old = singleBatch(rawParquetDecode(bytes));
  const n = old.numRows;
  const stored = old.getChild('key')!.data[0].values as BigInt64Array;
  const source = new Uint16Array(n);
  const row = new Uint32Array(n);
  for (let i = 0; i < n; i++) row[i] = i;
  keys.forEach((k, j) => {
    const at = find(stored, BigInt(keyOf(k)));
    if (at < 0) throw new BenchCheckError(`WRONG RESULT in copy-on-write: key index ${k} is not in its file`);
    source[at] = 1;
    row[at] = j;
  });
  return gatherRows([old, makeRows(keys, version)], source, row);
}

interface SizeCase {
  size: number;
  table: Table;
  cowDir: string;
  cowFiles: string[];
  varveState: ExpectedState;
  cowState: ExpectedState;
}

async function buildCase(ctx: SuiteContext, size: number): Promise<SizeCase> {
  const t0 = performance.now();
  const table = await createBenchTable(await freshDir(ctx.tmp, `upsert${size}`));
  const cowDir = await freshDir(ctx.tmp, `cow${size}`);
  const cowFiles: string[] = [];
  for (let from = 0; from < size; from += FILE_ROWS) {
    const count = Math.min(FILE_ROWS, size - from);
    // varve gets the rows in arrival (shuffled) order; the copy-on-write table is kept sorted.
    const order = shuffled(count, from);
    for (let i = 0; i < count; i++) order[i] += from;
    await writeVersion(table, order, 0);
    const path = join(cowDir, `part-${cowFiles.length}.parquet`);
    await rawParquetWrite(path, makeRows(range(count, from), 0));
    cowFiles.push(path);
  }
  ctx.log(`upsert: ${size.toLocaleString('en')}-row tables built in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return { size, table, cowDir, cowFiles, varveState: new ExpectedState(size), cowState: new ExpectedState(size) };
}

/** Runs benchmark 3. */
export async function runUpsert(ctx: SuiteContext): Promise<SuiteResult> {
  const sizes = ctx.quick ? [100_000, 1_000_000] : [1_000_000, 10_000_000];
  const varvePlan: RepPlan = { warmup: 1, reps: ctx.quick ? 4 : 8 };
  const cowPlan: RepPlan = { warmup: 1, reps: ctx.quick ? 2 : 3 };
  const cowLargePlan: RepPlan = { warmup: 0, reps: 2 };
  const measurements: Measurement[] = [];
  const ratios: Ratio[] = [];
  const byCase: Array<{ size: number; varve: Measurement; cow: Measurement }> = [];

  for (const size of sizes) {
    const c = await buildCase(ctx, size);
    let varveVersion = 0;
    let cowVersion = 0;
    const varveVariant = {
      id: 'varve',
      setup: () => {
        const keys = sampleKeys(size, BATCH, 1000 + varveVersion);
        return { keys, input: makeRows(keys, ++varveVersion), version: varveVersion };
      },
      run: async ({ input }: { input: arrow.Table }) => {
        const writer = c.table.newWriter();
        await writer.writeArrow(input);
        const r = await writer.commit();
        await writer.close();
        return r;
      },
      check: async (
        r: Awaited<ReturnType<Table['write']>>,
        { keys, version }: { keys: Int32Array; version: number },
      ) => {
        c.varveState.apply(keys, version);
        assertEqual('upsert: varve snapshot rows', r.snapshot?.deltaRecordCount, BATCH);
        // What the commit added is exactly the batch.
        const added = await readDeltaEntries(c.table.store, c.table.path, r.snapshot!);
        const parts = await Promise.all(added.map(async (e) => tableChecksum(await readEntry(c.table, e))));
        assertChecksum('upsert: varve committed batch', addChecksums(parts), expectedChecksum(keys, version));
      },
    };
    const cowVariant = {
      id: 'cow',
      setup: () => ({ keys: sampleKeys(size, BATCH, 1000 + cowVersion), version: ++cowVersion }),
      run: async ({ keys, version }: { keys: Int32Array; version: number }, untimed: Untimed) => {
        const perFile: number[][] = c.cowFiles.map(() => []);
        for (const k of keys) perFile[Math.floor(k / FILE_ROWS)].push(k);
        const sums: Checksum[] = [];
        for (let f = 0; f < c.cowFiles.length; f++) {
          const buf = await readFile(c.cowFiles[f]);
          const next = rewriteFile(new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength), perFile[f], version);
          // The whole new table never exists at once; each file is checked as it is produced.
          sums.push(untimed.exclude(() => tableChecksum(next)));
          await writeFileSynced(c.cowFiles[f], rawParquetBytes(next));
        }
        return addChecksums(sums);
      },
      check: (sum: Checksum, { keys, version }: { keys: Int32Array; version: number }) => {
        c.cowState.apply(keys, version);
        assertChecksum('upsert: copy-on-write table', sum, c.cowState.checksum);
      },
    };
    // varve's side is cheap: more repetitions. The copy-on-write side of the large table costs
    // tens of seconds per repetition, so it runs after the small one has warmed its code paths.
    const large = size !== sizes[0];
    const timings = {
      ...(await compare(varvePlan, [varveVariant], ctx.log)),
      ...(await compare(large ? cowLargePlan : cowPlan, [cowVariant], ctx.log)),
    };
    if (size === sizes[0]) {
      // Once per run, the merged state of the smaller table: every upsert landed on its key.
      assertChecksum(
        'upsert: varve table after the upserts',
        tableChecksum(await c.table.read()),
        c.varveState.checksum,
      );
    }
    const label = size.toLocaleString('en');
    const varve: Measurement = {
      id: `varve-${size}`,
      label: `varve: write + commit ${BATCH.toLocaleString('en')} rows into ${label} rows`,
      unit: 'ms',
      stats: timings.varve,
      params: { tableRows: size },
    };
    const cow: Measurement = {
      id: `cow-${size}`,
      label: `copy-on-write: rewrite ${label} rows for ${BATCH.toLocaleString('en')} updates`,
      unit: 'ms',
      stats: timings.cow,
      params: { tableRows: size, files: c.cowFiles.length },
    };
    measurements.push(varve, cow);
    byCase.push({ size, varve, cow });
    ratios.push({
      id: `cow-vs-varve-${size}`,
      label: `copy-on-write ÷ varve at ${label} rows (how much cheaper varve's upsert is)`,
      ...ratioUnpaired(timings.cow, timings.varve),
      lowerIsBetter: false,
    });
    await removeDir(c.cowDir);
    await removeDir(warehouseDir(c.table));
  }
  const [small, big] = byCase;
  ratios.unshift({
    id: 'varve-growth',
    label: `varve upsert at ${big.size.toLocaleString('en')} ÷ at ${small.size.toLocaleString('en')} rows (aim: flat)`,
    ...ratioUnpaired(big.varve.stats, small.varve.stats),
    target: 1.5,
  });
  ratios.push({
    id: 'cow-growth',
    label: `copy-on-write at ${big.size.toLocaleString('en')} ÷ at ${small.size.toLocaleString('en')} rows`,
    ...ratioUnpaired(big.cow.stats, small.cow.stats),
  });
  const chart: ChartSpec = {
    file: 'upsert-cost.svg',
    title: `Upsert of ${BATCH.toLocaleString('en')} rows vs table size`,
    xLabel: 'table rows',
    yLabel: 'ms (median, min–max)',
    xLog: true,
    yLog: true,
    series: [
      {
        name: 'varve (write + commit)',
        points: byCase.map((b) => ({
          x: b.size,
          y: b.varve.stats.median,
          lo: b.varve.stats.min,
          hi: b.varve.stats.max,
        })),
      },
      {
        name: 'copy-on-write (read + rewrite)',
        points: byCase.map((b) => ({ x: b.size, y: b.cow.stats.median, lo: b.cow.stats.min, hi: b.cow.stats.max })),
      },
    ],
  };
  return {
    id: 'upsert',
    title: '3. Upsert cost vs table size',
    method: [
      `Tables of ${sizes.map((s) => s.toLocaleString('en')).join(' and ')} rows, built in commits of ${FILE_ROWS.toLocaleString('en')} rows (varve: 4 buckets, write-only, so no inline compaction; one level-0 file per bucket per commit).`,
      `Each repetition upserts ${BATCH.toLocaleString('en')} distinct existing keys (seeded sample) with a new version.`,
      'varve, timed: `writeArrow` + `commit` of the batch (sort, Parquet, put, commit protocol with its manifest reads and conflict checks). Compaction is not part of it: it runs on its own (benchmark 7).',
      `copy-on-write, timed: for each ${FILE_ROWS.toLocaleString('en')}-row sorted Parquet file, read and decode it, find the batch's keys by binary search, replace those rows, re-encode (same settings) and rewrite it fsynced. With random keys every file is touched, as in any table whose updates are not clustered.`,
    ],
    checks: [
      "varve: the snapshot adds exactly the batch, and the files it added decode to the batch's checksum; once per run the whole smaller table reads back to the expected merged state.",
      'copy-on-write: the rewritten files sum to the checksum of the expected state (previous state with the batch applied).',
    ],
    measurements,
    ratios,
    charts: [chart],
  };
}
