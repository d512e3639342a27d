/**
 * The commit protocol under real concurrency: 16 committers × 25 commits racing for the same
 * snapshot ids, as separate processes (LocalStore on a temp folder, S3Store on moto) and as
 * promises against a MemoryStore with latency. Every commit must land exactly once.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { LruManifestCache } from '../../lib/manifest/manifest-file.js';
import { commit } from '../../lib/snapshot/commit.js';
import { SnapshotManager } from '../../lib/snapshot/snapshot-manager.js';
import { LocalStore } from '../../lib/store/local-store.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { S3Store } from '../../lib/store/s3-store.js';
import { awsAvailable, freshBucket } from '../helpers/aws.js';
import { compareKeys } from '../manifest/factories.js';
import { committerRequest, rowsOf } from './fixtures/committer-plan.js';
import { verifyAppends, type ExpectedAppend } from './table-checks.js';

const COMMITTERS = 16;
const COMMITS = 25;
const T = 'db.db/race';
const REPO = fileURLToPath(new URL('../..', import.meta.url));

function expectedAppends(): ExpectedAppend[] {
  const out: ExpectedAppend[] = [];
  for (let i = 0; i < COMMITTERS; i++) {
    for (let c = 0; c < COMMITS; c++) out.push({ identifier: `c${i}-${c}`, fileName: `data-c${i}-${c}`, rows: rowsOf(i, c) });
  }
  return out;
}

interface CommitterReport {
  committer: number;
  /** Per commit: attempts that wrote manifests and tried the snapshot put. */
  attempts: number[];
  /** Lost races (including those caught by the cheap pre-check) and retried store errors. */
  retries: number;
  requests?: Record<string, number>;
  ms: number;
}

/** Retry waits per store: a commit on S3 (or moto) takes ~10x longer than on a local folder. */
interface Waits {
  min: number;
  max: number;
}

function runCommitter(where: string, i: number, waits: Waits): Promise<CommitterReport> {
  return new Promise((resolve, reject) => {
    const args = ['--import', 'tsx', 'test/snapshot/fixtures/committer.ts', where, T, String(i), String(COMMITS), String(waits.min), String(waits.max)];
    const child = spawn(process.execPath, args, {
      cwd: REPO,
      env: process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code === 0) resolve(JSON.parse(out.trim().split('\n').pop()!) as CommitterReport);
      else reject(new Error(`committer ${i} exited with ${code}: ${err}`));
    });
  });
}

/** Prints timings, retries and storage calls; returns the number of retries (> 0 proves the committers raced). */
function summarise(label: string, reports: CommitterReport[], ms: number): number {
  const attempts = reports.flatMap((r) => r.attempts);
  const retries = reports.reduce((s, r) => s + r.retries, 0);
  const requests: Record<string, number> = {};
  for (const r of reports) for (const [op, n] of Object.entries(r.requests ?? {})) requests[op] = (requests[op] ?? 0) + n;
  const slowest = Math.max(...reports.map((r) => r.ms));
  console.log(
    `${label}: ${attempts.length} commits in ${Math.round(ms)} ms (slowest committer ${slowest} ms of commits); ` +
      `${retries} retries; written attempts per commit mean ${(attempts.reduce((s, a) => s + a, 0) / attempts.length).toFixed(2)}, ` +
      `max ${Math.max(...attempts)}` +
      (Object.keys(requests).length ? `; storage calls ${JSON.stringify(requests)}` : ''),
  );
  return retries;
}

async function raceProcesses(where: string, waits: Waits): Promise<{ reports: CommitterReport[]; ms: number }> {
  const started = performance.now();
  const reports = await Promise.all(Array.from({ length: COMMITTERS }, (_, i) => runCommitter(where, i, waits)));
  return { reports, ms: performance.now() - started };
}

describe('concurrent committers', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  it('in separate processes on a LocalStore: every commit lands exactly once', async () => {
    // Prepare
    const dir = await mkdtemp(join(tmpdir(), 'varve-race-'));
    dirs.push(dir);
    // Act
    const { reports, ms } = await raceProcesses(`local:${dir}`, { min: 5, max: 100 });
    // Assess
    expect(summarise('LocalStore, 16 processes', reports, ms)).toBeGreaterThan(0);
    await verifyAppends(new LocalStore(dir), T, expectedAppends());
  }, 300_000);

  it('as promises on a MemoryStore with latency: every commit lands exactly once', async () => {
    const store = new MemoryStore();
    store.setLatency(1);
    const started = performance.now();
    const reports = await Promise.all(
      Array.from({ length: COMMITTERS }, async (_, i): Promise<CommitterReport> => {
        const snapshotManager = new SnapshotManager(store, T, { cacheSnapshots: true });
        const manifestCache = new LruManifestCache();
        const attempts: number[] = [];
        let retries = 0;
        for (let c = 0; c < COMMITS; c++) {
          const r = await commit(store, T, committerRequest(i, c), {
            compareKeys,
            maxRetries: 200,
            minRetryWaitMs: 2,
            maxRetryWaitMs: 50,
            snapshotManager,
            manifestCache,
            onRetry: () => retries++,
          });
          attempts.push(r.attempts);
        }
        return { committer: i, attempts, retries, ms: Math.round(performance.now() - started) };
      }),
    );
    expect(summarise('MemoryStore, 16 promises', reports, performance.now() - started)).toBeGreaterThan(0);
    store.setLatency(0);
    await verifyAppends(store, T, expectedAppends());
  }, 300_000);
});

describe.skipIf(!awsAvailable())('concurrent committers on S3 (moto)', () => {
  it('in separate processes: every commit lands exactly once', async () => {
    const bucket = await freshBucket();
    const { reports, ms } = await raceProcesses(`s3:${bucket}`, { min: 10, max: 1000 });
    expect(summarise('S3Store on moto, 16 processes', reports, ms)).toBeGreaterThan(0);
    await verifyAppends(new S3Store({ bucket }), T, expectedAppends());
  }, 300_000);
});
