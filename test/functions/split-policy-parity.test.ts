/**
 * One split-delivery policy (lib/stream/split-policy.ts), two readers: the SAME seeded failure
 * scenario runs through the local runtime (LocalRuntime over an in-process FIFO queue) and
 * through the Lambda adapter (createStreamHandler over an SQS FIFO queue on moto, with its split
 * dead-letter queue), and both must apply the same rules: the same sink calls per split (a split
 * that only waited behind a failed one is never charged for it), the same deliveries in the same
 * per-bucket order, the same splits dead-lettered (a split after its own SPLIT_FAILURE_BUDGET
 * failures, the splits of its bucket behind it at once), and every key's versions in order.
 */
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it, vi } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { LocalRuntime } from '../../lib/runtime/local-runtime.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { openStore } from '../../lib/store/open-store.js';
import type { ChangeBatch } from '../../lib/stream/delivery.js';
import { discover, ensureConsumer } from '../../lib/stream/discovery.js';
import { MemoryQueue } from '../../lib/stream/memory-queue.js';
import { callbackSink, type Change } from '../../lib/stream/sinks.js';
import { SPLIT_FAILURE_BUDGET } from '../../lib/stream/split-failures.js';
import { parseSplitMessage } from '../../lib/stream/split-message.js';
import { SqsSplitQueue } from '../../lib/stream/sqs-queue.js';
import type { Table } from '../../lib/table/table.js';
import { log } from '../../functions/shared/observability.js';
import { createStreamHandler } from '../../functions/shared/stream-handler.js';
import { mulberry32, rng as makeRng, testSeed } from '../helpers/random.js';
import { DEAD_LETTER, LogLines, SPLIT_FAILED } from '../helpers/log-lines.js';
import { put } from '../stream/fixtures.js';
import {
  captureMetrics,
  createQueue,
  pollOnce,
  powertoolsEnv,
  queueArn,
  sqs,
  takeAll,
  uniqueName,
  captureLogs,
} from './harness.js';

/** The functions' log lines: an ERROR line fails the test that logged it (harness.ts). */
captureLogs();

captureMetrics();
powertoolsEnv();

const BUCKETS = 3;

/** The rows of each snapshot, drawn from the seed: `[key, version]`. */
function writesOf(seed: number): Array<Array<[number, string]>> {
  const r = makeRng(seed);
  const versions = new Map<number, number>();
  return Array.from({ length: r.int(6, 9) }, () => {
    const keys = new Set<number>();
    for (let n = r.int(2, 6); keys.size < n; ) keys.add(r.int(0, 11));
    return [...keys].map((k): [number, string] => {
      versions.set(k, (versions.get(k) ?? 0) + 1);
      return [k, String(versions.get(k))];
    });
  });
}

/** How often the sink fails a split before it succeeds, the same whichever reader meets it: mostly never, sometimes a few times, now and then past the budget. */
function failuresOf(seed: number, snapshot: number, bucket: number, spent: string): number {
  if (`${snapshot}/${bucket}` === spent) return SPLIT_FAILURE_BUDGET;
  const r = makeRng(Math.floor(mulberry32(seed ^ (snapshot * 7919 + bucket * 104729))() * 2 ** 31));
  const p = r.next();
  return p < 0.55 ? 0 : p < 0.93 ? r.int(1, SPLIT_FAILURE_BUDGET - 1) : SPLIT_FAILURE_BUDGET;
}

/** What one reader did with the scenario. */
interface PathResult {
  /** Sink calls per split `<snapshot>/<bucket>`. */
  calls: Record<string, number>;
  /** Per bucket, the snapshots whose split the sink took, in order. */
  delivered: Record<number, number[]>;
  /** The dead-lettered splits, sorted. */
  deadLettered: string[];
  /** Keys whose versions reached the sink out of order. */
  orderViolations: string[];
}

/** A sink following the scenario's failure plan, recording what it took. */
function scenarioSink(seed: number, spent: string) {
  const calls: Record<string, number> = {};
  const delivered: Record<number, number[]> = {};
  const versions = new Map<string, number[]>();
  const fn = (changes: Change[], batch: ChangeBatch) => {
    const id = `${batch.snapshotId}/${batch.bucket}`;
    calls[id] = (calls[id] ?? 0) + 1;
    if (calls[id] <= failuresOf(seed, batch.snapshotId, batch.bucket, spent))
      throw new Error(`sink fault ${calls[id]} on split ${id}`);
    (delivered[batch.bucket] ??= []).push(batch.snapshotId);
    for (const c of changes) versions.set(String(c.row.k), [...(versions.get(String(c.row.k)) ?? []), Number(c.row.v)]);
  };
  const result = (deadLettered: string[]): PathResult => ({
    calls,
    delivered,
    deadLettered: deadLettered.sort(),
    orderViolations: [...versions]
      .filter(([, vs]) => vs.some((v, i) => i > 0 && v <= vs[i - 1]))
      .map(([k, vs]) => `k=${k}: ${vs.join(',')}`),
  });
  return { fn, result };
}

