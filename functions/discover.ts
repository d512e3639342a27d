/**
 * The discovery Lambda of one table and consumer (reserved concurrency 1: one planner at a time):
 * runs on its schedule and on every `Snapshot Committed` event of its table, plans the splits of
 * every new snapshot and sends them to the consumer's split FIFO queue (lib/stream/discovery.ts),
 * then reports the consumer's lag (ConsumerLagSnapshots, ConsumerLagSeconds; dimensions `table`
 * and `consumer`) — also when discovery failed, so the lag alarm fires instead of going quiet. A
 * consumer id found expired (ConsumerExpiredError) is logged as an error and counted
 * (ConsumerExpired), and the invocation fails.
 */
import type { Context, EventBridgeEvent, ScheduledEvent } from 'aws-lambda';
import { checkConsumerId } from '../lib/snapshot/consumer.js';
import { discoverUntilCaughtUp } from '../lib/stream/discover-until.js';
import type { DiscoveryResult } from '../lib/stream/discovery.js';
import { SqsSplitQueue } from '../lib/stream/sqs-queue.js';
import { sqsClient } from '../lib/aws/clients.js';
import { SNAPSHOT_COMMITTED, type SnapshotCommittedDetail } from '../lib/aws/commit-events.js';
import { requireEnv, type Env } from '../lib/aws/env.js';
import { reportIfExpired, reportLag, reportRuns } from './shared/consumer-report.js';
import { instrumented } from './shared/observability.js';
import { openTable } from '../lib/aws/tables.js';

/** Time kept back from the invocation's budget for the lag report; runs without a Lambda context (tests) stop after 16. */
const [RESERVE_MS, DEFAULT_RUNS] = [15_000, 16];

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
  return async (
    event: ScheduledEvent | EventBridgeEvent<typeof SNAPSHOT_COMMITTED, SnapshotCommittedDetail>,
    context?: Context,
  ): Promise<DiscoverResult> => {
    const {
      VARVE_CONSUMER_ID: consumer,
      VARVE_SPLIT_QUEUE_URL: queueUrl,
      VARVE_TABLE: name,
    } = requireEnv(env, ['VARVE_CONSUMER_ID', 'VARVE_SPLIT_QUEUE_URL', 'VARVE_TABLE'], 'discover');
    checkConsumerId(consumer);
    // The rule matches on the table already; a foreign event (a shared bus, a manual test) is ignored.
    if (event['detail-type'] === SNAPSHOT_COMMITTED && (event.detail as SnapshotCommittedDetail).table !== name)
      return { skipped: 'other-table', runs: [] };
    const table = await openTable(env, 'discover');
    const mayGoOn = (runs: number) =>
      context ? context.getRemainingTimeInMillis() >= RESERVE_MS * 2 : runs < DEFAULT_RUNS;
    let runs: DiscoveryResult[] = [];
    let lagSnapshots: number | undefined;
    try {
      runs = await discoverUntilCaughtUp(
        table,
        new SqsSplitQueue({ queueUrl, client: sqsClient() }),
        consumer,
        mayGoOn,
      );
    } catch (e) {
      reportIfExpired(e, table, consumer);
      throw e;
    } finally {
      lagSnapshots = await reportLag(table, consumer);
    }
    reportRuns(table, consumer, event['detail-type'], runs, lagSnapshots);
    return { runs, lagSnapshots };
  };
}

/** Lambda entry of the discovery function. */
export const handler = instrumented(createDiscoverHandler());
