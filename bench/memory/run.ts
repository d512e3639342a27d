/**
 * Memory benchmark (issue 12): peak RSS of child processes against a floor process that does
 * only the input generation (or only loads varve and opens the table), for
 *   1. `varve write` of an N-row JSONL file through the CLI with a 32 MB buffer (goal: ≤ floor + 64 MB + buffer),
 *   2. a full compaction of an M-row bucket in 10 sorted runs with a 256 MB budget (goal: ≤ floor + 2 × budget),
 *   3. a streamed read (table.scan) of the M-row table (goal: ≤ floor + 128 MB), the same with
 *      reuseBuffers (what `varve read` and `count` do), and `varve count` through the CLI
 *      (relaunched with the launcher's memory settings),
 *   4. a batch read (table.read, merged into one result) of the M-row table on the calling thread and
 *      with 2 decode/merge workers (goal: ≤ floor + result + decoded input + 128 MB per decoding
 *      thread + 64 MB: each thread that decodes keeps up to 128 MiB of pooled regions),
 * and compaction time per row at M/10 and M rows. Not part of the default test suite.
 *   npm run bench:memory                   N = 2,000,000, M = 10,000,000
 *   npm run bench:memory -- --docs         the same, then writes docs/BENCHMARKS.md §11's measured
 *                                          table (between its bench:memory markers; the hand-written
 *                                          text below them stays) with the date, commit and load
 *   npm run bench:memory -- --write        the write case alone
 *   VARVE_BENCH_SCALE=0.1 npm run bench:memory   (a quick run: sizes × 0.1; --docs then says so)
 * Prints its total wall time at the end.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runChild } from '../lib/child.js';
import { machineInfo } from '../lib/machine.js';
import { spliceMemorySection, type MemoryCase, type MemoryRun } from './docs.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const scale = Number(process.env.VARVE_BENCH_SCALE ?? '1');
const WRITE_ROWS = Math.round(2_000_000 * scale);
const COMPACT_ROWS = Math.round(10_000_000 * scale);
const BUFFER_MB = 32;
const BUDGET_MB = 256;

interface Rss {
  maxRssMB: number;
  ms: number;
  [k: string]: number;
}

const child = (args: string[]) => runChild<Rss>('bench/memory/child.ts', args, { timeoutMs: 3_600_000 });

/**
 * Private memory (MB) of `pid` (Private_Clean + Private_Dirty of /proc/<pid>/smaps_rollup): what
 * a process adds beside another that shares its node binary. 0 where /proc is missing.
 */
function privateMB(pid: number): number {
  try {
    const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    let kb = 0;
    for (const m of text.matchAll(/^Private_(?:Clean|Dirty):\s+(\d+) kB/gm)) kb += Number(m[1]);
    return kb / 1024;
  } catch {
    return 0;
  }
}

/** The child pids of `pid` (Linux /proc), none elsewhere. */
function childPids(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/**
 * Peak RSS (MB) and wall time of `node bin/varve.mjs ...args`, from /usr/bin/time (the largest
 * process of the tree). `write` and `delete` run in a child of the launcher (bin/launch.mjs): the
 * launcher's private memory, sampled while it waits, is added (`launcherMB`), so the peak is what
 * the command costs, not only its larger process.
 */
function varveCli(args: string[], env: Record<string, string>): Promise<Rss> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const p = spawn('/usr/bin/time', ['-f', 'MAXRSS %M', process.execPath, 'bin/varve.mjs', ...args], {
      cwd: REPO,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    let launcherMB = 0;
    const sampler = setInterval(() => {
      for (const launcher of childPids(p.pid!))
        if (childPids(launcher).length > 0) launcherMB = Math.max(launcherMB, privateMB(launcher));
    }, 200);
    p.stderr.on('data', (d) => (err += d));
    p.on('close', (code) => {
      clearInterval(sampler);
      const m = /MAXRSS (\d+)/.exec(err);
      if (code !== 0 || !m) reject(new Error(`varve ${args.join(' ')} exited with ${code}: ${err.slice(-2000)}`));
      else resolve({ maxRssMB: Number(m[1]) / 1024 + launcherMB, launcherMB, ms: performance.now() - t0 });
    });
  });
}

const mb = (n: number) => `${n.toFixed(0)} MB`;

