import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Duration } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { describe, expect, it } from 'vitest';
import type { VarveAlarmThresholds } from '../../infra/alarms.js';
import { PROJECT_ROOT } from '../../infra/lambda.js';
import { StreamConsumer } from '../../infra/stream-consumer.js';
import { VarveTable } from '../../infra/table.js';
import { Warehouse } from '../../infra/warehouse.js';
import { logicalId, resourcesOf, testStack, type Resource } from './template.js';

const SINK = fileURLToPath(new URL('./fixtures/sink.ts', import.meta.url));

function synth(
  opts: { thresholds?: VarveAlarmThresholds; topic?: 'warehouse' | 'table' | 'none'; discoverEvery?: Duration } = {},
) {
  const stack = testStack();
  const topic = opts.topic === 'none' ? undefined : new Topic(stack, 'Pager');
  const warehouse = new Warehouse(stack, 'Warehouse', { alarmTopic: opts.topic === 'table' ? undefined : topic });
  const table = new VarveTable(stack, 'Orders', {
    warehouse,
    database: 'shop',
    table: 'orders',
    alarmTopic: opts.topic === 'table' ? topic : undefined,
    alarmThresholds: opts.thresholds,
  });
  const consumer = new StreamConsumer(stack, 'Audit', {
    table,
    consumerId: 'orders-audit',
    sink: { kind: 'function', entry: SINK },
    discoverEvery: opts.discoverEvery,
  });
  return { stack, table, consumer, topic, template: Template.fromStack(stack) };
}

/** The default stack, synthesised once for the tests that only read it (each synth is ≈ 0.5–1 s of CPU). */
let defaultSynth: ReturnType<typeof synth> | undefined;
function synthDefault(): ReturnType<typeof synth> {
  defaultSynth ??= synth();
  return defaultSynth;
}

function alarms(template: Template): Resource[] {
  return Object.values(resourcesOf(template, 'AWS::CloudWatch::Alarm'));
}

function alarmsOn(template: Template, metricName: string): Resource[] {
  return alarms(template).filter((a) => a.Properties.MetricName === metricName);
}

/** The logical id an alarm's first dimension points at (Ref or Fn::GetAtt). */
function watched(a: Resource): string {
  const v = a.Properties.Dimensions[0].Value;
  return v.Ref ?? v['Fn::GetAtt'][0];
}

