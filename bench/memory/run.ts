/**
 * Memory benchmark (issue 12): peak RSS of child processes against a floor process that does
 * only the input generation (or only loads varve and opens the table), for
 *   1. `varve write` of an N-row JSONL file through the CLI with a 32 MB buffer (goal: ≤ floor + 64 MB + buffer),
 *   2. a full compaction of an M-row bucket in 10 sorted runs with a 256 MB budget (goal: ≤ floor + 2 × budget),
 *   3. a streamed read (table.scan) of the M-row table (goal: ≤ floor + 128 MB),
 * and compaction time per row at M/10 and M rows. Not part of the default test suite.
 *   npx tsx bench/memory/run.ts            N = 2,000,000, M = 10,000,000
 *   VARVE_BENCH_SCALE=0.1 npx tsx bench/memory/run.ts   (a quick run: sizes × 0.1)
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runChild } from '../lib/child.js';

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

/** Peak RSS (MB) and wall time of `node bin/varve.mjs ...args`, from /usr/bin/time. */
function varveCli(args: string[], env: Record<string, string>): Promise<Rss> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const p = spawn('/usr/bin/time', ['-f', 'MAXRSS %M', process.execPath, 'bin/varve.mjs', ...args], { cwd: REPO, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    p.stderr.on('data', (d) => (err += d));
    p.on('close', (code) => {
      const m = /MAXRSS (\d+)/.exec(err);
      if (code !== 0 || !m) reject(new Error(`varve ${args.join(' ')} exited with ${code}: ${err.slice(-2000)}`));
      else resolve({ maxRssMB: Number(m[1]) / 1024, ms: performance.now() - t0 });
    });
  });
}

const mb = (n: number) => `${n.toFixed(0)} MB`;

async function main(): Promise<void> {
  const tmp = await mkdtemp(join(os.tmpdir(), 'varve-bench-memory-'));
  const lines: string[] = [];
  const say = (s: string) => {
    console.log(s);
    lines.push(s);
  };
  try {
    say(`scale ${scale}: write ${WRITE_ROWS.toLocaleString('en')} rows, compaction/read ${COMPACT_ROWS.toLocaleString('en')} rows`);
    // 1. varve write through the CLI.
    const jsonl = join(tmp, 'input.jsonl');
    const gen = await child(['gen-jsonl', String(WRITE_ROWS), jsonl]);
    const wh = join(tmp, 'write-wh');
    await varveCli(['create', 'bench.w', '--schema', 'key BIGINT NOT NULL, i32 INT NOT NULL, f DOUBLE NOT NULL, s STRING NOT NULL, opt STRING', '--primary-key', 'key', '--option', 'bucket=4', '--option', `write-buffer-size=${BUFFER_MB} mb`, '--option', 'write-only=true'], { VARVE_WAREHOUSE: wh });
    const write = await varveCli(['write', 'bench.w', jsonl], { VARVE_WAREHOUSE: wh });
    const size = (await stat(jsonl)).size / 1e6;
    say(`write: floor (generating the ${size.toFixed(0)} MB JSONL) ${mb(gen.maxRssMB)}; varve write ${mb(write.maxRssMB)} (+${mb(write.maxRssMB - gen.maxRssMB)}; goal ≤ +${64 + BUFFER_MB} MB) in ${(write.ms / 1000).toFixed(1)} s`);
    await rm(jsonl, { force: true });

    // 2 and 3. Compaction and streamed read, at M/10 and M rows.
    for (const rows of [Math.round(COMPACT_ROWS / 10), COMPACT_ROWS]) {
      const dir = join(tmp, `compact-${rows}`);
      await child(['setup', String(rows), '10', dir, String(BUDGET_MB)]);
      const floor = await child(['open', dir]);
      const compact = await child(['compact', dir]);
      const read = await child(['read', dir]);
      say(
        `${rows.toLocaleString('en')} rows in 10 sorted runs: floor ${mb(floor.maxRssMB)}; full compaction (budget ${BUDGET_MB} MB) ${mb(compact.maxRssMB)} (+${mb(compact.maxRssMB - floor.maxRssMB)}; goal ≤ +${2 * BUDGET_MB} MB), ` +
          `${(compact.ms / 1000).toFixed(1)} s = ${((compact.ms * 1e6) / rows).toFixed(0)} ns/row, ${compact.filesIn} files in, ${compact.filesOut} out; ` +
          `streamed read ${mb(read.maxRssMB)} (+${mb(read.maxRssMB - floor.maxRssMB)}; goal ≤ +128 MB), ${(read.ms / 1000).toFixed(1)} s = ${((read.ms * 1e6) / rows).toFixed(0)} ns/row`,
      );
      await rm(dir, { recursive: true, force: true });
    }
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
