/**
 * What the discovery function reports about its consumer: the lag after every invocation (also a
 * failed one, so the lag alarm fires instead of going quiet) and an expired consumer id, which is
 * logged as an error and counted (ConsumerExpired) before the invocation fails; and what the
 * runs planned, with the OVERWRITE snapshots they skipped, and the expired snapshots a consumer
 * resumed with `scan.on-expired = skip-to-earliest` skipped (logged as an error and counted:
 * ConsumerSnapshotsSkipped).
 */
import { ConsumerExpiredError } from '../../lib/errors.js';
import type { DiscoveryResult } from '../../lib/stream/discovery.js';
import { consumerLag } from '../../lib/stream/progress.js';
import { describeGap } from '../../lib/snapshot/consumer.js';
import type { Table } from '../../lib/table/table.js';
import { emitMetric, log, METRIC, UNIT } from './observability.js';

/** Logs and counts `e` when it says the consumer expired; the caller rethrows it either way. */
export function reportIfExpired(e: unknown, table: Table, consumer: string): void {
  if (!(e instanceof ConsumerExpiredError)) return;
  // Never started again silently: it stops, loudly, until the user decides.
  log().error(
    'the consumer expired and has stopped; resume it with scan.on-expired skip-to-earliest or start it afresh',
    {
      table: table.name,
      consumer,
      lastPosition: e.lastPosition,
      lostRange: e.lostRange,
      error: e,
    },
  );
  emitMetric(METRIC.consumerExpired, UNIT.count, 1, { table: table.name, consumer });
}

/** Emits ConsumerLagSnapshots and ConsumerLagSeconds (dimensions `table`, `consumer`); the lag in snapshots, if it could be read. */
export async function reportLag(table: Table, consumer: string): Promise<number | undefined> {
  const lag = await consumerLag(table, consumer).catch((e: Error) =>
    log().warn('the consumer lag could not be read', { table: table.name, consumer, error: e }),
  );
  if (!lag) return undefined;
  emitMetric(METRIC.consumerLagSnapshots, UNIT.count, lag.snapshots, { table: table.name, consumer });
  emitMetric(METRIC.consumerLagSeconds, UNIT.seconds, Math.round(lag.millis / 1000), { table: table.name, consumer });
  return lag.snapshots;
}

/** Logs what the discovery runs of one invocation planned and sent, warning about skipped OVERWRITE snapshots. */
export function reportRuns(
  table: Table,
  consumer: string,
  trigger: string,
  runs: DiscoveryResult[],
  lagSnapshots: number | undefined,
): void {
  const sent = runs.reduce((s, r) => s + r.sent, 0);
  const overwritesSkipped = runs.flatMap((r) => r.overwritesSkipped);
  if (overwritesSkipped.length > 0) {
    log().warn('OVERWRITE snapshots skipped: their changes are not streamed (streaming-read-overwrite=false)', {
      table: table.name,
      consumer,
      snapshots: overwritesSkipped,
    });
  }
  const gaps = runs.flatMap((r) => r.gaps);
  if (gaps.length > 0) {
    // Accepted by the user's skip-to-earliest, but never silent: what the consumer will not get.
    log().error(
      'the consumer skipped expired snapshots: their changes are lost to it (scan.on-expired = skip-to-earliest)',
      {
        table: table.name,
        consumer,
        skipped: gaps.map((g) => ({ snapshots: describeGap(g), reason: g.reason })),
      },
    );
    const skipped = gaps.reduce((n, g) => n + (g.to - g.from), 0);
    emitMetric(METRIC.consumerSnapshotsSkipped, UNIT.count, skipped, { table: table.name, consumer });
  }
  log().info('discovery', {
    table: table.name,
    consumer,
    trigger,
    planned: runs.map((r) => r.planned).filter(Boolean),
    sent,
    nextSnapshot: runs.at(-1)?.nextSnapshot,
    lagSnapshots,
  });
}
