/**
 * AWS requests per operation of the functions on moto, counted by an SDK middleware on every
 * client varve makes (bench/lib/aws-requests.ts, through lib/store/client-decorator.ts): what docs/BENCHMARKS.md ("AWS requests of
 * a table") and the cost model in docs/AWS.md multiply out to requests per hour. The harness's
 * own clients (sending records, reading queues) are not counted: on AWS that is the producer's
 * and Lambda's event source mapping's traffic.
 */
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { afterAll, describe, expect, it } from 'vitest';
import { createCommitHandler } from '../../functions/commit.js';
import { createCompactHandler } from '../../functions/compact.js';
import { createDiscoverHandler } from '../../functions/discover.js';
import { createExpireHandler } from '../../functions/expire.js';
import { createIngestHandler } from '../../functions/ingest.js';
import { countAwsRequests } from '../../bench/lib/aws-requests.js';
import { awsAvailable } from '../helpers/aws.js';
import {
  captureMetrics,
  createOrders,
  deploy,
  drain,
  powertoolsEnv,
  scheduledEvent,
  sendBodies,
  takeAll,
} from './harness.js';

// The handlers' EMF metric lines stay off the test output.
captureMetrics();

/** Requests by `Service:Command` (bench/lib/aws-requests.ts: HTTP requests, SDK retries included). */
const counter = countAwsRequests();
afterAll(() => counter.remove());

/** Runs `fn` and returns the requests it made. */
async function measure(fn: () => Promise<unknown>): Promise<Map<string, number>> {
  counter.reset();
  await fn();
  return counter.counts;
}

function total(m: Map<string, number>): number {
  return [...m.values()].reduce((a, b) => a + b, 0);
}

function show(name: string, runs: number, m: Map<string, number>): string {
  const per = [...m]
    .sort()
    .map(([k, v]) => `${k} ${(v / runs).toFixed(1)}`)
    .join(', ');
  return `${name.padEnd(28)} ${(total(m) / runs).toFixed(1).padStart(6)} per run   (${per})`;
}

type SqsFn = (e: SQSEvent) => Promise<SQSBatchResponse>;

describe.skipIf(!awsAvailable())('AWS requests per operation (moto)', () => {
  it('counts the requests of ingest, group commit, discovery, compaction and expiry', {
    timeout: 240_000,
  }, async () => {
    // Prepare: one table (one bucket) and the consumer's queues, functions in queue commit mode
    powertoolsEnv();
    const d = await deploy();
    await createOrders(d);
    const env = d.env('queue');
    const ingest = createIngestHandler(env) as SqsFn;
    const commit = createCommitHandler(env);
    const discover = createDiscoverHandler(env);
    const compact = createCompactHandler(env);
    const expire = createExpireHandler(env);
    // A warm container: the first run of each function opens the table (catalog, schema).
    await discover(scheduledEvent());
    await takeAll(d.splitUrl);
    const COMMITS = 6;

    // Act: COMMITS commits of one batch each, with a discovery run after each (what a commit event triggers)
    const lines: string[] = [];
    const ingestCounts = new Map<string, number>();
    const commitCounts = new Map<string, number>();
    const discoverCounts = new Map<string, number>();
    const add = (into: Map<string, number>, m: Map<string, number>) =>
      m.forEach((v, k) => into.set(k, (into.get(k) ?? 0) + v));
    for (let i = 0; i < COMMITS; i++) {
      await sendBodies(d.ingestUrl, [
        JSON.stringify(Array.from({ length: 20 }, (_, k) => ({ id: i * 20 + k, status: 'new', amount: k }))),
      ]);
      add(ingestCounts, await measure(() => drain(d.ingestUrl, ingest)));
      add(commitCounts, await measure(() => drain(d.commitUrl, commit)));
      add(discoverCounts, await measure(() => discover(scheduledEvent())));
      await takeAll(d.splitUrl);
    }
    const idleDiscover = await measure(() => discover(scheduledEvent()));
    let jobs = 0;
    // Up to 10 jobs per invocation, as the compaction function's event source is configured.
    const compactCounts = await measure(async () => (jobs = (await drain(d.compactUrl, compact, 10)).length));
    const idleExpire = await measure(() => expire(scheduledEvent()));

    // Assess: printed for docs/BENCHMARKS.md; the bounds keep the counts from growing unnoticed
    lines.push(show('ingest (one batch)', COMMITS, ingestCounts));
    lines.push(show('group commit (one snapshot)', COMMITS, commitCounts));
    lines.push(show('discover, one new snapshot', COMMITS, discoverCounts));
    lines.push(show('discover, nothing new', 1, idleDiscover));
    lines.push(show('expire, nothing to expire', 1, idleExpire));
    if (jobs > 0) lines.push(show('compaction job', jobs, compactCounts));
    lines.push(`compaction jobs sent for ${COMMITS} commits: ${jobs}`);
    console.log(`AWS requests per operation (moto)\n${lines.join('\n')}`);
    // A warm group commit is 10 requests (cold-invocation-requests.test.ts says which); on top,
    // over the 6: the first commit's lookups of an empty table (a LIST each), the compaction job
    // claims (a marker PUT and an SQS send), and up to 2 re-checks of the base per slow commit.
    // Measured 12.0 (12.8 before 0314367: here every function shares one process and table object).
    expect(total(commitCounts) / COMMITS).toBeLessThan(15);
    // Warm: 2 data files, the registration, the commit message; the first one's lookups on top
    // (measured 4.3; 5.2 before 0314367).
    expect(total(ingestCounts) / COMMITS).toBeLessThan(6);
    expect(total(idleDiscover)).toBeLessThan(15);
    expect(total(idleExpire)).toBeGreaterThan(0);
    expect(jobs).toBeGreaterThan(0);
  });
});
