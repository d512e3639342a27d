/**
 * The benchmark suite: `npm run bench` (full, ~15 min on 2 cores) or `npm run bench -- --quick`
 * (a smoke run). Writes bench/results.json and, when every suite ran, docs/BENCHMARKS.md with its
 * charts in docs/bench/. A wrong result in any benchmark stops the run with exit code 1.
 *   --quick            smaller sizes, fewer repetitions; leaves docs/ alone unless --docs is given
 *   --docs             regenerate docs/BENCHMARKS.md from a quick run too (it says it is one)
 *   --only=a,b         run only these suites (docs are then not regenerated; with --docs, their
 *                      sections and headline rows replace those of docs/BENCHMARKS.md, noted there)
 *   --profile          run the chosen suites under the CPU profiler; print the top frames
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureMoto } from '../e2e/aws/moto.js';
import { BenchCheckError } from './lib/checksum.js';
import { collectGarbage } from './lib/harness.js';
import { machineInfo } from './lib/machine.js';
import { profiled, saveProfile, topFiles, topFrames } from './lib/profile.js';
import { num, renderReport } from './lib/report.js';
import { spliceReport } from './lib/splice.js';
import type { RunResult, SuiteContext, SuiteResult } from './lib/results.js';
import { runCommit } from './suites/commit.js';
import { runCompaction } from './suites/compaction.js';
import { runDeletionVectors } from './suites/deletion-vectors.js';
import { runCompactionCpu } from './suites/compaction-cpu.js';
import { runMergeRead } from './suites/merge-read.js';
import { runPlanning } from './suites/planning.js';
import { runPointRead } from './suites/point-read.js';
import { runStreaming } from './suites/streaming.js';
import { runUpsert } from './suites/upsert.js';
import { runUpsertStream } from './suites/upsert-stream.js';
import { runWrite } from './suites/write.js';

const SUITES: Array<[string, (ctx: SuiteContext) => Promise<SuiteResult>]> = [
  ['write', runWrite],
  ['merge-read', runMergeRead],
  ['upsert', runUpsert],
  ['planning', runPlanning],
  ['commit', runCommit],
  ['streaming', runStreaming],
  ['compaction', runCompaction],
  ['point-read', runPointRead],
  ['deletion-vectors', runDeletionVectors],
  ['compaction-cpu', runCompactionCpu],
  ['upsert-stream', runUpsertStream],
];

const REPO = fileURLToPath(new URL('..', import.meta.url));

/**
 * What follows the generated report's closing "Reproduce:" line in `markdown` (the hand-written
 * sections), or ''. The line ends the generated part: the tail starts after it (blank lines
 * dropped), so no hand-written heading or paragraph is taken for part of the report.
 */
export function handWrittenTail(markdown: string): string {
  const at = markdown.indexOf('\nReproduce: `npm run bench`');
  if (at < 0) return '';
  const end = markdown.indexOf('\n', at + 1);
  return end < 0 ? '' : markdown.slice(end + 1).replace(/^\n+/, '');
}

