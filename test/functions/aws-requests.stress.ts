/**
 * AWS requests per hour and Lambda GB-s of one varve table on moto (docs/BENCHMARKS.md §9, the
 * cost model in docs/AWS.md). A bench, not part of the default suite (`npm run stress` runs it):
 *
 *   VARVE_BENCH_COMMITS=30 VARVE_BENCH_JSON=results.json \
 *     npx vitest run --config vitest.stress.config.ts test/functions/aws-requests.stress.ts
 *
 * On moto (test/global-setup.ts starts one unless AWS_ENDPOINT_URL is set), deploys one table (2 buckets, queue
 * commit mode) with one consumer, and runs the functions in-process the way Lambda would at one
 * commit per second: per commit one ingest batch (20 rows), the group commit, one discovery run
 * (what the `Snapshot Committed` event triggers), the split reader (a no-op sink), and the
 * compaction worker, modelled on a virtual clock: a job starts when its worker is free (one job
 * at a time per table; a job busy for d seconds delays the next by d), so jobs sent meanwhile
 * wait in the queue as they would on AWS. Then the idle table: discovery with nothing new, the
 * 15-minute expiry run, and the daily orphan-scan run.
 *
 * Every request of every AWS SDK client varve makes is counted by an SDK middleware (installed
 * through lib/store/client-decorator.ts) and attributed to the function running; the harness's
 * own requests (the producer's sends, the event source mapping's receives and deletes) are not
 * varve's and not counted. Each handler invocation's wall-clock duration × its configured memory
 * (infra defaults) is its GB-s; CPU time is recorded beside it (the wall clock on a shared machine
 * against a local moto is an estimate of Lambda's billed duration, not a measurement of it).
 */
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { createCommitHandler } from '../../functions/commit.js';
import { createCompactHandler } from '../../functions/compact.js';
import { createDiscoverHandler } from '../../functions/discover.js';
import { createExpireHandler } from '../../functions/expire.js';
import { createIngestHandler } from '../../functions/ingest.js';
import { createStreamHandler } from '../../functions/shared/stream-handler.js';
import { onAwsRequest } from '../../bench/lib/aws-requests.js';
import { describe, expect, it } from 'vitest';
import { awsAvailable } from '../helpers/aws.js';
import { createOrders, deploy, drain, pollOnce, powertoolsEnv, reopen, scheduledEvent, sendBodies } from './harness.js';

/** Memory of each function as infra/ configures it by default (MB). */
const MEMORY_MB = { ingest: 1769, commit: 1024, discover: 1024, read: 1769, compact: 3008, expire: 1024 } as const;
type Fn = keyof typeof MEMORY_MB;

/** One phase's measurements per function. */
interface Tally {
  invocations: number;
  wallMs: number;
  cpuMs: number;
  requests: Map<string, number>;
}

function newTally(): Tally {
  return { invocations: 0, wallMs: 0, cpuMs: 0, requests: new Map() };
}

let phase = new Map<Fn, Tally>();
let running: Fn | undefined;

/** Counts every request of varve's clients under the function running now (bench/lib/aws-requests.ts). */
function installCounter(): () => void {
  return onAwsRequest((r) => {
    if (!running) return;
    const t = tallyOf(running);
    const key = `${r.service}:${r.command}`;
    t.requests.set(key, (t.requests.get(key) ?? 0) + 1);
  });
}

function tallyOf(fn: Fn): Tally {
  let t = phase.get(fn);
  if (!t) phase.set(fn, (t = newTally()));
  return t;
}

/** Runs one handler invocation of `fn`, timing it. */
async function invoke<T>(fn: Fn, run: () => Promise<T>): Promise<T> {
  running = fn;
  const cpu = process.cpuUsage();
  const t0 = performance.now();
  try {
    return await run();
  } finally {
    const t = tallyOf(fn);
    t.invocations++;
    t.wallMs += performance.now() - t0;
    const used = process.cpuUsage(cpu);
    t.cpuMs += (used.user + used.system) / 1000;
    running = undefined;
  }
}

function total(m: Map<string, number>): number {
  return [...m.values()].reduce((a, b) => a + b, 0);
}

function gbs(fn: Fn, t: Tally): number {
  return (t.wallMs / 1000) * (MEMORY_MB[fn] / 1024);
}

type SqsFn = (e: SQSEvent) => Promise<SQSBatchResponse>;

/**
 * S3 request classes at list price: PUT, COPY, POST, LIST ($0.005/1000) vs GET, HEAD and others
 * ($0.0004/1000); DELETE is free. A conditional PUT (counted as `PutObject(if-none-match)` or
 * `PutObject(if-match)`, bench/lib/aws-requests.ts) is a PUT: it was once counted GET-class.
 */
