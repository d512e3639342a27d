/**
 * Child process of the memory benchmark (bench/memory/run.ts): each mode does one job and prints
 * {"maxRssMB", "ms", ...} as its last line (`process.resourceUsage().maxRSS`).
 *   gen-jsonl <rows> <path>          the floor of the write: generates the JSONL input file
 *   setup <rows> <runs> <warehouse> <budgetMB>  a 1-bucket table written as <runs> sorted runs of random updates
 *   open <warehouse>                 the floor of compaction and read: loads varve and opens the table
 *   compact <warehouse>              a full compaction of the bucket (compaction.memory-budget set by setup)
 *   read <warehouse> [reuse]         a streamed read (table.scan) of every row; `reuse`: with reuseBuffers
 *   batch-read <warehouse> <threads> a batch read (table.read) of every row with <threads> decode/merge
 *                                    workers (0: on the calling thread); also reports the result's bytes
 */
import { createWriteStream } from 'node:fs';
import { wasmMemory } from 'parquet-wasm';
import { once } from 'node:events';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { configureDecodePool } from '../../lib/format/decode-pool.js';
import { compactTable } from '../../lib/maintenance/compact.js';
import { approximateBytes } from '../../lib/mergetree/write-buffer.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { LocalStore } from '../../lib/store/local-store.js';
import { assertEqual } from '../lib/checksum.js';
import { BENCH_SCHEMA_TEXT, makeRows } from '../lib/data.js';
import { mulberry32 } from '../lib/random.js';

const [mode, ...args] = process.argv.slice(2);
const TABLE = 'bench.memory';
const CHUNK = 100_000;