function parseArgs(argv: string[]): { quick: boolean; only?: string[]; profile: boolean; docs: boolean } {
  let quick = false;
  let only: string[] | undefined;
  let profile = false;
  let docs = false;
  for (const a of argv) {
    if (a === '--quick') quick = true;
    else if (a === '--profile') profile = true;
    else if (a === '--docs') docs = true;
    else if (a.startsWith('--only=')) only = a.slice('--only='.length).split(',').filter(Boolean);
    else {
      console.error(
        `unknown argument ${a}; use --quick, --docs, --only=<suite,...> (${SUITES.map(([n]) => n).join(', ')}) or --profile`,
      );
      process.exit(2);
    }
  }
  const unknown = only?.filter((n) => !SUITES.some(([s]) => s === n)) ?? [];
  if (unknown.length) {
    console.error(`unknown suite ${unknown.join(', ')}; the suites are ${SUITES.map(([n]) => n).join(', ')}`);
    process.exit(2);
  }
  return { quick, only, profile, docs };
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const started = performance.now();
  const clock = () => {
    const s = Math.round((performance.now() - started) / 1000);
    return `${String(Math.floor(s / 60)).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}`;
  };
  const run: RunResult = {
    mode: args.quick ? 'quick' : 'full',
    startedAt: new Date().toISOString(),
    machine: machineInfo(),
    suites: [],
    skipped: [],
  };
  const m = run.machine;
  console.log(
    `varve benchmarks (${run.mode}) — ${m.cpus} × ${m.cpuModel}, ${num(m.memoryGiB)} GiB, Node ${m.node}, load ${m.loadAvgStart.map((x) => x.toFixed(2)).join(' ')}`,
  );
  const tmpRoot = await mkdtemp(join(os.tmpdir(), 'varve-bench-'));
  // The commit suite also runs on S3: moto (reused when AWS_ENDPOINT_URL names one, else started here).
  const moto = !args.only || args.only.includes('commit') ? await ensureMoto() : undefined;
  if (moto) console.log(`moto at ${moto.url}${moto.started ? ' (started for this run)' : ''}`);
  try {
    for (const [name, fn] of SUITES) {
      if (args.only && !args.only.includes(name)) continue;
      const tmp = await mkdtemp(join(tmpRoot, `${name}-`));
      const ctx: SuiteContext = { quick: args.quick, tmp, log: (line) => console.log(`[${clock()}] ${name}: ${line}`) };
      console.log(`[${clock()}] ── ${name}`);
      const t0 = performance.now();
      let result: SuiteResult;
      if (args.profile) {
        const p = await profiled(() => fn(ctx));
        result = p.result;
        const path = join(os.tmpdir(), `varve-bench-${name}-${Date.now()}.cpuprofile`);
        await saveProfile(path, p.profile);
        console.log(`[${clock()}] ${name}: profile written to ${path}; top frames by self time:`);
        for (const f of topFrames(p.profile))
          console.log(`   ${(f.share * 100).toFixed(1).padStart(5)} %  ${num(f.ms).padStart(7)} ms  ${f.frame}`);
        console.log(`[${clock()}] ${name}: self time by file:`);
        for (const f of topFiles(p.profile))
          console.log(`   ${(f.share * 100).toFixed(1).padStart(5)} %  ${num(f.ms).padStart(7)} ms  ${f.file}`);
      } else {
        result = await fn(ctx);
      }
      result.durationS = (performance.now() - t0) / 1000;
      run.suites.push(result);
      for (const r of result.ratios)
        console.log(
          `[${clock()}] ${name}: ${r.label}: ${num(r.value)}× (${num(r.min)}–${num(r.max)})${r.target !== undefined ? `, aim ${r.lowerIsBetter === false ? '≥' : '≤'} ${r.target}×` : ''}`,
        );
      await rm(tmp, { recursive: true, force: true });
      collectGarbage();
    }
  } finally {
    await rm(tmpRoot, { recursive: true, force: true });
    moto?.started?.kill();
  }
  run.machine.loadAvgEnd = os.loadavg();
  run.finishedAt = new Date().toISOString();
  run.durationS = (performance.now() - started) / 1000;
  await writeFile(join(REPO, 'bench/results.json'), `${JSON.stringify(run, null, 2)}\n`);
  // The report is regenerated only from a complete, unprofiled run; a smoke run leaves the
  // reference numbers alone unless asked.
  if (args.only && args.docs && !args.quick && !args.profile) {
    // A partial run: its sections and headline rows replace theirs, the rest stays (bench/lib/splice.ts).
    const previous = await readFile(join(REPO, 'docs/BENCHMARKS.md'), 'utf8');
    const { markdown, charts } = spliceReport(previous, run);
    await writeFile(join(REPO, 'docs/BENCHMARKS.md'), markdown);
    for (const [file, svg] of charts) await writeFile(join(REPO, 'docs/bench', file), svg);
    console.log(
      `[${clock()}] replaced the sections of ${args.only.join(', ')} in docs/BENCHMARKS.md (the others are from the last full run) and wrote bench/results.json`,
    );
  } else if (!args.only && !args.profile && (!args.quick || args.docs)) {
    const { markdown, charts } = renderReport(run);
    await mkdir(join(REPO, 'docs/bench'), { recursive: true });
    // The sections written by hand after the generated part (measured by other tools: memory,
    // AWS requests, CLI start) are kept as they are.
    const previous = await readFile(join(REPO, 'docs/BENCHMARKS.md'), 'utf8').catch(() => '');
    const tail = handWrittenTail(previous);
    await writeFile(join(REPO, 'docs/BENCHMARKS.md'), tail === '' ? markdown : `${markdown}\n${tail}`);
    for (const [file, svg] of charts) await writeFile(join(REPO, 'docs/bench', file), svg);
    console.log(`[${clock()}] wrote docs/BENCHMARKS.md, ${charts.size} charts in docs/bench/ and bench/results.json`);
  } else {
    console.log(
      `[${clock()}] wrote bench/results.json (docs/BENCHMARKS.md is regenerated by a full run of every suite, or with --docs)`,
    );
  }
}

main().catch((e) => {
  if (e instanceof BenchCheckError) {
    console.error(
      `\n${'!'.repeat(72)}\nBENCHMARK RESULT CHECK FAILED — no numbers from this run are valid\n${e.message}\n${'!'.repeat(72)}`,
    );
  } else {
    console.error(e);
  }
  process.exit(1);
});