function s3Class(api: string): 'put' | 'get' | 'free' {
  if (
    /^S3:(PutObject(\(if-(none-)?match\))?|ListObjectsV2|CopyObject|CreateMultipartUpload|UploadPart|CompleteMultipartUpload)$/.test(
      api,
    )
  )
    return 'put';
  if (/^S3:(DeleteObject|DeleteObjects)$/.test(api)) return 'free';
  return 'get';
}

/** Runs the bench; returns what it measured (also printed, and written to VARVE_BENCH_JSON when set). */
async function measureTable(
  commits: number,
): Promise<{ requestsPerCommit: number; compactionJobs: number; rowsRead: number }> {
  const uninstall = installCounter();
  powertoolsEnv();
  try {
    // Prepare: one table, queue commit mode, one consumer, warm containers (each function opened the table once)
    const d = await deploy();
    await createOrders(d);
    const env = d.env('queue');
    const ingest = createIngestHandler(env) as SqsFn;
    const commit = createCommitHandler(env);
    const discover = createDiscoverHandler(env);
    const compact = createCompactHandler(env);
    const expire = createExpireHandler(env);
    let rowsRead = 0;
    const read = createStreamHandler(async (changes) => void (rowsRead += changes.length), env) as SqsFn;
    await discover(scheduledEvent());

    // Act 1: `commits` commits, one per virtual second, compaction on its worker's clock
    phase = new Map();
    let workerFreeAt = 0;
    let jobsRun = 0;
    let jobsWaiting = 0;
    for (let i = 0; i < commits; i++) {
      const now = i;
      await sendBodies(d.ingestUrl, [
        JSON.stringify(Array.from({ length: 20 }, (_, k) => ({ id: (i * 20 + k) % 500, status: `s${i}`, amount: k }))),
      ]);
      await drain(d.ingestUrl, (e) => invoke('ingest', () => ingest(e)));
      await drain(d.commitUrl, (e) => invoke('commit', () => commit(e)));
      await invoke('discover', () => discover(scheduledEvent()));
      await drain(d.splitUrl, (e) => invoke('read', () => read(e)));
      // The compaction worker takes the next job once it is free; a job's duration is measured.
      while (workerFreeAt <= now + 1) {
        const started = performance.now();
        const polled = await pollOnce(d.compactUrl, (e) => invoke('compact', () => compact(e)), 1);
        if (!polled) break;
        jobsRun++;
        workerFreeAt = Math.max(workerFreeAt, now) + (performance.now() - started) / 1000;
      }
    }
    // Jobs still queued at the end run too (they belong to these commits).
    jobsWaiting = (await drain(d.compactUrl, (e) => invoke('compact', () => compact(e)), 1)).length;
    const busy = phase;
    const table = await reopen(d);
    const keys = await (async () => {
      let n = 0;
      for await (const _ of table.store.list(`${table.path}/`)) n++;
      return n;
    })();

    // Act 2: the idle table
    const idle: Record<string, Map<Fn, Tally>> = {};
    const IDLE_RUNS = 3;
    for (const [name, fn, run] of [
      ['discover, nothing new', 'discover', () => discover(scheduledEvent())],
      ['expire (15-minute schedule)', 'expire', () => expire(scheduledEvent())],
      ['expire (daily orphan scan)', 'expire', () => expire({ orphanScan: true } as never)],
    ] as const) {
      phase = new Map();
      for (let k = 0; k < IDLE_RUNS; k++) await invoke(fn, run as () => Promise<unknown>);
      idle[name] = phase;
    }

    // Assess: per commit, per idle run, per hour
    const per = (t: Tally, n: number) => ({
      invocations: t.invocations / n,
      requests: total(t.requests) / n,
      byApi: Object.fromEntries([...t.requests].sort().map(([k, v]) => [k, +(v / n).toFixed(2)])),
      wallMs: t.wallMs / n,
      cpuMs: t.cpuMs / n,
    });
    const perCommit: Record<string, ReturnType<typeof per> & { gbs: number }> = {};
    for (const [fn, t] of busy) perCommit[fn] = { ...per(t, commits), gbs: gbs(fn, t) / commits };
    const perIdleRun: Record<string, ReturnType<typeof per> & { gbs: number }> = {};
    for (const [name, m] of Object.entries(idle)) {
      const [[fn, t]] = [...m];
      perIdleRun[name] = { ...per(t, IDLE_RUNS), gbs: gbs(fn, t) / IDLE_RUNS };
    }
    const reqPerCommit = Object.values(perCommit).reduce((a, p) => a + p.requests, 0);
    const gbsPerCommit = Object.values(perCommit).reduce((a, p) => a + p.gbs, 0);
    const idleHour = {
      discover: 60 * perIdleRun['discover, nothing new'].requests,
      expire: 4 * perIdleRun['expire (15-minute schedule)'].requests,
      orphanScan: perIdleRun['expire (daily orphan scan)'].requests / 24,
    };
    const idleGbsHour =
      60 * perIdleRun['discover, nothing new'].gbs +
      4 * perIdleRun['expire (15-minute schedule)'].gbs +
      perIdleRun['expire (daily orphan scan)'].gbs / 24;
    const s3PerCommit = { put: 0, get: 0 };
    for (const p of Object.values(perCommit)) {
      for (const [api, v] of Object.entries(p.byApi)) {
        const c = s3Class(api);
        if (api.startsWith('S3:') && c !== 'free') s3PerCommit[c] += v;
      }
    }
    const result = {
      measuredAt: new Date().toISOString(),
      loadAverage: loadavg()[0],
      commits,
      rowsRead,
      tableKeys: keys,
      compactionJobs: jobsRun + jobsWaiting,
      perCommit,
      perIdleRun,
      requestsPerCommit: reqPerCommit,
      s3PerCommit,
      gbsPerCommit,
      idleRequestsPerHour: idleHour,
      idleRequestsPerHourTotal: idleHour.discover + idleHour.expire + idleHour.orphanScan,
      oneCommitPerSecondRequestsPerHour:
        3600 * reqPerCommit + idleHour.discover + idleHour.expire + idleHour.orphanScan,
      idleGbsPerHour: idleGbsHour,
      oneCommitPerSecondGbsPerHour: 3600 * gbsPerCommit + idleGbsHour,
    };
    const out = process.env.VARVE_BENCH_JSON;
    if (out) writeFileSync(out, JSON.stringify(result, null, 2));
    const lines = [
      `AWS requests and Lambda GB-s on moto: ${commits} commits (1/s), ${result.compactionJobs} compaction jobs, table ${keys} keys, load ${result.loadAverage.toFixed(1)}`,
      '| function | invocations / commit | requests / commit | by API | wall ms | CPU ms | GB-s / commit |',
      '|---|---:|---:|---|---:|---:|---:|',
      ...Object.entries(perCommit).map(
        ([fn, p]) =>
          `| ${fn} | ${p.invocations.toFixed(2)} | ${p.requests.toFixed(1)} | ${Object.entries(p.byApi)
            .map(([k, v]) => `${k} ${v}`)
            .join(
              ', ',
            )} | ${(p.wallMs / Math.max(p.invocations, 1e-9)).toFixed(0)} | ${(p.cpuMs / Math.max(p.invocations, 1e-9)).toFixed(0)} | ${p.gbs.toFixed(3)} |`,
      ),
      '| idle run | | requests / run | by API | wall ms | CPU ms | GB-s / run |',
      ...Object.entries(perIdleRun).map(
        ([name, p]) =>
          `| ${name} | | ${p.requests.toFixed(1)} | ${Object.entries(p.byApi)
            .map(([k, v]) => `${k} ${v}`)
            .join(', ')} | ${p.wallMs.toFixed(0)} | ${p.cpuMs.toFixed(0)} | ${p.gbs.toFixed(3)} |`,
      ),
      `requests per commit ${reqPerCommit.toFixed(1)} (S3 PUT-class ${s3PerCommit.put.toFixed(1)}, GET-class ${s3PerCommit.get.toFixed(1)}); GB-s per commit ${gbsPerCommit.toFixed(3)}`,
      `idle requests per hour ${result.idleRequestsPerHourTotal.toFixed(0)} (discover ${idleHour.discover.toFixed(0)}, expire ${idleHour.expire.toFixed(0)}, orphan scan ${idleHour.orphanScan.toFixed(1)}); 1 commit/s: ${result.oneCommitPerSecondRequestsPerHour.toFixed(0)} per hour`,
      `GB-s per hour: idle ${idleGbsHour.toFixed(1)}, 1 commit/s ${result.oneCommitPerSecondGbsPerHour.toFixed(0)}`,
    ];
    console.log(lines.join('\n'));
    return result;
  } finally {
    uninstall();
  }
}

describe.skipIf(!awsAvailable())('AWS requests and Lambda GB-s of a table (bench, moto)', () => {
  it('measures a table at one commit per second and idle', { timeout: 3_600_000 }, async () => {
    const commits = Number(process.env.VARVE_BENCH_COMMITS ?? '30');
    const r = await measureTable(commits);
    // Rows reached the consumer and every commit cost something: the counts are of a working pipeline.
    expect(r.rowsRead).toBeGreaterThan(0);
    expect(r.requestsPerCommit).toBeGreaterThan(0);
  });
});
