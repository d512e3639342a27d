/**
 * The discovery Lambda of one table and consumer (reserved concurrency 1: one planner at a time):
 * runs on its schedule and on every `Snapshot Committed` event of its table, plans the splits of
 * every new snapshot and sends them to the consumer's split FIFO queue (lib/stream/discovery.ts:
 * MessageGroupId = partition and bucket, deduplication id = consumer, run, snapshot, partition,
 * bucket), then reports the consumer's lag (ConsumerLagSnapshots, ConsumerLagSeconds; dimensions
 * `table` and `consumer`).
 */
import type { Context, EventBridgeEvent, ScheduledEvent } from 'aws-lambda';
import { checkConsumerId } from '../lib/snapshot/consumer.js';
import { discover, type DiscoveryResult } from '../lib/stream/discovery.js';
import { consumerLag } from '../lib/stream/progress.js';
import { SqsSplitQueue } from '../lib/stream/sqs-queue.js';
import type { Table } from '../lib/table/table.js';
import { SNAPSHOT_COMMITTED, type SnapshotCommittedDetail } from './shared/commit-events.js';
import { requireEnv, type Env } from './shared/env.js';
import { sqsClient } from './shared/aws-clients.js';
import { emitMetric, log, METRIC, UNIT } from './shared/observability.js';
import { openTable } from './shared/tables.js';

/** Time kept back from the invocation's budget for the lag report. */
const RESERVE_MS = 15_000;
/** Discovery runs per invocation without a Lambda context (tests, scripts). */
const DEFAULT_RUNS = 16;

/** What one invocation did. */
export interface DiscoverResult {
  /** Why nothing was planned: the event was about another table. */
  skipped?: 'other-table';
  runs: DiscoveryResult[];
  /** Snapshots committed and not yet delivered, after the runs. */
  lagSnapshots?: number;
}

/** The discovery handler for the environment `env` (VARVE_CONSUMER_ID, VARVE_SPLIT_QUEUE_URL). */
export function createDiscoverHandler(env: Env = process.env) {
  return async (event: ScheduledEvent | EventBridgeEvent<typeof SNAPSHOT_COMMITTED, SnapshotCommittedDetail>, context?: Context): Promise<DiscoverResult> => {
    const { VARVE_CONSUMER_ID: consumerId, VARVE_SPLIT_QUEUE_URL: queueUrl, VARVE_TABLE: tableName } = requireEnv(
      env,
      ['VARVE_CONSUMER_ID', 'VARVE_SPLIT_QUEUE_URL', 'VARVE_TABLE'],
      'discover',
    );
    checkConsumerId(consumerId);
    // The rule matches on the table already; a foreign event (a shared bus, a manual test) is ignored.
    if (event['detail-type'] === SNAPSHOT_COMMITTED && (event.detail as SnapshotCommittedDetail).table !== tableName) {
      return { skipped: 'other-table', runs: [] };
    }
    const table = await openTable(env, 'discover');
    const queue = new SqsSplitQueue({ queueUrl, client: sqsClient() });
    const runs: DiscoveryResult[] = [];
    let lagSnapshots: number | undefined;
    try {
      // Each run plans a bounded number of snapshots: go on until caught up, while time allows.
      for (;;) {
        const result = await discover(table, queue, consumerId);
        runs.push(result);
        const outOfTime = context ? context.getRemainingTimeInMillis() < RESERVE_MS * 2 : runs.length >= DEFAULT_RUNS;
        if (result.caughtUp || result.lostRace || outOfTime) break;
      }
    } finally {
      // Reported when discovery fails too (a consumer behind expiry, a queue refusing sends): the
      // lag keeps growing, so the lag alarm fires instead of going quiet for want of data.
      lagSnapshots = await reportLag(table, consumerId);
    }
    const last = runs[runs.length - 1];
    log().info('discovery', {
      table: table.name,
      consumer: consumerId,
      trigger: event['detail-type'],
      planned: runs.map((r) => r.planned).filter(Boolean),
      sent: runs.reduce((s, r) => s + r.sent, 0),
      nextSnapshot: last.nextSnapshot,
      lagSnapshots,
    });
    return { runs, lagSnapshots };
  };
}

/** Lambda entry of the discovery function. */
export const handler = createDiscoverHandler();

/** Emits the consumer's lag (ConsumerLagSnapshots, ConsumerLagSeconds); best effort, returns the snapshots behind. */
async function reportLag(table: Table, consumerId: string): Promise<number | undefined> {
  try {
    const lag = await consumerLag(table, consumerId);
    if (!lag) return undefined;
    const dims = { table: table.name, consumer: consumerId };
    emitMetric(METRIC.consumerLagSnapshots, UNIT.count, lag.snapshots, dims);
    emitMetric(METRIC.consumerLagSeconds, UNIT.seconds, Math.round(lag.millis / 1000), dims);
    return lag.snapshots;
  } catch (e) {
    log().warn('the consumer lag could not be read', { table: table.name, consumer: consumerId, error: e as Error });
    return undefined;
  }
}
