/**
 * The commit protocol under real concurrency, sized for the default suite on a busy 2-core
 * machine: 4 committers × 6 commits racing for the same snapshot ids, as separate processes
 * (LocalStore on a temp folder, S3Store on moto) and 8 × 10 as promises against a MemoryStore
 * with latency. Every commit must land exactly once. The 16 × 25 variants run in
 * commit-concurrency.stress.ts (`npm run stress`).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LocalStore } from '../../lib/store/local-store.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { S3Store } from '../../lib/store/s3-store.js';
import { awsAvailable, freshBucket } from '../helpers/aws.js';
import { expectedAppends, racePromises, raceProcesses, summarise, type RaceSize } from './commit-race.js';
import { verifyAppends } from './table-checks.js';

const PROCESSES: RaceSize = { committers: 4, commits: 6 };
const PROMISES: RaceSize = { committers: 8, commits: 10 };
const T = 'db.db/race';

describe('concurrent committers', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  it('in separate processes on a LocalStore, with a budget of 10 retries: every commit lands exactly once, none gives up', async () => {
    // Prepare
    const dir = await mkdtemp(join(tmpdir(), 'varve-race-'));
    dirs.push(dir);
    // Act: the default waits (commit.min-retry-wait 10 ms, commit.max-retry-wait 10 s) and 10
    // retries (Paimon's commit.max-retries; varve's default is 30); a commit that gives up fails
    // its process and the test.
    const { reports, ms } = await raceProcesses(`local:${dir}`, T, PROCESSES, { min: 10, max: 10_000, maxRetries: 10 });
    // Assess
    summarise(`LocalStore, ${PROCESSES.committers} processes`, reports, ms);
    await verifyAppends(new LocalStore(dir), T, expectedAppends(PROCESSES));
  }, 300_000);

  it('as promises on a MemoryStore with latency: every commit lands exactly once', async () => {
    const store = new MemoryStore();
    store.setLatency(1);
    const { reports, ms } = await racePromises(store, T, PROMISES);
    // Promises interleave at every await: with 8 of them, some must have lost a race.
    expect(summarise(`MemoryStore, ${PROMISES.committers} promises`, reports, ms)).toBeGreaterThan(0);
    store.setLatency(0);
    await verifyAppends(store, T, expectedAppends(PROMISES));
  }, 300_000);
});

describe.skipIf(!awsAvailable())('concurrent committers on S3 (moto)', () => {
  it('in separate processes: every commit lands exactly once', async () => {
    const bucket = await freshBucket();
    const { reports, ms } = await raceProcesses(`s3:${bucket}`, T, PROCESSES, { min: 10, max: 1000 });
    summarise(`S3Store on moto, ${PROCESSES.committers} processes`, reports, ms);
    await verifyAppends(new S3Store({ bucket }), T, expectedAppends(PROCESSES));
  }, 300_000);
});
