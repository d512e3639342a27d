/**
 * CloudWatch dashboards: one per table (commit rate and latency, conflicts, sorted runs per
 * bucket, queue depth and age, dead letters, function errors) and one per consumer (lag in
 * snapshots and seconds, split queue, dead letters, reader and discovery errors). Each alarm of
 * the table or consumer is shown as well, so the dashboard is where an on-call engineer lands.
 */
import { Duration } from 'aws-cdk-lib';
import { AlarmStatusWidget, Dashboard, GraphWidget, type IMetric, type IWidget } from 'aws-cdk-lib/aws-cloudwatch';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { VARVE_METRICS, VARVE_SERVICE_NAME } from '../lib/aws-contract.js';
import { varveMetric, type VarveAlarms } from './alarms.js';
import type { StreamConsumer } from './stream-consumer.js';
import type { VarveTable } from './table.js';

const PERIOD = Duration.minutes(1);

/** The dashboard of one table. */
export function createTableDashboard(scope: Construct, id: string, table: VarveTable, alarms: VarveAlarms): Dashboard {
  const dims = { service: VARVE_SERVICE_NAME, table: table.name };
  const latency = (stat: string) =>
    varveMetric(VARVE_METRICS.commitLatencyMs, dims, stat, PERIOD).with({ label: `commit latency ${stat}` });
  const queues: [string, IQueue | undefined][] = [
    ['ingest', table.ingestQueue],
    ['commit', table.commitQueue],
    ['compact', table.compactQueue],
  ];
  const present = queues.filter((q): q is [string, IQueue] => q[1] !== undefined);
  const functions: [string, IFunction | undefined][] = [
    ['ingest', table.ingestFunction],
    ['commit', table.commitFunction],
    ['compact', table.compactFunction],
    ['expire', table.expireFunction],
  ];
  const widgets: IWidget[][] = [
    [
      graph('Commits per minute', [
        varveMetric(VARVE_METRICS.commitLatencyMs, dims, 'SampleCount', PERIOD).with({ label: 'commits' }),
      ]),
      graph('Commit latency (ms)', [latency('p50'), latency('p99')]),
      graph('Commit conflicts', [
        varveMetric(VARVE_METRICS.commitConflicts, dims, 'Sum', PERIOD).with({ label: 'lost races' }),
      ]),
    ],
    [
      graph('Sorted runs (worst bucket reported)', [
        varveMetric(VARVE_METRICS.sortedRuns, dims, 'Maximum', PERIOD).with({ label: 'max sorted runs' }),
        varveMetric(VARVE_METRICS.sortedRuns, dims, 'Average', PERIOD).with({ label: 'mean sorted runs' }),
      ]),
      graph(
        'Queue depth',
        present.map(([n, q]) =>
          q.metricApproximateNumberOfMessagesVisible({ period: PERIOD, statistic: 'Maximum', label: n }),
        ),
      ),
      graph(
        'Oldest message (s)',
        present.map(([n, q]) =>
          q.metricApproximateAgeOfOldestMessage({ period: PERIOD, statistic: 'Maximum', label: n }),
        ),
      ),
    ],
    [
      graph('Dead letters and rejects', [
        ...deadLetterDepth(table.deadLetterQueues),
        table.rejectsQueue.metricNumberOfMessagesSent({ period: PERIOD, statistic: 'Sum', label: 'rejected records' }),
      ]),
      graph('Function errors', errorsOf(functions)),
      graph('Function throttles', throttlesOf(functions)),
    ],
    [new AlarmStatusWidget({ title: `Alarms of ${table.name}`, alarms: alarms.alarms, width: 24 })],
  ];
  return new Dashboard(scope, id, { widgets, defaultInterval: Duration.hours(3) });
}

/** The dashboard of one consumer. */
export function createConsumerDashboard(
  scope: Construct,
  id: string,
  consumer: StreamConsumer,
  alarms: VarveAlarms,
): Dashboard {
  const dims = { service: VARVE_SERVICE_NAME, table: consumer.table.name, consumer: consumer.consumerId };
  const functions: [string, IFunction | undefined][] = [
    ['discover', consumer.discoverFunction],
    ['read', consumer.readFunction],
  ];
  const widgets: IWidget[][] = [
    [
      graph('Lag (snapshots)', [
        varveMetric(VARVE_METRICS.consumerLagSnapshots, dims, 'Maximum', PERIOD).with({ label: 'snapshots behind' }),
      ]),
      graph('Lag (seconds)', [
        varveMetric(VARVE_METRICS.consumerLagSeconds, dims, 'Maximum', PERIOD).with({ label: 'seconds behind' }),
      ]),
      graph('Split queue', [
        consumer.splitQueue.metricApproximateNumberOfMessagesVisible({
          period: PERIOD,
          statistic: 'Maximum',
          label: 'splits waiting',
        }),
        consumer.splitQueue.metricApproximateAgeOfOldestMessage({
          period: PERIOD,
          statistic: 'Maximum',
          label: 'oldest split (s)',
        }),
      ]),
    ],
    [
      graph('Dead letters', deadLetterDepth(consumer.deadLetterQueues)),
      graph('Function errors', errorsOf(functions)),
      graph('Reader duration (ms)', [
        consumer.readFunction.metricDuration({ period: PERIOD, statistic: 'p99', label: 'p99' }),
      ]),
    ],
    [
      new AlarmStatusWidget({
        title: `Alarms of ${consumer.table.name} / ${consumer.consumerId}`,
        alarms: alarms.alarms,
        width: 24,
      }),
    ],
  ];
  return new Dashboard(scope, id, { widgets, defaultInterval: Duration.hours(3) });
}

function graph(title: string, left: IMetric[]): GraphWidget {
  return new GraphWidget({ title, left, width: 8, height: 6 });
}

function deadLetterDepth(queues: IQueue[]): IMetric[] {
  return queues.map((q) =>
    q.metricApproximateNumberOfMessagesVisible({ period: PERIOD, statistic: 'Maximum', label: q.node.id }),
  );
}

function errorsOf(functions: [string, IFunction | undefined][]): IMetric[] {
  return functions.flatMap(([n, fn]) => (fn ? [fn.metricErrors({ period: PERIOD, statistic: 'Sum', label: n })] : []));
}

function throttlesOf(functions: [string, IFunction | undefined][]): IMetric[] {
  return functions.flatMap(([n, fn]) =>
    fn ? [fn.metricThrottles({ period: PERIOD, statistic: 'Sum', label: n })] : [],
  );
}
