/**
 * Stress variant of commit-concurrency.test.ts (`npm run stress`): 16 committers × 25 commits
 * racing for the same snapshot ids as separate processes (LocalStore, S3Store on moto) and as
 * promises on a MemoryStore with latency. Every commit must land exactly once, and with this many
 * committers they must have raced (retries > 0).
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

const SIZE: RaceSize = { committers: 16, commits: 25 };
const T = 'db.db/race';

describe('concurrent committers (stress)', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  it('16 processes on a LocalStore: every commit lands exactly once', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'varve-race-'));
    dirs.push(dir);
    const { reports, ms } = await raceProcesses(`local:${dir}`, T, SIZE, { min: 5, max: 100 });
    expect(summarise('LocalStore, 16 processes', reports, ms)).toBeGreaterThan(0);
    await verifyAppends(new LocalStore(dir), T, expectedAppends(SIZE));
  }, 900_000);

  it('16 promises on a MemoryStore with latency: every commit lands exactly once', async () => {
    const store = new MemoryStore();
    store.setLatency(1);
    const { reports, ms } = await racePromises(store, T, SIZE);
    expect(summarise('MemoryStore, 16 promises', reports, ms)).toBeGreaterThan(0);
    store.setLatency(0);
    await verifyAppends(store, T, expectedAppends(SIZE));
  }, 900_000);
});

describe.skipIf(!awsAvailable())('concurrent committers on S3 (moto, stress)', () => {
  it('16 processes: every commit lands exactly once', async () => {
    const bucket = await freshBucket();
    const { reports, ms } = await raceProcesses(`s3:${bucket}`, T, SIZE, { min: 10, max: 1000 });
    expect(summarise('S3Store on moto, 16 processes', reports, ms)).toBeGreaterThan(0);
    await verifyAppends(new S3Store({ bucket }), T, expectedAppends(SIZE));
  }, 900_000);
});