async function tableWith(warehouse: string, writes: Array<Array<[number, string]>>): Promise<Table> {
  const table = await new FolderCatalog(openStore(warehouse)).createTable('db.t', {
    fields: parseSchemaText('k BIGINT, v STRING'),
    primaryKeys: ['k'],
    options: { bucket: String(BUCKETS) },
  });
  for (const rows of writes) await put(table, rows);
  return table;
}

const splitOf = (body: string) => {
  const m = parseSplitMessage(body);
  return `${m.snapshotId}/${m.bucket}`;
};

/** The scenario through the local runtime: its reader loops over an in-process FIFO queue. */
async function throughLocalRuntime(
  seed: number,
  spent: string,
  writes: Array<Array<[number, string]>>,
  log: LogLines,
): Promise<PathResult> {
  const table = await tableWith(`memory://parity-local-${seed}-${uniqueName('w')}`, writes);
  const { fn, result } = scenarioSink(seed, spent);
  const queue = new MemoryQueue({ visibilityMs: 60_000, maxReceiveCount: 10 * SPLIT_FAILURE_BUDGET });
  const runtime = new LocalRuntime({
    discoveryIntervalMs: 0,
    compactionIntervalMs: 0,
    expiryIntervalMs: 0,
    log: log.add,
  });
  const consumer = await runtime.addConsumer({
    table,
    consumerId: 'audit',
    sink: callbackSink(fn),
    queue,
    stream: { mode: 'earliest' },
    // The Lambda path's polls skip the visibility backoff; here a failed split comes back soon.
    backoff: { baseMs: 100, maxMs: 30_000 },
  });
  await runtime.start();
  try {
    // Sized by work: until everything planned was delivered or dead-lettered.
    while (!(await consumer.isIdle())) await new Promise((r) => setTimeout(r, 20));
  } finally {
    await runtime.stop();
  }
  return result(queue.deadLetters().map((m) => splitOf(m.body)));
}

/** The scenario through the Lambda adapter: an event source mapping's polls of an SQS FIFO queue with a split dead-letter queue. */
async function throughLambda(seed: number, spent: string, writes: Array<Array<[number, string]>>): Promise<PathResult> {
  const warehouse = `memory://parity-lambda-${seed}-${uniqueName('w')}`;
  const table = await tableWith(warehouse, writes);
  await ensureConsumer(table, 'audit', { mode: 'earliest' });
  const dlq = await createQueue(`${uniqueName('split-dlq')}.fifo`);
  const url = await createQueue(`${uniqueName('splits')}.fifo`, {
    RedrivePolicy: JSON.stringify({
      deadLetterTargetArn: await queueArn(dlq),
      maxReceiveCount: String(10 * SPLIT_FAILURE_BUDGET),
    }),
  });
  await discover(table, new SqsSplitQueue({ queueUrl: url }), 'audit');
  const { fn, result } = scenarioSink(seed, spent);
  const handler = createStreamHandler(fn, {
    VARVE_WAREHOUSE: warehouse,
    VARVE_TABLE: 'db.t',
    VARVE_CONSUMER_ID: 'audit',
    VARVE_SPLIT_DLQ_URL: dlq,
  });
  // Sized by work: every poll delivers, fails or dead-letters a split; the queue is empty when a long poll finds nothing.
  for (let i = 0; i < 500 && ((await pollOnce(url, handler)) ?? (await pollOnce(url, handler, 10, 1))); i++);
  const attrs = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: url,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  expect(
    Number(attrs.Attributes!.ApproximateNumberOfMessages) +
      Number(attrs.Attributes!.ApproximateNumberOfMessagesNotVisible),
  ).toBe(0);
  // Deleted as read: a FIFO queue hides the rest of a message group while some of it is in flight,
  // so receiving without deleting stopped at 10 and missed a bucket's 11th dead letter (seed 236655503).
  return result((await takeAll(dlq)).map(splitOf));
}

