/**
 * CloudWatch alarms for varve tables and consumers: dead letters, commit latency and conflicts,
 * sorted runs piling up in a bucket, and consumer lag.
 */
import { Duration } from 'aws-cdk-lib';
import {
  Alarm,
  ComparisonOperator,
  Metric,
  TreatMissingData,
  type IAlarmAction,
  type IMetric,
} from 'aws-cdk-lib/aws-cloudwatch';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { VARVE_METRICS } from '../lib/aws-contract.js';
import type { StreamConsumer } from './stream-consumer.js';
import { VARVE_METRICS_NAMESPACE, VARVE_SERVICE_NAME, type VarveTable } from './table.js';

/** The custom metrics the handlers emit, with their dimensions (declared once, beside the handlers). */
export { VARVE_METRICS };

/** Where each alarm fires; every one has a default. */
export interface VarveAlarmThresholds {
  /** p99 commit latency over 5 minutes. @default 10000 ms */
  readonly commitLatencyP99Ms?: number;
  /** Lost commit races in 5 minutes. @default 20 */
  readonly commitConflicts?: number;
  /** Paimon's `num-sorted-run.stop-trigger`: writers stall beyond it. @default 8 (compaction trigger 5 + 3) */
  readonly sortedRunsStopTrigger?: number;
  /** Snapshots a consumer is behind. @default 50 */
  readonly consumerLagSnapshots?: number;
  /** Seconds a consumer is behind. @default 600 */
  readonly consumerLagSeconds?: number;
}

/** Options of {@link VarveAlarms}. */
export interface VarveAlarmsProps {
  /** Tables to watch. */
  readonly tables?: VarveTable[];
  /** Consumers to watch. */
  readonly consumers?: StreamConsumer[];
  /** Where the alarms fire. */
  readonly thresholds?: VarveAlarmThresholds;
  /** Actions of every alarm (e.g. an SNS topic action). @default none */
  readonly actions?: IAlarmAction[];
}

/**
 * The alarms of a set of varve tables and consumers; add more with {@link watchTable} and
 * {@link watchConsumer}.
 *
 * @example
 * const alarms = new VarveAlarms(this, 'Alarms', {
 *   tables: [orders],
 *   consumers: [audit],
 *   thresholds: { consumerLagSeconds: 300 },
 *   actions: [new SnsAction(topic)],
 * });
 */
export class VarveAlarms extends Construct {
  /** Every alarm created so far. */
  readonly alarms: Alarm[] = [];
  private readonly thresholds: VarveAlarmThresholds;
  private readonly actions: IAlarmAction[];

  constructor(scope: Construct, id: string, props: VarveAlarmsProps = {}) {
    super(scope, id);
    this.thresholds = props.thresholds ?? {};
    this.actions = props.actions ?? [];
    for (const table of props.tables ?? []) this.watchTable(table);
    for (const consumer of props.consumers ?? []) this.watchConsumer(consumer);
  }

  /** Alarms on the table's dead letters, commit latency and conflicts, and sorted runs. */
  watchTable(table: VarveTable): void {
    const scope = new Construct(this, `Table-${table.name}`);
    this.deadLetterAlarms(scope, table.deadLetterQueues);
    const dims = { service: VARVE_SERVICE_NAME, table: table.name };
    this.add(scope, 'CommitLatencyP99', `varve ${table.name}: p99 commit latency is high`, {
      metric: varveMetric(VARVE_METRICS.commitLatencyMs, dims, 'p99'),
      threshold: this.thresholds.commitLatencyP99Ms ?? 10_000,
      evaluationPeriods: 3,
    });
    this.add(scope, 'CommitConflicts', `varve ${table.name}: many commits lose the snapshot race`, {
      metric: varveMetric(VARVE_METRICS.commitConflicts, dims, 'Sum'),
      threshold: this.thresholds.commitConflicts ?? 20,
      evaluationPeriods: 1,
    });
    // The Maximum over all buckets' data points is the worst bucket.
    this.add(scope, 'SortedRuns', `varve ${table.name}: a bucket has more sorted runs than the stop trigger`, {
      metric: varveMetric(VARVE_METRICS.sortedRuns, dims, 'Maximum'),
      threshold: this.thresholds.sortedRunsStopTrigger ?? 8,
      evaluationPeriods: 1,
    });
  }

  /** Alarms on the consumer's dead letters and its lag in snapshots and in seconds. */
  watchConsumer(consumer: StreamConsumer): void {
    const scope = new Construct(this, `Consumer-${consumer.table.name}-${consumer.consumerId}`);
    this.deadLetterAlarms(scope, consumer.deadLetterQueues);
    const dims = { service: VARVE_SERVICE_NAME, table: consumer.table.name, consumer: consumer.consumerId };
    const who = `varve ${consumer.table.name} consumer ${consumer.consumerId}`;
    this.add(scope, 'LagSnapshots', `${who}: too many snapshots behind`, {
      metric: varveMetric(VARVE_METRICS.consumerLagSnapshots, dims, 'Maximum'),
      threshold: this.thresholds.consumerLagSnapshots ?? 50,
      evaluationPeriods: 3,
    });
    this.add(scope, 'LagSeconds', `${who}: too far behind in time`, {
      metric: varveMetric(VARVE_METRICS.consumerLagSeconds, dims, 'Maximum'),
      threshold: this.thresholds.consumerLagSeconds ?? 600,
      evaluationPeriods: 3,
    });
  }

  /** One alarm per DLQ: any message there is a record, commit, job or split that gave up. */
  private deadLetterAlarms(scope: Construct, queues: IQueue[]): void {
    for (const queue of queues) {
      this.add(scope, `${queue.node.id}Depth`, `varve: messages in dead-letter queue ${queue.node.path}`, {
        metric: queue.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(1), statistic: 'Maximum' }),
        threshold: 0,
        evaluationPeriods: 1,
      });
    }
  }

  private add(
    scope: Construct,
    id: string,
    description: string,
    opts: { metric: IMetric; threshold: number; evaluationPeriods: number },
  ): void {
    const alarm = new Alarm(scope, id, {
      ...opts,
      alarmDescription: description,
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      // No data means no commits, no compactions or no lag reported: nothing is wrong.
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
    for (const action of this.actions) alarm.addAlarmAction(action);
    this.alarms.push(alarm);
  }
}

/** A metric of the `Varve` namespace over 5-minute periods. */
function varveMetric(metricName: string, dimensionsMap: Record<string, string>, statistic: string): Metric {
  return new Metric({
    namespace: VARVE_METRICS_NAMESPACE,
    metricName,
    dimensionsMap,
    statistic,
    period: Duration.minutes(5),
  });
}
