/**
 * CloudWatch alarms for varve tables and consumers, each sent to an SNS topic (ALARM and OK):
 * function errors and throttles, the age of the oldest message of every work queue, every
 * dead-letter queue's depth, new rejects, commit latency and conflicts, sorted runs piling up in
 * a bucket and a bucket whose compaction stalls, expiry that stopped running, and consumer lag.
 * docs/AWS.md ("Runbook") says, per alarm, what it means, what to look at and what to run.
 *
 * VarveTable and StreamConsumer create theirs ({@link VarveTable.alarms}); the class is public
 * so that a stack can watch more with the same thresholds and topic.
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
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { VARVE_METRICS, VARVE_METRICS_NAMESPACE, VARVE_SERVICE_NAME } from '../lib/aws-contract.js';
import type { StreamConsumer } from './stream-consumer.js';
import type { VarveTable } from './table.js';

/** The custom metrics the handlers emit, with their dimensions (declared once, beside the handlers). */
export { VARVE_METRICS };

/** The work queues whose oldest message is watched, by role. */
export type WatchedQueue = 'ingest' | 'commit' | 'compact' | 'split' | 'discover';

/** Where each alarm fires; every one has a default. */
export interface VarveAlarmThresholds {
  /** p99 commit latency over 5 minutes. @default 10000 ms */
  readonly commitLatencyP99Ms?: number;
  /** Lost commit races in 5 minutes. @default 20 */
  readonly commitConflicts?: number;
  /** Paimon's `num-sorted-run.stop-trigger`: writers stall beyond it. @default 8 (compaction trigger 5 + 3) */
  readonly sortedRunsStopTrigger?: number;
  /** `num-sorted-run.compaction-trigger`: a bucket above it for {@link stalledBucketAfter} is stalled. @default 5 */
  readonly compactionTrigger?: number;
  /** How long a bucket may stay above the compaction trigger before it counts as stalled. @default 30 minutes */
  readonly stalledBucketAfter?: Duration;
  /** Snapshots a consumer is behind. @default 50 */
  readonly consumerLagSnapshots?: number;
  /** Seconds a consumer is behind. @default 600 */
  readonly consumerLagSeconds?: number;
  /** Function errors in 5 minutes above which a function alarms. @default 0 (any error) */
  readonly functionErrors?: number;
  /** Throttled invocations in 5 minutes above which a function alarms. @default 0 (any throttle) */
  readonly functionThrottles?: number;
  /** Records rejected in 5 minutes above which the rejects alarm fires. @default 0 (any reject) */
  readonly rejects?: number;
  /**
   * Age of the oldest message above which a work queue alarms.
   * @default ingest 5 min, commit 5 min, compact 1 hour, split 15 min, discover 10 min
   */
  readonly oldestMessageAge?: Partial<Record<WatchedQueue, Duration>>;
}

const OLDEST_MESSAGE_AGE: Record<WatchedQueue, Duration> = {
  ingest: Duration.minutes(5),
  commit: Duration.minutes(5),
  compact: Duration.hours(1),
  split: Duration.minutes(15),
  discover: Duration.minutes(10),
};

/** Options of {@link VarveAlarms}. */
export interface VarveAlarmsProps {
  /** The topic every alarm notifies, on ALARM and on OK. @default no notification (the alarms only change state) */
  readonly topic?: ITopic;
  /** Where the alarms fire. */
  readonly thresholds?: VarveAlarmThresholds;
  /** More actions of every alarm (besides the topic). @default none */
  readonly actions?: IAlarmAction[];
}

/** What an alarm is about: the `id` is also its anchor in docs/AWS.md's runbook. */
export type AlarmKind =
  | 'function-errors'
  | 'function-throttles'
  | 'oldest-message'
  | 'dead-letters'
  | 'rejects'
  | 'commit-latency'
  | 'commit-conflicts'
  | 'sorted-runs'
  | 'stalled-bucket'
  | 'expiry-not-running'
  | 'consumer-lag';