async function genJsonl(rows: number, path: string): Promise<Record<string, number>> {
  const out = createWriteStream(path);
  const rnd = mulberry32(11);
  for (let from = 0; from < rows; from += 10_000) {
    let text = '';
    for (let k = from; k < Math.min(rows, from + 10_000); k++) {
      text += `{"key":${k},"i32":${(rnd() * 1e9) | 0},"f":${rnd().toFixed(6)},"s":"value-${k.toString(36)}-${((rnd() * 1e6) | 0).toString(36)}","opt":${rnd() < 0.2 ? 'null' : `"o${(rnd() * 1000) | 0}"`}}\n`;
    }
    if (!out.write(text)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
  return { bytes: out.bytesWritten };
}

async function openTable(warehouse: string) {
  return new FolderCatalog(new LocalStore(warehouse)).getTable(TABLE);
}

async function setup(rows: number, runs: number, warehouse: string, budgetMB: string): Promise<Record<string, number>> {
  const table = await new FolderCatalog(new LocalStore(warehouse)).createTable(TABLE, {
    fields: parseSchemaText(BENCH_SCHEMA_TEXT),
    primaryKeys: ['key'],
    options: {
      bucket: '1',
      'write-only': 'true',
      'write-buffer-size': '1 gb',
      'target-file-size': '128 mb',
      'compaction.memory-budget': `${budgetMB} mb`,
      'num-sorted-run.stop-trigger': '50',
    },
  });
  // Each run updates a random `rows / runs` keys of a key space of `rows`: the runs overlap all over.
  const rnd = mulberry32(5);
  const perRun = Math.floor(rows / runs);
  for (let r = 0; r < runs; r++) {
    const writer = table.newWriter();
    for (let from = 0; from < perRun; from += CHUNK) {
      const n = Math.min(CHUNK, perRun - from);
      const keys = new Float64Array(n);
      for (let i = 0; i < n; i++) keys[i] = Math.floor(rnd() * rows);
      await writer.writeArrow(makeRows(keys, r));
    }
    await writer.commit(`run-${r}`);
    await writer.close();
  }
  return {};
}

/**
 * Peaks (MB) of what RSS is made of, sampled every 50 ms: V8 heap, ArrayBuffers outside it (Arrow
 * columns, file bytes) and parquet-wasm's linear memory (it only grows), so a result says where
 * the memory went.
 */
function sampleMemory(): () => Record<string, number> {
  const peak = { heapMB: 0, arrayBuffersMB: 0, wasmMB: 0 };
  const take = () => {
    const m = process.memoryUsage();
    peak.heapMB = Math.max(peak.heapMB, m.heapUsed / 2 ** 20);
    peak.arrayBuffersMB = Math.max(peak.arrayBuffersMB, m.arrayBuffers / 2 ** 20);
    peak.wasmMB = Math.max(peak.wasmMB, wasmMemory().buffer.byteLength / 2 ** 20);
  };
  const timer = setInterval(take, 50);
  return () => {
    clearInterval(timer);
    take();
    return Object.fromEntries(Object.entries(peak).map(([k, v]) => [k, Math.round(v)]));
  };
}

async function main(): Promise<void> {
  const t0 = performance.now();
  const peaks = sampleMemory();
  let extra: Record<string, number> = {};
  if (mode === 'gen-jsonl') extra = await genJsonl(Number(args[0]), args[1]);
  else if (mode === 'setup') extra = await setup(Number(args[0]), Number(args[1]), args[2], args[3]);
  else if (mode === 'open') {
    const table = await openTable(args[0]);
    extra = { files: (await table.snapshots.latest())?.id ?? 0 };
  } else if (mode === 'compact') {
    const summary = await compactTable(await openTable(args[0]), { full: true });
    extra = { filesIn: summary.filesIn, filesOut: summary.filesOut, bytesIn: summary.bytesIn };
  } else if (mode === 'read') {
    const table = await openTable(args[0]);
    let rows = 0;
    // `reuse`: the scan may reuse its decode buffers (as `varve read` and count do); else every batch owns its memory.
    for await (const b of table.scan({ reuseBuffers: args[1] === 'reuse' })) rows += b.numRows;
    // The peak of the scan, taken before the check: the check is a second pass over the table (count()), not the measured read.
    const scanPeakMB = process.resourceUsage().maxRSS / 1024;
    const ms = performance.now() - t0;
    const cpu = process.cpuUsage();
    const cpuMs = (cpu.user + cpu.system) / 1000;
    // The sampler's peaks are the scan's too (taken before the check); stopping it lets the process exit.
    const scanPeaks = peaks();
    assertEqual('memory read: rows', rows, await table.count());
    console.log(JSON.stringify({ maxRssMB: scanPeakMB, ms, cpuMs, rows, ...scanPeaks }));
    return;
  } else if (mode === 'batch-read') {
    // The merged batch read decodes each section into PooledBatchMemory, whose regions a thread
    // keeps (up to 128 MiB, 2 s) for the next section: the peak is the result, the sections being
    // merged, and what each decoding thread keeps.
    await configureDecodePool({ threads: Number(args[1]) });
    const table = await openTable(args[0]);
    const result = await table.read();
    const peakMB = process.resourceUsage().maxRSS / 1024;
    const ms = performance.now() - t0;
    const scanPeaks = peaks();
    const resultMB = approximateBytes(result) / 2 ** 20;
    assertEqual('memory batch read: rows', result.numRows, await table.count());
    // The rows the merge decoded (every version in the live files), in the result's bytes per row.
    const inputRows = (await table.snapshots.latest())!.totalRecordCount;
    const inputMB = (resultMB / Math.max(1, result.numRows)) * inputRows;
    await configureDecodePool({ restart: true });
    console.log(JSON.stringify({ maxRssMB: peakMB, ms, rows: result.numRows, resultMB, inputMB, ...scanPeaks }));
    return;
  } else throw new Error(`unknown mode ${mode}`);
  console.log(
    JSON.stringify({
      maxRssMB: process.resourceUsage().maxRSS / 1024,
      ms: performance.now() - t0,
      ...extra,
      ...peaks(),
    }),
  );
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