/** What the policy says must happen, from the plan alone. */
function expectedOf(
  seed: number,
  spent: string,
  writes: Array<Array<[number, string]>>,
  splits: string[],
): Omit<PathResult, 'orderViolations'> {
  const calls: Record<string, number> = {};
  const delivered: Record<number, number[]> = {};
  const deadLettered: string[] = [];
  const stopped = new Set<number>();
  for (const id of splits) {
    const [snapshot, bucket] = id.split('/').map(Number);
    if (stopped.has(bucket)) {
      deadLettered.push(id);
      continue;
    }
    const failures = failuresOf(seed, snapshot, bucket, spent);
    calls[id] = failures >= SPLIT_FAILURE_BUDGET ? SPLIT_FAILURE_BUDGET : failures + 1;
    if (failures >= SPLIT_FAILURE_BUDGET) {
      deadLettered.push(id);
      stopped.add(bucket);
    } else (delivered[bucket] ??= []).push(snapshot);
  }
  expect(writes.length).toBeGreaterThan(0);
  return { calls, delivered, deadLettered: deadLettered.sort() };
}

describe('the split-delivery policy, local runtime and Lambda adapter alike', () => {
  it('the same seeded failures give the same sink calls, deliveries and dead letters, every key in order', async () => {
    // Prepare: one scenario; one split forced past its budget, so that a dead letter and the split behind it are always in it
    const seed = testSeed('split-policy-parity');
    const writes = writesOf(seed);
    const splits = await allSplits(await tableWith(`memory://parity-probe-${seed}-${uniqueName('w')}`, writes));
    const bucketOf = (s: string) => s.split('/')[1];
    const followed = splits.filter((s, i) => splits.slice(i + 1).some((t) => bucketOf(t) === bucketOf(s)));
    const spent = makeRng(seed).pick(followed.length > 0 ? followed : splits);
    const localLog = new LogLines();
    const lambdaWarn = vi.spyOn(log(), 'warn').mockImplementation(() => {});
    const lambdaError = vi.spyOn(log(), 'error').mockImplementation(() => {});

    // Act
    const local = await throughLocalRuntime(seed, spent, writes, localLog);
    const lambda = await throughLambda(seed, spent, writes);

    // Assess: both did what the policy says, so the same as each other
    const expected = expectedOf(seed, spent, writes, splits);
    console.log(
      `[split-policy-parity] seed=${seed} splits=${splits.length} spent=${spent} dead=${expected.deadLettered.join(',')} failed calls=${Object.values(expected.calls).reduce((a, b) => a + b, 0) - splits.length}`,
    );
    expect(local.orderViolations, `seed ${seed}`).toEqual([]);
    expect(lambda.orderViolations, `seed ${seed}`).toEqual([]);
    expect(
      { calls: local.calls, delivered: local.delivered, deadLettered: local.deadLettered },
      `seed ${seed}`,
    ).toEqual(expected);
    expect(
      { calls: lambda.calls, delivered: lambda.delivered, deadLettered: lambda.deadLettered },
      `seed ${seed}`,
    ).toEqual(expected);
    expect(expected.deadLettered.length, `seed ${seed}`).toBeGreaterThan(0);
    // Both said so: one ERROR line per dead letter, a WARN line per failed split, nothing else.
    expect(localLog.matching(DEAD_LETTER), `seed ${seed}`).toHaveLength(expected.deadLettered.length);
    localLog.expectOnly(SPLIT_FAILED, DEAD_LETTER);
    const lambdaLines = new LogLines();
    for (const [message] of [...lambdaWarn.mock.calls, ...lambdaError.mock.calls]) lambdaLines.add(String(message));
    expect(
      lambdaError.mock.calls.map(([m]) => String(m)).filter((m) => m.includes(DEAD_LETTER)),
      `seed ${seed}`,
    ).toHaveLength(expected.deadLettered.length);
    lambdaLines.expectOnly(SPLIT_FAILED, DEAD_LETTER);
  }, 300_000);
});

/** Every split of the table's stream from the earliest snapshot, in snapshot order: `<snapshot>/<bucket>`. */
async function allSplits(table: Table): Promise<string[]> {
  const queue = new MemoryQueue();
  await ensureConsumer(table, 'all', { mode: 'earliest' });
  await discover(table, queue, 'all');
  while (!(await discover(table, queue, 'all')).caughtUp);
  const out: string[] = [];
  for (
    let got = await queue.receive({ maxMessages: 10 });
    got.length > 0;
    got = await queue.receive({ maxMessages: 10 })
  ) {
    out.push(...got.map((m) => splitOf(m.body)));
    await queue.ack(got.map((m) => m.receiptHandle));
  }
  return out.sort(
    (a, b) => Number(a.split('/')[0]) - Number(b.split('/')[0]) || Number(a.split('/')[1]) - Number(b.split('/')[1]),
  );
}