/** An alarm with the kind of trouble it reports. */
export interface VarveAlarm {
  readonly kind: AlarmKind;
  readonly alarm: Alarm;
}

/**
 * The alarms of a set of varve tables and consumers; {@link watchTable} and {@link watchConsumer}
 * add a table's or a consumer's.
 *
 * @example
 * const topic = new Topic(this, 'Pager');
 * const orders = new VarveTable(this, 'Orders', { warehouse, database: 'shop', table: 'orders', alarmTopic: topic });
 * orders.alarms.alarms; // every alarm of the table, each notifying `topic`
 */
export class VarveAlarms extends Construct {
  /** Every alarm created so far, with its kind. */
  readonly all: VarveAlarm[] = [];
  private readonly thresholds: VarveAlarmThresholds;
  private readonly actions: IAlarmAction[];

  constructor(scope: Construct, id: string, props: VarveAlarmsProps = {}) {
    super(scope, id);
    this.thresholds = props.thresholds ?? {};
    this.actions = [...(props.topic ? [new SnsAction(props.topic)] : []), ...(props.actions ?? [])];
  }

  /** Every alarm created so far. */
  get alarms(): Alarm[] {
    return this.all.map((a) => a.alarm);
  }

  /**
   * A table's alarms: its functions' errors and throttles, its work queues' oldest message, its
   * dead letters and rejects, commit latency and conflicts, sorted runs, a stalled bucket, and an
   * expiry that stopped running.
   */
  watchTable(table: VarveTable, scope: Construct = this): void {
    const t = this.thresholds;
    const who = `varve ${table.name}`;
    const functions: [string, IFunction | undefined][] = [
      ['Ingest', table.ingestFunction],
      ['Commit', table.commitFunction],
      ['Compact', table.compactFunction],
      ['Expire', table.expireFunction],
    ];
    for (const [name, fn] of functions) if (fn) this.functionAlarms(scope, name, fn, `${who} ${name.toLowerCase()}`);
    this.oldestMessage(scope, 'IngestQueue', table.ingestQueue, 'ingest', who);
    if (table.commitQueue) this.oldestMessage(scope, 'CommitQueue', table.commitQueue, 'commit', who);
    this.oldestMessage(scope, 'CompactQueue', table.compactQueue, 'compact', who);
    this.deadLetters(scope, table.deadLetterQueues, who);
    this.add(
      scope,
      'Rejects',
      'rejects',
      `${who}: records were rejected (they are in the rejects queue with their reasons)`,
      {
        metric: table.rejectsQueue.metricNumberOfMessagesSent({ period: Duration.minutes(5), statistic: 'Sum' }),
        threshold: t.rejects ?? 0,
        evaluationPeriods: 1,
      },
    );

    const dims = { service: VARVE_SERVICE_NAME, table: table.name };
    // No data means no commits: nothing is wrong.
    this.add(scope, 'CommitLatencyP99', 'commit-latency', `${who}: p99 commit latency is high`, {
      metric: varveMetric(VARVE_METRICS.commitLatencyMs, dims, 'p99'),
      threshold: t.commitLatencyP99Ms ?? 10_000,
      evaluationPeriods: 3,
    });
    this.add(scope, 'CommitConflicts', 'commit-conflicts', `${who}: many commits lose the snapshot race`, {
      metric: varveMetric(VARVE_METRICS.commitConflicts, dims, 'Sum'),
      threshold: t.commitConflicts ?? 20,
      evaluationPeriods: 1,
    });
    // The Maximum over all buckets' data points is the worst bucket.
    this.add(scope, 'SortedRuns', 'sorted-runs', `${who}: a bucket has more sorted runs than the stop trigger`, {
      metric: varveMetric(VARVE_METRICS.sortedRuns, dims, 'Maximum'),
      threshold: t.sortedRunsStopTrigger ?? 8,
      evaluationPeriods: 1,
    });
    // Above the compaction trigger for a whole window: compaction runs but does not bring the
    // bucket down (jobs failing, stuck behind a poison job, or slower than the writes).
    const stalledPeriods = Math.max(1, Math.ceil((t.stalledBucketAfter ?? Duration.minutes(30)).toMinutes() / 5));
    this.add(
      scope,
      'StalledBucket',
      'stalled-bucket',
      `${who}: a bucket stays above the compaction trigger; compaction is not keeping up`,
      {
        metric: varveMetric(VARVE_METRICS.sortedRuns, dims, 'Maximum'),
        threshold: t.compactionTrigger ?? 5,
        evaluationPeriods: stalledPeriods,
      },
    );
    // A schedule that stopped firing is silence: missing data is the incident here.
    const expirePeriod = alarmPeriod(table.expireEvery, Duration.hours(1));
    this.add(
      scope,
      'ExpiryNotRunning',
      'expiry-not-running',
      `${who}: snapshot expiry has not run; the table's files and requests grow`,
      {
        metric: table.expireFunction.metricInvocations({ period: expirePeriod, statistic: 'Sum' }),
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: ComparisonOperator.LESS_THAN_THRESHOLD,
        treatMissingData: TreatMissingData.BREACHING,
      },
    );
  }

