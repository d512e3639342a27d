/**
 * The AWS functions end to end on moto, called in-process with the events AWS would give them:
 * records sent to the ingest queue come out of the consumer's sink, with the commit queue, the
 * `Snapshot Committed` event on the bus and the split queue in between, and the consumer's
 * position in the table moves past everything delivered.
 */
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import { createCommitHandler } from '../../functions/commit.js';
import { createDiscoverHandler } from '../../functions/discover.js';
import { createIngestHandler } from '../../functions/ingest.js';
import { createReadHandler } from '../../functions/read.js';
import type { SnapshotCommittedDetail } from '../../lib/aws/commit-events.js';
import type { RowChangedDetail } from '../../lib/aws/sinks.js';
import { readConsumer } from '../../lib/snapshot/consumer.js';
import { createStreamHandler } from '../../functions/shared/stream-handler.js';
import type { Change } from '../../lib/stream/sinks.js';
import { awsAvailable } from '../helpers/aws.js';
import {
  captureMetrics,
  createOrders,
  deploy,
  drain,
  powertoolsEnv,
  reopen,
  routeEvents,
  scheduledEvent,
  sendBodies,
  takeEvents,
  uniqueName,
  createQueue,
  type Deployment,
  captureLogs,
} from './harness.js';
import { SPLIT_FAILED } from '../helpers/log-lines.js';

/** The functions' log lines: an ERROR line no test expects fails it (harness.ts). */
const logs = captureLogs();

/** One order record as a producer sends it. */
function order(id: number, status: string, amount: number, kind?: '-D'): Record<string, unknown> {
  return { id, status, amount, ...(kind ? { _kind: kind } : {}) };
}

/** The state a sink's changes replay to: id → "status/amount". */
function replay(changes: Change[]): Map<string, string> {
  const state = new Map<string, string>();
  for (const c of changes) {
    const id = String(c.row.id);
    if (c.kind === '-D' || c.kind === '-U') state.delete(id);
    else state.set(id, `${String(c.row.status)}/${String(c.row.amount)}`);
  }
  return state;
}

type SqsFn = (e: SQSEvent) => Promise<SQSBatchResponse>;

/** Runs the functions of one deployment the way AWS chains them: queue by queue, event by event. */
async function flow(d: Deployment, env: Record<string, string>, read: SqsFn): Promise<void> {
  await drain(d.ingestUrl, createIngestHandler(env) as SqsFn);
  if (env.VARVE_COMMIT_MODE === 'queue') await drain(d.commitUrl, createCommitHandler(env));
  const discover = createDiscoverHandler(env);
  // Each Snapshot Committed event on the bus invokes discovery (the DiscoverOnCommit rule).
  for (const e of await takeEvents<SnapshotCommittedDetail>(d.commitEventsUrl)) {
    await discover(e as Parameters<typeof discover>[0]);
  }
  await drain(d.splitUrl, read);
}

