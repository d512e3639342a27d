import { fileURLToPath } from 'node:url';
import { Template } from 'aws-cdk-lib/assertions';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { describe, expect, it } from 'vitest';
import { VarveAlarms, type VarveAlarmThresholds } from '../../infra/alarms.js';
import { StreamConsumer } from '../../infra/stream-consumer.js';
import { VarveTable } from '../../infra/table.js';
import { Warehouse } from '../../infra/warehouse.js';
import { logicalId, resourcesOf, testStack, type Resource } from './template.js';

const SINK = fileURLToPath(new URL('./fixtures/sink.ts', import.meta.url));

function synth(thresholds?: VarveAlarmThresholds, withTopic = false) {
  const stack = testStack();
  const warehouse = new Warehouse(stack, 'Warehouse');
  const table = new VarveTable(stack, 'Orders', { warehouse, database: 'shop', table: 'orders' });
  const consumer = new StreamConsumer(stack, 'Audit', { table, consumerId: 'orders-audit', sink: { kind: 'function', entry: SINK } });
  const topic = withTopic ? new Topic(stack, 'Pager') : undefined;
  const alarms = new VarveAlarms(stack, 'Alarms', {
    tables: [table],
    consumers: [consumer],
    thresholds,
    actions: topic ? [new SnsAction(topic)] : undefined,
  });
  return { stack, table, consumer, alarms, topic, template: Template.fromStack(stack) };
}

function alarmsOn(template: Template, metricName: string): Resource[] {
  return Object.values(resourcesOf(template, 'AWS::CloudWatch::Alarm')).filter((a) => a.Properties.MetricName === metricName);
}

describe('VarveAlarms', () => {
  it('alarms on every dead-letter queue of the table and the consumer as soon as one message lands', () => {
    // Prepare / Act
    const { template, table, consumer } = synth();
    const dlqs = [...table.deadLetterQueues, ...consumer.deadLetterQueues];
    const alarms = alarmsOn(template, 'ApproximateNumberOfMessagesVisible');
    // Assess: one per DLQ (ingest, compact, commit, split), none on a work queue
    expect(dlqs).toHaveLength(4);
    expect(alarms).toHaveLength(4);
    const watched = alarms.map((a) => a.Properties.Dimensions[0].Value['Fn::GetAtt'][0]).sort();
    expect(watched).toEqual(dlqs.map(logicalId).sort());
    for (const a of alarms) {
      expect(a.Properties).toMatchObject({
        Namespace: 'AWS/SQS',
        Statistic: 'Maximum',
        Threshold: 0,
        ComparisonOperator: 'GreaterThanThreshold',
        EvaluationPeriods: 1,
        Period: 60,
      });
    }
  });

  it('alarms on p99 commit latency and on commit conflicts of the table', () => {
    const { template } = synth();
    const dims = [
      { Name: 'service', Value: 'varve' },
      { Name: 'table', Value: 'shop.orders' },
    ];
    const [latency] = alarmsOn(template, 'CommitLatencyMs');
    expect(latency.Properties).toMatchObject({ Namespace: 'Varve', ExtendedStatistic: 'p99', Threshold: 10_000, Dimensions: dims });
    const [conflicts] = alarmsOn(template, 'CommitConflicts');
    expect(conflicts.Properties).toMatchObject({ Namespace: 'Varve', Statistic: 'Sum', Threshold: 20, Dimensions: dims });
  });

  it('alarms when a bucket has more sorted runs than the stop trigger', () => {
    const { template } = synth();
    const [runs] = alarmsOn(template, 'SortedRuns');
    expect(runs.Properties).toMatchObject({
      Namespace: 'Varve',
      Statistic: 'Maximum',
      Threshold: 8,
      ComparisonOperator: 'GreaterThanThreshold',
    });
  });

  it('alarms on consumer lag in snapshots and in seconds, per table and consumer', () => {
    const { template } = synth();
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
      expect(found[0].Properties).toMatchObject({ Namespace: 'Varve', Statistic: 'Maximum', Threshold: threshold });
      const sorted = [...found[0].Properties.Dimensions].sort((a: { Name: string }, b: { Name: string }) => a.Name.localeCompare(b.Name));
      expect(sorted).toEqual(dims);
    }
  });

  it('treats missing data as fine: no commits or no lag reported is not an incident', () => {
    const { template } = synth();
    for (const a of Object.values(resourcesOf(template, 'AWS::CloudWatch::Alarm'))) {
      expect(a.Properties.TreatMissingData).toBe('notBreaching');
    }
  });

  it('takes thresholds and actions from props', () => {
    // Prepare / Act
    const { template, topic, alarms } = synth(
      { commitLatencyP99Ms: 2_000, commitConflicts: 3, sortedRunsStopTrigger: 12, consumerLagSnapshots: 5, consumerLagSeconds: 60 },
      true,
    );
    // Assess
    expect(alarmsOn(template, 'CommitLatencyMs')[0].Properties.Threshold).toBe(2_000);
    expect(alarmsOn(template, 'CommitConflicts')[0].Properties.Threshold).toBe(3);
    expect(alarmsOn(template, 'SortedRuns')[0].Properties.Threshold).toBe(12);
    expect(alarmsOn(template, 'ConsumerLagSnapshots')[0].Properties.Threshold).toBe(5);
    expect(alarmsOn(template, 'ConsumerLagSeconds')[0].Properties.Threshold).toBe(60);
    const all = Object.values(resourcesOf(template, 'AWS::CloudWatch::Alarm'));
    expect(all).toHaveLength(alarms.alarms.length);
    for (const a of all) expect(a.Properties.AlarmActions).toEqual([{ Ref: logicalId(topic!) }]);
  });
});