  /** A consumer's alarms: its functions, its split and discovery queues, its dead letters, and its lag. */
  watchConsumer(consumer: StreamConsumer, scope: Construct = this): void {
    const t = this.thresholds;
    const who = `varve ${consumer.table.name} consumer ${consumer.consumerId}`;
    this.functionAlarms(scope, 'Discover', consumer.discoverFunction, `${who} discovery`);
    this.functionAlarms(scope, 'Read', consumer.readFunction, `${who} reader`);
    this.oldestMessage(scope, 'SplitQueue', consumer.splitQueue, 'split', who);
    this.oldestMessage(scope, 'DiscoverQueue', consumer.discoverQueue, 'discover', who);
    this.deadLetters(scope, consumer.deadLetterQueues, who);
    const dims = { service: VARVE_SERVICE_NAME, table: consumer.table.name, consumer: consumer.consumerId };
    // Discovery reports the lag on every run, failed runs included, at least once per schedule
    // period: no data means discovery does not run or cannot open the table, which is breaching.
    const period = alarmPeriod(consumer.discoverEvery, Duration.minutes(5));
    this.add(scope, 'LagSnapshots', 'consumer-lag', `${who}: too many snapshots behind, or discovery reports no lag`, {
      metric: varveMetric(VARVE_METRICS.consumerLagSnapshots, dims, 'Maximum', period),
      threshold: t.consumerLagSnapshots ?? 50,
      evaluationPeriods: 3,
      treatMissingData: TreatMissingData.BREACHING,
    });
    this.add(scope, 'LagSeconds', 'consumer-lag', `${who}: too far behind in time, or discovery reports no lag`, {
      metric: varveMetric(VARVE_METRICS.consumerLagSeconds, dims, 'Maximum', period),
      threshold: t.consumerLagSeconds ?? 600,
      evaluationPeriods: 3,
      treatMissingData: TreatMissingData.BREACHING,
    });
    // An expired consumer id has stopped for good: one data point is enough.
    this.add(
      scope,
      'Expired',
      'consumer-lag',
      `${who}: the consumer id expired (consumer.expiration-time) and stopped; resume it or start it afresh`,
      {
        metric: varveMetric(VARVE_METRICS.consumerExpired, dims, 'Sum', Duration.minutes(5)),
        threshold: 0,
        evaluationPeriods: 1,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      },
    );
    // Skipped expired snapshots (skip-to-earliest) are changes the consumer will never get.
    this.add(
      scope,
      'SkippedSnapshots',
      'consumer-lag',
      `${who}: the consumer skipped expired snapshots (scan.on-expired skip-to-earliest); their changes are lost to it`,
      {
        metric: varveMetric(VARVE_METRICS.consumerSnapshotsSkipped, dims, 'Sum', Duration.minutes(5)),
        threshold: 0,
        evaluationPeriods: 1,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      },
    );
  }

