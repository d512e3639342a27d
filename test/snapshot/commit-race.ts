/**
 * The commit race shared by the concurrency test (small, in the default suite) and its stress
 * variant (16 committers × 25 commits, `npm run stress`): committers racing for the same snapshot
 * ids as separate processes (LocalStore on a temp folder, S3Store on moto) or as promises against
 * a MemoryStore with latency. Sized by work (committers × commits), never by a deadline.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { LruManifestCache } from '../../lib/manifest/manifest-file.js';
import { commit } from '../../lib/snapshot/commit.js';
import { SnapshotManager } from '../../lib/snapshot/snapshot-manager.js';
import type { MemoryStore } from '../../lib/store/memory-store.js';
import { compareKeys } from '../manifest/factories.js';
import { committerRequest, rowsOf } from './fixtures/committer-plan.js';
import type { ExpectedAppend } from './table-checks.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));

/** How many committers race and how many commits each makes. */
export interface RaceSize {
  committers: number;
  commits: number;
}

/** What one committer reports. */
export interface CommitterReport {
  committer: number;
  /** Per commit: attempts that wrote manifests and tried the snapshot put. */
  attempts: number[];
  /** Lost races (including those caught by the cheap pre-check) and retried store errors. */
  retries: number;
  requests?: Record<string, number>;
  ms: number;
}

/** Retry waits per store: a commit on S3 (or moto) takes ~10x longer than on a local folder. */
export interface Waits {
  min: number;
  max: number;
  /** Retries before a commit gives up (and its process fails); 200 unless given. */
  maxRetries?: number;
}

/** The appends a race of `size` must leave, one per (committer, commit). */
export function expectedAppends(size: RaceSize): ExpectedAppend[] {
  const out: ExpectedAppend[] = [];
  for (let i = 0; i < size.committers; i++) {
    for (let c = 0; c < size.commits; c++)
      out.push({ identifier: `c${i}-${c}`, fileName: `data-c${i}-${c}`, rows: rowsOf(i, c) });
  }
  return out;
}

function runCommitter(
  where: string,
  tablePath: string,
  i: number,
  commits: number,
  waits: Waits,
): Promise<CommitterReport> {
  return new Promise((resolve, reject) => {
    const args = [
      '--import',
      'tsx',
      'test/snapshot/fixtures/committer.ts',
      where,
      tablePath,
      String(i),
      String(commits),
      String(waits.min),
      String(waits.max),
      ...(waits.maxRetries === undefined ? [] : [String(waits.maxRetries)]),
    ];
    const child = spawn(process.execPath, args, { cwd: REPO, env: process.env, stdio: ['ignore', 'pipe', 'pipe'] });
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

/** Prints timings, retries, the spread of per-committer times and storage calls; returns the number of retries. */
export function summarise(label: string, reports: CommitterReport[], ms: number): number {
  const attempts = reports.flatMap((r) => r.attempts);
  const retries = reports.reduce((s, r) => s + r.retries, 0);
  const requests: Record<string, number> = {};
  for (const r of reports)
    for (const [op, n] of Object.entries(r.requests ?? {})) requests[op] = (requests[op] ?? 0) + n;
  const times = reports.map((r) => r.ms).sort((a, b) => a - b);
  console.log(
    `${label}: ${attempts.length} commits in ${Math.round(ms)} ms (committers finished their commits in ${times[0]}..${times[times.length - 1]} ms); ` +
      `${retries} retries; written attempts per commit mean ${(attempts.reduce((s, a) => s + a, 0) / attempts.length).toFixed(2)}, ` +
      `max ${Math.max(...attempts)}` +
      (Object.keys(requests).length ? `; storage calls ${JSON.stringify(requests)}` : ''),
  );
  return retries;
}

/** Races `size.committers` committer processes against the store named by `where` (local:<dir> or s3:<bucket>). */
export async function raceProcesses(
  where: string,
  tablePath: string,
  size: RaceSize,
  waits: Waits,
): Promise<{ reports: CommitterReport[]; ms: number }> {
  const started = performance.now();
  const reports = await Promise.all(
    Array.from({ length: size.committers }, (_, i) => runCommitter(where, tablePath, i, size.commits, waits)),
  );
  return { reports, ms: performance.now() - started };
}

/** Races `size.committers` promises (each with its own snapshot and manifest caches) on a MemoryStore. */
export async function racePromises(
  store: MemoryStore,
  tablePath: string,
  size: RaceSize,
): Promise<{ reports: CommitterReport[]; ms: number }> {
  const started = performance.now();
  const reports = await Promise.all(
    Array.from({ length: size.committers }, async (_, i): Promise<CommitterReport> => {
      const snapshotManager = new SnapshotManager(store, tablePath, { cacheSnapshots: true });
      const manifestCache = new LruManifestCache();
      const attempts: number[] = [];
      let retries = 0;
      for (let c = 0; c < size.commits; c++) {
        const r = await commit(store, tablePath, committerRequest(i, c), {
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
  return { reports, ms: performance.now() - started };
}