describe('table and consumer alarms', () => {
  it('sends every alarm of the table and the consumer to the topic, on ALARM and on OK', () => {
    // Prepare / Act
    const { template, topic, table, consumer } = synthDefault();
    // Assess: every alarm in the template is one of the constructs' and notifies the topic
    const all = alarms(template);
    expect(all).toHaveLength(table.alarms.alarms.length + consumer.alarms.alarms.length);
    expect(all.length).toBeGreaterThan(25);
    for (const a of all) {
      expect(a.Properties.AlarmActions).toEqual([{ Ref: logicalId(topic!) }]);
      expect(a.Properties.OKActions).toEqual([{ Ref: logicalId(topic!) }]);
      expect(a.Properties.AlarmDescription).toMatch(/Runbook: docs\/AWS\.md#[a-z-]+$/);
    }
  });

  it('points every alarm at a runbook section of docs/AWS.md that exists', () => {
    const { template } = synthDefault();
    const doc = readFileSync(path.join(PROJECT_ROOT, 'docs', 'AWS.md'), 'utf8');
    const kinds = new Set(alarms(template).map((a) => /#([a-z-]+)$/.exec(a.Properties.AlarmDescription as string)![1]));
    expect(kinds.size).toBe(11);
    for (const kind of kinds) expect(doc, kind).toContain(`\n### ${kind}\n`);
  });

  it('takes the topic from the table when the warehouse has none, and has no action without a topic', () => {
    const withTable = synth({ topic: 'table' });
    for (const a of alarms(withTable.template))
      expect(a.Properties.AlarmActions).toEqual([{ Ref: logicalId(withTable.topic!) }]);
    const without = synth({ topic: 'none' });
    expect(alarms(without.template).length).toBeGreaterThan(25);
    for (const a of alarms(without.template)) expect(a.Properties.AlarmActions).toBeUndefined();
  });

  it('alarms on errors and throttles of every function', () => {
    const { template, table, consumer } = synthDefault();
    const fns = [
      table.ingestFunction,
      table.commitFunction!,
      table.compactFunction,
      table.expireFunction,
      consumer.discoverFunction,
      consumer.readFunction,
    ];
    for (const metric of ['Errors', 'Throttles']) {
      const found = alarmsOn(template, metric);
      expect(found.map(watched).sort()).toEqual(fns.map(logicalId).sort());
      for (const a of found) {
        expect(a.Properties).toMatchObject({
          Namespace: 'AWS/Lambda',
          Statistic: 'Sum',
          Threshold: 0,
          Period: 300,
          TreatMissingData: 'notBreaching',
        });
      }
    }
  });

  it('alarms on the oldest message of every work queue, with a threshold per role', () => {
    const { template, table, consumer } = synth({
      thresholds: { oldestMessageAge: { compact: Duration.minutes(20) } },
    });
    const expected = new Map([
      [logicalId(table.ingestQueue), 300],
      [logicalId(table.commitQueue!), 300],
      [logicalId(table.compactQueue), 1200],
      [logicalId(consumer.splitQueue), 900],
      [logicalId(consumer.discoverQueue), 600],
    ]);
    const found = alarmsOn(template, 'ApproximateAgeOfOldestMessage');
    expect(new Map(found.map((a) => [watched(a), a.Properties.Threshold]))).toEqual(expected);
    for (const a of found)
      expect(a.Properties).toMatchObject({ Namespace: 'AWS/SQS', Statistic: 'Maximum', EvaluationPeriods: 5 });
  });

  it('alarms on every dead-letter queue as soon as one message lands, expiry and discovery failures included', () => {
    const { template, table, consumer } = synthDefault();
    const dlqs = [...table.deadLetterQueues, ...consumer.deadLetterQueues];
    // ingest, compact, expire failures, commit; split, discover, discovery triggers
    expect(dlqs).toHaveLength(7);
    const found = alarmsOn(template, 'ApproximateNumberOfMessagesVisible');
    expect(found.map(watched).sort()).toEqual(dlqs.map(logicalId).sort());
    for (const a of found) {
      expect(a.Properties).toMatchObject({
        Namespace: 'AWS/SQS',
        Statistic: 'Maximum',
        Threshold: 0,
        ComparisonOperator: 'GreaterThanThreshold',
        Period: 60,
      });
    }
  });

  it('alarms on records sent to the rejects queue', () => {
    const { template, table } = synth({ thresholds: { rejects: 10 } });
    const [rejects] = alarmsOn(template, 'NumberOfMessagesSent');
    expect(watched(rejects)).toBe(logicalId(table.rejectsQueue));
    expect(rejects.Properties).toMatchObject({ Statistic: 'Sum', Threshold: 10, Period: 300 });
  });

  it('alarms on p99 commit latency and on commit conflicts of the table; no commits is fine', () => {
    const { template } = synthDefault();
    const dims = [
      { Name: 'service', Value: 'varve' },
      { Name: 'table', Value: 'shop.orders' },
    ];
    const [latency] = alarmsOn(template, 'CommitLatencyMs');
    expect(latency.Properties).toMatchObject({
      Namespace: 'Varve',
      ExtendedStatistic: 'p99',
      Threshold: 10_000,
      Dimensions: dims,
      TreatMissingData: 'notBreaching',
    });
    const [conflicts] = alarmsOn(template, 'CommitConflicts');
    expect(conflicts.Properties).toMatchObject({
      Namespace: 'Varve',
      Statistic: 'Sum',
      Threshold: 20,
      Dimensions: dims,
    });
  });

  it('alarms when a bucket passes the stop trigger, and when one stays above the compaction trigger (stalled)', () => {
    const { template } = synth({ thresholds: { stalledBucketAfter: Duration.hours(1) } });
    const runs = alarmsOn(template, 'SortedRuns').sort((a, b) => a.Properties.Threshold - b.Properties.Threshold);
    expect(runs).toHaveLength(2);
    expect(runs[0].Properties).toMatchObject({
      Statistic: 'Maximum',
      Threshold: 5,
      EvaluationPeriods: 12,
      Period: 300,
    });
    expect(runs[0].Properties.AlarmDescription).toMatch(/#stalled-bucket$/);
    expect(runs[1].Properties).toMatchObject({ Statistic: 'Maximum', Threshold: 8, EvaluationPeriods: 1 });
  });

  it('alarms when expiry stops running: no invocation in an hour is breaching', () => {
    const { template, table } = synthDefault();
    const [expiry] = alarmsOn(template, 'Invocations');
    expect(watched(expiry)).toBe(logicalId(table.expireFunction));
    expect(expiry.Properties).toMatchObject({
      Statistic: 'Sum',
      Threshold: 1,
      ComparisonOperator: 'LessThanThreshold',
      Period: 3600,
      TreatMissingData: 'breaching',
    });
  });

  it('alarms on consumer lag in snapshots and in seconds; no lag reported is breaching (discovery is broken)', () => {
    const { template } = synthDefault();
    const dims = [
      { Name: 'consumer', Value: 'orders-audit' },
      { Name: 'service', Value: 'varve' },
      { Name: 'table', Value: 'shop.orders' },
    ];
    for (const [metric, threshold] of [
      ['ConsumerLagSnapshots', 50],
      ['ConsumerLagSeconds', 600],
    ] as const) {
      const found = alarmsOn(template, metric);
      expect(found).toHaveLength(1);
      expect(found[0].Properties).toMatchObject({
        Namespace: 'Varve',
        Statistic: 'Maximum',
        Threshold: threshold,
        Period: 300,
        TreatMissingData: 'breaching',
      });
      const sorted = [...found[0].Properties.Dimensions].sort((a: { Name: string }, b: { Name: string }) =>
        a.Name.localeCompare(b.Name),
      );
      expect(sorted).toEqual(dims);
    }
  });

  it('alarms at the first ConsumerExpired or ConsumerSnapshotsSkipped data point of the consumer; none reported is fine', () => {
    const { template } = synthDefault();
    for (const metric of ['ConsumerExpired', 'ConsumerSnapshotsSkipped']) {
      const found = alarmsOn(template, metric);
      expect(found, metric).toHaveLength(1);
      expect(found[0].Properties).toMatchObject({
        Namespace: 'Varve',
        Statistic: 'Sum',
        Threshold: 0,
        Period: 300,
        TreatMissingData: 'notBreaching',
        ComparisonOperator: 'GreaterThanThreshold',
      });
    }
  });

  it('stretches the lag period to a slower discovery schedule, so a quiet schedule is not silence', () => {
    const { template } = synth({ discoverEvery: Duration.minutes(10) });
    for (const a of alarmsOn(template, 'ConsumerLagSnapshots')) expect(a.Properties.Period).toBe(600);
  });

  it('takes thresholds from the table, and the consumer inherits them', () => {
    const { template } = synth({
      thresholds: {
        commitLatencyP99Ms: 2_000,
        commitConflicts: 3,
        sortedRunsStopTrigger: 12,
        consumerLagSnapshots: 5,
        consumerLagSeconds: 60,
        functionErrors: 2,
      },
    });
    expect(alarmsOn(template, 'CommitLatencyMs')[0].Properties.Threshold).toBe(2_000);
    expect(alarmsOn(template, 'CommitConflicts')[0].Properties.Threshold).toBe(3);
    expect(
      alarmsOn(template, 'SortedRuns')
        .map((a) => a.Properties.Threshold)
        .sort((a, b) => a - b),
    ).toEqual([5, 12]);
    expect(alarmsOn(template, 'ConsumerLagSnapshots')[0].Properties.Threshold).toBe(5);
    expect(alarmsOn(template, 'ConsumerLagSeconds')[0].Properties.Threshold).toBe(60);
    for (const a of alarmsOn(template, 'Errors')) expect(a.Properties.Threshold).toBe(2);
  });
});

describe('failure destinations of scheduled work', () => {
  it('sends a failed expiry run, and an expiry event EventBridge could not deliver, to the expiry DLQ', () => {
    const { template, table } = synthDefault();
    const configs = Object.values(resourcesOf(template, 'AWS::Lambda::EventInvokeConfig'));
    const expire = configs.find((c) => c.Properties.FunctionName.Ref === logicalId(table.expireFunction));
    expect(expire?.Properties.DestinationConfig.OnFailure.Destination['Fn::GetAtt'][0]).toBe(
      logicalId(table.expireFailures),
    );
    const rules = Object.values(resourcesOf(template, 'AWS::Events::Rule')).filter((r) =>
      (r.Properties.Targets ?? []).some(
        (t: { Arn: { 'Fn::GetAtt': string[] } }) => t.Arn['Fn::GetAtt']?.[0] === logicalId(table.expireFunction),
      ),
    );
    // The 15-minute expiry schedule and the daily orphan scan: both end in the expiry DLQ.
    expect(rules).toHaveLength(2);
    for (const r of rules)
      expect(r.Properties.Targets[0].DeadLetterConfig.Arn['Fn::GetAtt'][0]).toBe(logicalId(table.expireFailures));
  });

  it('feeds discovery through a single-group FIFO queue with a DLQ instead of reserved concurrency 1 (no throttles)', () => {
    const { template, consumer } = synthDefault();
    const fn = resourcesOf(template, 'AWS::Lambda::Function')[logicalId(consumer.discoverFunction)];
    expect(fn.Properties.ReservedConcurrentExecutions).toBeUndefined();
    const queue = resourcesOf(template, 'AWS::SQS::Queue')[logicalId(consumer.discoverQueue)];
    // Lambda's 6x the discovery timeout (120 s), like every queue varve consumes.
    expect(queue.Properties).toMatchObject({
      FifoQueue: true,
      ContentBasedDeduplication: true,
      VisibilityTimeout: 720,
    });
    expect(queue.Properties.RedrivePolicy.deadLetterTargetArn['Fn::GetAtt'][0]).toBe(
      logicalId(consumer.deadLetterQueues[1]),
    );
    const mappings = Object.values(resourcesOf(template, 'AWS::Lambda::EventSourceMapping')).filter(
      (m) => m.Properties.FunctionName.Ref === logicalId(consumer.discoverFunction),
    );
    expect(mappings).toHaveLength(1);
    expect(mappings[0].Properties.EventSourceArn['Fn::GetAtt'][0]).toBe(logicalId(consumer.discoverQueue));
    // Both the schedule and the commit events go to the queue, in one message group.
    const rules = Object.values(resourcesOf(template, 'AWS::Events::Rule')).filter((r) =>
      (r.Properties.Targets ?? []).some(
        (t: { Arn: { 'Fn::GetAtt': string[] } }) => t.Arn['Fn::GetAtt']?.[0] === logicalId(consumer.discoverQueue),
      ),
    );
    expect(rules).toHaveLength(2);
    // A trigger EventBridge could not deliver goes to a standard queue: EventBridge refuses a FIFO
    // queue as a target's DLQ ("SQS FIFO is not supported by Dead Letter Queues").
    const triggerDlq = consumer.deadLetterQueues[2];
    expect(resourcesOf(template, 'AWS::SQS::Queue')[logicalId(triggerDlq)].Properties.FifoQueue).toBeUndefined();
    for (const r of rules) {
      expect(r.Properties.Targets[0].SqsParameters).toEqual({ MessageGroupId: 'discover' });
      expect(r.Properties.Targets[0].DeadLetterConfig.Arn['Fn::GetAtt'][0]).toBe(logicalId(triggerDlq));
    }
  });
});

describe('dashboards', () => {
  it('has one dashboard per table and per consumer showing commits, conflicts, sorted runs, lag and dead letters', () => {
    const { stack, template, table, consumer } = synthDefault();
    const dashboards = resourcesOf(template, 'AWS::CloudWatch::Dashboard');
    expect(Object.keys(dashboards).sort()).toEqual([logicalId(table.dashboard), logicalId(consumer.dashboard)].sort());
    const body = (d: { node: unknown }) =>
      JSON.stringify(
        stack.resolve(
          (d as unknown as { node: { defaultChild: { dashboardBody: unknown } } }).node.defaultChild.dashboardBody,
        ),
      );
    const tableBody = body(table.dashboard);
    for (const m of [
      'CommitLatencyMs',
      'CommitConflicts',
      'SortedRuns',
      'ApproximateNumberOfMessagesVisible',
      'ApproximateAgeOfOldestMessage',
      'Errors',
      'Alarms of shop.orders',
    ]) {
      expect(tableBody).toContain(m);
    }
    const consumerBody = body(consumer.dashboard);
    for (const m of [
      'ConsumerLagSnapshots',
      'ConsumerLagSeconds',
      'orders-audit',
      'ApproximateNumberOfMessagesVisible',
    ])
      expect(consumerBody).toContain(m);
  });
});