  /** Errors and throttles of one function; no invocations is no data, which is fine. */
  private functionAlarms(scope: Construct, id: string, fn: IFunction, who: string): void {
    const period = Duration.minutes(5);
    this.add(scope, `${id}Errors`, 'function-errors', `${who}: invocations failed`, {
      metric: fn.metricErrors({ period, statistic: 'Sum' }),
      threshold: this.thresholds.functionErrors ?? 0,
      evaluationPeriods: 1,
    });
    this.add(scope, `${id}Throttles`, 'function-throttles', `${who}: invocations were throttled`, {
      metric: fn.metricThrottles({ period, statistic: 'Sum' }),
      threshold: this.thresholds.functionThrottles ?? 0,
      evaluationPeriods: 1,
    });
  }

  /** The oldest message of a work queue: a stuck message group or consumers that do not keep up. */
  private oldestMessage(scope: Construct, id: string, queue: IQueue, role: WatchedQueue, who: string): void {
    const age = this.thresholds.oldestMessageAge?.[role] ?? OLDEST_MESSAGE_AGE[role];
    this.add(
      scope,
      `${id}OldestMessage`,
      'oldest-message',
      `${who}: the oldest message of the ${role} queue is older than ${age.toHumanString()}`,
      {
        metric: queue.metricApproximateAgeOfOldestMessage({ period: Duration.minutes(1), statistic: 'Maximum' }),
        threshold: age.toSeconds(),
        evaluationPeriods: 5,
      },
    );
  }

  /** One alarm per DLQ: any message there is a record, commit, job, split or run that gave up. */
  private deadLetters(scope: Construct, queues: IQueue[], who: string): void {
    for (const queue of queues) {
      this.add(
        scope,
        `${queue.node.id}Depth`,
        'dead-letters',
        `${who}: messages in dead-letter queue ${queue.node.id}`,
        {
          metric: queue.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(1), statistic: 'Maximum' }),
          threshold: 0,
          evaluationPeriods: 1,
        },
      );
    }
  }

  private add(
    scope: Construct,
    id: string,
    kind: AlarmKind,
    description: string,
    opts: {
      metric: IMetric;
      threshold: number;
      evaluationPeriods: number;
      comparisonOperator?: ComparisonOperator;
      treatMissingData?: TreatMissingData;
    },
  ): void {
    const alarm = new Alarm(scope, id, {
      metric: opts.metric,
      threshold: opts.threshold,
      evaluationPeriods: opts.evaluationPeriods,
      alarmDescription: `${description}. Runbook: docs/AWS.md#${kind}`,
      comparisonOperator: opts.comparisonOperator ?? ComparisonOperator.GREATER_THAN_THRESHOLD,
      treatMissingData: opts.treatMissingData ?? TreatMissingData.NOT_BREACHING,
    });
    for (const action of this.actions) {
      alarm.addAlarmAction(action);
      alarm.addOkAction(action);
    }
    this.all.push({ kind, alarm });
  }
}

/** A metric of the `Varve` namespace, over 5-minute periods unless told. */
export function varveMetric(
  metricName: string,
  dimensionsMap: Record<string, string>,
  statistic: string,
  period: Duration = Duration.minutes(5),
): Metric {
  return new Metric({ namespace: VARVE_METRICS_NAMESPACE, metricName, dimensionsMap, statistic, period });
}

/**
 * The period of an alarm on something that happens every `every`: at least `floor`, at least
 * `every` (a longer schedule must not look like silence), in whole minutes, at most a day.
 */
function alarmPeriod(every: Duration, floor: Duration): Duration {
  const minutes = Math.min(24 * 60, Math.max(floor.toMinutes(), Math.ceil(every.toSeconds() / 60)));
  return Duration.minutes(minutes);
}