describe.skipIf(!awsAvailable())('the varve functions end to end on moto', () => {
  const metrics = captureMetrics();
  beforeAll(() => powertoolsEnv());

  it('delivers ingested records to a user sink, in order per key, and advances the consumer file', async () => {
    // Prepare
    const d = await deploy();
    await createOrders(d);
    const env = d.env('queue');
    const seen: Change[] = [];
    const read = createStreamHandler(async (changes) => void seen.push(...changes), env);

    // Act: two rounds of records, the second updating and deleting some of the first
    await sendBodies(d.ingestUrl, [
      JSON.stringify(order(1, 'new', 10)),
      JSON.stringify([order(2, 'new', 20), order(3, 'new', 30)]),
      JSON.stringify(order(4, 'new', 40)),
    ]);
    await flow(d, env, read);
    await sendBodies(d.ingestUrl, [
      JSON.stringify([order(2, 'paid', 21), order(3, 'x', 0, '-D')]),
      JSON.stringify(order(5, 'new', 50)),
    ]);
    await flow(d, env, read);
    // The schedule's run folds what the readers delivered into the consumer's position.
    await createDiscoverHandler(env)(scheduledEvent());
    const foreign = await createDiscoverHandler(env)({
      ...scheduledEvent(),
      'detail-type': 'Snapshot Committed',
      source: 'varve',
      detail: { table: 'shop.other', snapshotId: 9, commitKind: 'APPEND', changelog: false },
    });

    // Assess
    expect(replay(seen)).toEqual(
      new Map([
        ['1', 'new/10'],
        ['2', 'paid/21'],
        ['4', 'new/40'],
        ['5', 'new/50'],
      ]),
    );
    const table = await reopen(d);
    const latest = (await table.snapshots.latestId())!;
    expect(latest).toBe(2); // one group commit per round
    const consumer = await readConsumer(table.store, table.path, d.consumerId);
    expect(consumer?.nextSnapshot).toBe(latest + 1);
    expect(foreign).toEqual({ skipped: 'other-table', runs: [] });
    // Discovery reported the lag it left: none.
    const lag = metrics.points.filter((p) => p.name === 'ConsumerLagSnapshots');
    expect(lag.at(-1)).toMatchObject({
      value: 0,
      namespace: 'Varve',
      dimensions: { service: 'varve', table: 'shop.orders', consumer: 'audit' },
    });
  });

  it('reports the failed split and every later one of its bucket, then delivers them in order', async () => {
    // Prepare: one bucket, three commits planned before the reader runs
    const d = await deploy();
    await createOrders(d, { bucket: '1' });
    const env = d.env('direct');
    const discover = createDiscoverHandler(env);
    const ingest = createIngestHandler(env) as SqsFn;
    for (const [i, status] of ['a', 'b', 'c'].entries()) {
      await sendBodies(d.ingestUrl, [JSON.stringify(order(1, status, i))]);
      await drain(d.ingestUrl, ingest);
      if (i === 0) await discover(scheduledEvent());
    }
    await discover(scheduledEvent());
    let failures = 1;
    const delivered: string[] = [];
    const read = createStreamHandler(async (changes) => {
      if (changes.some((c) => c.row.status === 'b') && failures-- > 0) throw new Error('the sink is down');
      delivered.push(...changes.map((c) => `${c.snapshot}:${String(c.row.status)}`));
    }, env);

    // Act
    const polls = await drain(d.splitUrl, read);

    // Assess: the first poll fails snapshot 2's split and everything after it in the group
    const first = polls[0];
    const failed = new Set(first.response.batchItemFailures.map((f) => f.itemIdentifier));
    expect(first.event.Records.map((r) => failed.has(r.messageId))).toEqual([false, true, true]);
    expect(delivered).toEqual(['1:a', '2:b', '3:c']);
    expect(polls.at(-1)!.event.Records.map((r) => r.attributes.ApproximateReceiveCount)).toEqual(['2', '2']);
    // One WARN line for the failed split (its own error, counted), one for the split behind it.
    expect(logs.lines).toEqual([
      'WARN split of snapshot 2 bucket 0 failed on receive 1: its own error (Error: the sink is down, own failure 1/5)',
      expect.stringMatching(/^WARN split of snapshot 3 bucket 0 failed on receive 1: behind failed head \S+$/),
    ]);
    logs.expectOnly(SPLIT_FAILED);
  });

  it('with VARVE_SINK=eventbridge, puts one Row Changed event per change on the bus', async () => {
    // Prepare
    const d = await deploy();
    await createOrders(d);
    const changesUrl = await createQueue(uniqueName('changes'));
    await routeEvents(d.busName, { source: ['varve'], 'detail-type': ['Row Changed'] }, changesUrl);
    const env = d.env('direct', { VARVE_SINK: `eventbridge:${d.busName}` });

    // Act
    await sendBodies(d.ingestUrl, [JSON.stringify([order(7, 'new', 70), order(8, 'new', 80)])]);
    await flow(d, env, createReadHandler(env));

    // Assess
    const got = (await takeEvents<RowChangedDetail>(changesUrl)).map((e) => e.detail);
    expect(got.map((g) => [g.kind, g.row.id, g.row.status]).sort()).toEqual([
      ['+I', 7, 'new'],
      ['+I', 8, 'new'],
    ]);
    expect(got[0]).toMatchObject({ table: 'shop.orders', consumer: 'audit', snapshotId: 1 });
  });

  it('with VARVE_SINK=table:<db.table>, copies the changes into another table through its commit queue', async () => {
    // Prepare
    const d = await deploy();
    await createOrders(d);
    await createOrders(d, {}, 'shop.orders_copy');
    const env = d.env('direct', {
      VARVE_SINK: 'table:shop.orders_copy',
      VARVE_SINK_COMMIT_MODE: 'queue',
      VARVE_SINK_COMMIT_QUEUE_URL: d.commitUrl,
    });

    // Act: the source commits directly; the copy's batches go through the commit queue
    await sendBodies(d.ingestUrl, [JSON.stringify([order(1, 'new', 1), order(2, 'new', 2)])]);
    await flow(d, env, createReadHandler(env));
    await drain(d.commitUrl, createCommitHandler({ ...env, VARVE_TABLE: 'shop.orders_copy' }));

    // Assess
    const copy = await reopen(d, 'shop.orders_copy');
    const rows = (await copy.read()).toArray().map((r) => [Number(r.id), r.status]);
    expect(rows.sort()).toEqual([
      [1, 'new'],
      [2, 'new'],
    ]);
  });
});