function parseArgs(argv: string[]): { docs: boolean; writeOnly: boolean } {
  let docs = false;
  let writeOnly = false;
  for (const a of argv) {
    if (a === '--docs') docs = true;
    else if (a === '--write') writeOnly = true;
    else {
      console.error(
        `unknown argument ${a}; use --docs or --write (the write case alone), and VARVE_BENCH_SCALE=<factor> for a smaller run`,
      );
      process.exit(2);
    }
  }
  if (docs && writeOnly) {
    console.error('--docs writes every case; run it without --write');
    process.exit(2);
  }
  return { docs, writeOnly };
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const machine = machineInfo();
  const startedAt = new Date();
  const t0 = performance.now();
  const tmp = await mkdtemp(join(os.tmpdir(), 'varve-bench-memory-'));
  const cases: MemoryCase[] = [];
  const say = (s: string) => console.log(`[${((performance.now() - t0) / 1000).toFixed(0)} s] ${s}`);
  try {
    say(
      `scale ${scale}: write ${WRITE_ROWS.toLocaleString('en')} rows, compaction/read ${COMPACT_ROWS.toLocaleString('en')} rows; load ${os
        .loadavg()
        .map((x) => x.toFixed(2))
        .join(' ')}`,
    );
    // 1. varve write through the CLI.
    const jsonl = join(tmp, 'input.jsonl');
    const gen = await child(['gen-jsonl', String(WRITE_ROWS), jsonl]);
    const wh = join(tmp, 'write-wh');
    await varveCli(
      [
        'create',
        'bench.w',
        '--schema',
        'key BIGINT NOT NULL, i32 INT NOT NULL, f DOUBLE NOT NULL, s STRING NOT NULL, opt STRING',
        '--primary-key',
        'key',
        '--option',
        'bucket=4',
        '--option',
        `write-buffer-size=${BUFFER_MB} mb`,
        '--option',
        'write-only=true',
      ],
      { VARVE_WAREHOUSE: wh },
    );
    const write = await varveCli(['write', 'bench.w', jsonl], { VARVE_WAREHOUSE: wh });
    const size = (await stat(jsonl)).size / 1e6;
    cases.push({
      what: `\`varve write\` of ${WRITE_ROWS.toLocaleString('en')} JSONL rows (${size.toFixed(0)} MB), \`write-buffer-size\` ${BUFFER_MB} MB, 4 buckets, via the CLI (floor: the process generating the JSONL)`,
      rows: WRITE_ROWS,
      floorMB: gen.maxRssMB,
      peakMB: write.maxRssMB,
      goalMB: 64 + BUFFER_MB,
      ms: write.ms,
    });
    say(
      `write: floor (generating the ${size.toFixed(0)} MB JSONL) ${mb(gen.maxRssMB)}; varve write ${mb(write.maxRssMB)} (+${mb(write.maxRssMB - gen.maxRssMB)}; goal ≤ +${64 + BUFFER_MB} MB; ` +
        `of it the launcher's private memory ${mb(write.launcherMB)}) in ${(write.ms / 1000).toFixed(1)} s`,
    );
    await rm(jsonl, { force: true });
    if (args.writeOnly) return;

    // 2 and 3. Compaction and streamed read, at M/10 and M rows.
    for (const rows of [Math.round(COMPACT_ROWS / 10), COMPACT_ROWS]) {
      const dir = join(tmp, `compact-${rows}`);
      await child(['setup', String(rows), '10', dir, String(BUDGET_MB)]);
      const floor = await child(['open', dir]);
      const compact = await child(['compact', dir]);
      const read = await child(['read', dir]);
      const reuse = await child(['read', dir, 'reuse']);
      // The reused-buffer scan as a user runs it: `varve count` (relaunched by the launcher, whose private memory is added).
      const cliCount = await varveCli(['count', 'bench.memory'], { VARVE_WAREHOUSE: dir });
      const n = rows.toLocaleString('en');
      cases.push({
        what: `full compaction of ${n} rows in 10 sorted runs, \`compaction.memory-budget\` ${BUDGET_MB} MB (${compact.filesIn} files in, ${compact.filesOut} out)`,
        rows,
        floorMB: floor.maxRssMB,
        peakMB: compact.maxRssMB,
        goalMB: 2 * BUDGET_MB,
        ms: compact.ms,
      });
      cases.push({
        what: `streamed read (\`table.scan()\`) of those ${n} rows`,
        rows,
        floorMB: floor.maxRssMB,
        peakMB: read.maxRssMB,
        goalMB: 128,
        ms: read.ms,
      });
      cases.push({
        what: `reused-buffer streamed read (\`table.scan({ reuseBuffers: true })\`, as \`varve read\` and \`count\` do) of those ${n} rows`,
        rows,
        floorMB: floor.maxRssMB,
        peakMB: reuse.maxRssMB,
        goalMB: 128,
        ms: reuse.ms,
      });
      cases.push({
        what: `\`varve count\` of those ${n} rows via the CLI (a reused-buffer scan; the launcher's memory included)`,
        rows,
        floorMB: floor.maxRssMB,
        peakMB: cliCount.maxRssMB,
        goalMB: 128,
        ms: cliCount.ms,
      });
      say(
        `${n} rows: varve count via the CLI ${mb(cliCount.maxRssMB)} (+${mb(cliCount.maxRssMB - floor.maxRssMB)}; goal ≤ +128 MB; of it the launcher's private memory ${mb(cliCount.launcherMB)}) in ${(cliCount.ms / 1000).toFixed(1)} s`,
      );
      say(
        `${n} rows in 10 sorted runs: floor ${mb(floor.maxRssMB)}; full compaction (budget ${BUDGET_MB} MB) ${mb(compact.maxRssMB)} (+${mb(compact.maxRssMB - floor.maxRssMB)}; goal ≤ +${2 * BUDGET_MB} MB), ` +
          `${(compact.ms / 1000).toFixed(1)} s = ${((compact.ms * 1e6) / rows).toFixed(0)} ns/row, ${compact.filesIn} files in, ${compact.filesOut} out; ` +
          `streamed read ${mb(read.maxRssMB)} (+${mb(read.maxRssMB - floor.maxRssMB)}; goal ≤ +128 MB), ${(read.ms / 1000).toFixed(1)} s = ${((read.ms * 1e6) / rows).toFixed(0)} ns/row, CPU ${(read.cpuMs / 1000).toFixed(1)} s; ` +
          `with reuseBuffers ${mb(reuse.maxRssMB)} (+${mb(reuse.maxRssMB - floor.maxRssMB)}), CPU ${(reuse.cpuMs / 1000).toFixed(1)} s`,
      );
      for (const threads of [0, 2]) {
        const batch = await child(['batch-read', dir, String(threads)]);
        // The calling thread decodes too (small row groups, a section alone): threads + 1 pools at most.
        const decoding = threads + 1;
        cases.push({
          what: `batch read (\`table.read()\`) of those ${n} rows, ${threads === 0 ? 'on the calling thread' : `${threads} decode/merge workers`} (result ${mb(batch.resultMB)}; decoded input ${mb(batch.inputMB)}; each decoding thread keeps up to 128 MiB of pooled regions for 2 s)`,
          rows,
          floorMB: floor.maxRssMB,
          peakMB: batch.maxRssMB,
          goalMB: Math.ceil(batch.resultMB + batch.inputMB + 128 * decoding + 64),
          ms: batch.ms,
        });
        say(
          `${n} rows: batch read, ${threads} workers: ${mb(batch.maxRssMB)} (+${mb(batch.maxRssMB - floor.maxRssMB)}; result ${mb(batch.resultMB)}, decoded input ${mb(batch.inputMB)}, ArrayBuffers peak ${mb(batch.arrayBuffersMB)}) in ${(batch.ms / 1000).toFixed(1)} s`,
        );
      }
      await rm(dir, { recursive: true, force: true });
    }
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
  const run: MemoryRun = {
    scale,
    startedAt: startedAt.toISOString(),
    machine: { ...machine, loadAvgEnd: os.loadavg() },
    durationS: (performance.now() - t0) / 1000,
    cases,
  };
  say(
    `done in ${run.durationS.toFixed(0)} s wall (load ${os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')})`,
  );
  if (args.docs) {
    const path = join(REPO, 'docs/BENCHMARKS.md');
    await writeFile(path, spliceMemorySection(await readFile(path, 'utf8'), run));
    say('wrote the measured table of docs/BENCHMARKS.md §11 (the text below it is unchanged)');
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
