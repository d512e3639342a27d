import { fileURLToPath } from 'node:url';
import { Duration } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { EventBus } from 'aws-cdk-lib/aws-events';
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../lib/errors.js';
import { SPLIT_FAILURE_BUDGET } from '../../lib/stream/split-failures.js';
import { StreamConsumer, type StreamConsumerProps } from '../../infra/stream-consumer.js';
import { VarveTable } from '../../infra/table.js';
import { Warehouse } from '../../infra/warehouse.js';
import {
  envOf,
  functionStatements,
  granting,
  iamPattern,
  logicalId,
  objectSuffix,
  resourceList,
  resourcesOf,
  testStack,
} from './template.js';

const USER_SINK = fileURLToPath(new URL('./fixtures/sink.ts', import.meta.url));

function synth(props: Partial<StreamConsumerProps> = {}) {
  const stack = testStack();
  const warehouse = new Warehouse(stack, 'Warehouse');
  const table = new VarveTable(stack, 'Orders', { warehouse, database: 'shop', table: 'orders' });
  const consumer = new StreamConsumer(stack, 'Audit', {
    table,
    consumerId: 'orders-audit',
    sink: { kind: 'function', entry: USER_SINK },
    ...props,
  });
  return { stack, warehouse, table, consumer, template: Template.fromStack(stack) };
}

/** The default stack, synthesised once for the tests that only read it (each synth is ≈ 0.5–1 s of CPU). */
let defaultSynth: ReturnType<typeof synth> | undefined;
function synthDefault(): ReturnType<typeof synth> {
  defaultSynth ??= synth();
  return defaultSynth;
}

describe('StreamConsumer split queue', () => {
  it('is a high-throughput FIFO with explicit deduplication and a FIFO DLQ after 10 × the own-failure budget of receives', () => {
    const { template, consumer } = synthDefault();
    const queues = resourcesOf(template, 'AWS::SQS::Queue');
    const split = queues[logicalId(consumer.splitQueue)].Properties;
    expect(split).toMatchObject({
      FifoQueue: true,
      ContentBasedDeduplication: false,
      DeduplicationScope: 'messageGroup',
      FifoThroughputLimit: 'perMessageGroupId',
      RedrivePolicy: { maxReceiveCount: 10 * SPLIT_FAILURE_BUDGET },
    });
    const dlqId = split.RedrivePolicy.deadLetterTargetArn['Fn::GetAtt'][0];
    expect(queues[dlqId].Properties.FifoQueue).toBe(true);
    // The reader moves a split that failed on its own SPLIT_FAILURE_BUDGET times to that DLQ itself.
    expect(envOf(template, consumer.readFunction).VARVE_SPLIT_DLQ_URL).toEqual({ Ref: dlqId });
    expect(
      granting(functionStatements(template, consumer.readFunction), 'sqs:SendMessage').flatMap(resourceList),
    ).toEqual([{ 'Fn::GetAtt': [dlqId, 'Arn'] }]);
    // the split DLQ, the discovery DLQ and the standard queue for triggers EventBridge could not deliver
    expect(consumer.deadLetterQueues).toHaveLength(3);
  });

  it('tags the split queue and its DLQ with the warehouse, table, queue kind and consumer, for varve redrive', () => {
    const { template, consumer, stack, warehouse } = synthDefault();
    const queues = resourcesOf(template, 'AWS::SQS::Queue');
    const tagsOf = (id: string) =>
      Object.fromEntries(
        (queues[id].Properties.Tags ?? []).map((t: { Key: string; Value: unknown }) => [t.Key, t.Value]),
      );
    const splitId = logicalId(consumer.splitQueue);
    const dlqId = queues[splitId].Properties.RedrivePolicy.deadLetterTargetArn['Fn::GetAtt'][0] as string;
    const expected = {
      'varve:warehouse': stack.resolve(warehouse.uri),
      'varve:table': 'shop.orders',
      'varve:queue': 'split',
      'varve:consumer': 'orders-audit',
    };
    expect(tagsOf(splitId)).toMatchObject(expected);
    expect(tagsOf(splitId)['varve:dead-letter']).toBeUndefined();
    expect(tagsOf(dlqId)).toMatchObject({ ...expected, 'varve:dead-letter': 'true' });
  });

  it('keeps its visibility timeout at 6× the reader timeout, default or configured', () => {
    for (const readTimeout of [undefined, Duration.minutes(2)]) {
      const { template, consumer } = synth({ readTimeout });
      const visibility = resourcesOf(template, 'AWS::SQS::Queue')[logicalId(consumer.splitQueue)].Properties
        .VisibilityTimeout;
      const timeout = resourcesOf(template, 'AWS::Lambda::Function')[logicalId(consumer.readFunction)].Properties
        .Timeout;
      expect(timeout).toBe(readTimeout?.toSeconds() ?? 300);
      expect(visibility).toBeGreaterThanOrEqual(6 * timeout);
    }
  });
});

describe('StreamConsumer discovery', () => {
  it('is serialised by its single-group FIFO trigger queue, not by reserved concurrency; Node.js 22 on arm64', () => {
    const { template, consumer } = synthDefault();
    const fn = resourcesOf(template, 'AWS::Lambda::Function')[logicalId(consumer.discoverFunction)].Properties;
    expect(fn).toMatchObject({ Runtime: 'nodejs22.x', Architectures: ['arm64'] });
    expect(fn.ReservedConcurrentExecutions).toBeUndefined();
    expect(resourcesOf(template, 'AWS::SQS::Queue')[logicalId(consumer.discoverQueue)].Properties.FifoQueue).toBe(true);
  });

  it('gets the consumer id and the split queue URL', () => {
    const { template, consumer, stack } = synthDefault();
    const env = envOf(template, consumer.discoverFunction);
    expect(env).toMatchObject({
      VARVE_TABLE: 'shop.orders',
      VARVE_CONSUMER_ID: 'orders-audit',
      VARVE_SPLIT_QUEUE_URL: stack.resolve(consumer.splitQueue.queueUrl),
      POWERTOOLS_METRICS_NAMESPACE: 'Varve',
    });
  });

  it('runs every minute and on every Snapshot Committed event of its table', () => {
    // Prepare / Act
    const { template, consumer, warehouse } = synthDefault();
    const target = { 'Fn::GetAtt': [logicalId(consumer.discoverQueue), 'Arn'] };
    const rules = Object.values(resourcesOf(template, 'AWS::Events::Rule')).filter((r) =>
      (r.Properties.Targets as { Arn: unknown }[]).some((t) => JSON.stringify(t.Arn) === JSON.stringify(target)),
    );
    // Assess
    expect(rules).toHaveLength(2);
    const schedule = rules.find((r) => r.Properties.ScheduleExpression)!;
    expect(schedule.Properties.ScheduleExpression).toBe('rate(1 minute)');
    const onCommit = rules.find((r) => r.Properties.EventPattern)!;
    expect(onCommit.Properties.EventBusName).toEqual({ Ref: logicalId(warehouse.eventBus) });
    expect(onCommit.Properties.EventPattern).toEqual({
      source: ['varve'],
      'detail-type': ['Snapshot Committed'],
      detail: { table: ['shop.orders'], $or: [{ commitKind: [{ 'anything-but': 'COMPACT' }] }, { changelog: [true] }] },
    });
  });

  it('reads the table, writes only its consumer file, and sends only to its split queue', () => {
    const { template, consumer } = synthDefault();
    const stmts = functionStatements(template, consumer.discoverFunction);
    expect(granting(stmts, 's3:GetObject').flatMap(resourceList).map(objectSuffix)).toEqual([
      '/warehouse/shop.db/orders/*',
    ]);
    // Exactly its own consumer file and the files beside it ('@' never occurs in a consumer id),
    // never `consumer-orders-audit*`, which would cover the consumer `orders-audit-v2` too.
    for (const action of ['s3:PutObject', 's3:DeleteObject']) {
      expect(granting(stmts, action).flatMap(resourceList).map(objectSuffix).sort()).toEqual([
        '/warehouse/shop.db/orders/consumer/consumer-orders-audit',
        '/warehouse/shop.db/orders/consumer/consumer-orders-audit@*',
      ]);
    }
    expect(granting(stmts, 'sqs:SendMessage').flatMap(resourceList)).toEqual([
      { 'Fn::GetAtt': [logicalId(consumer.splitQueue), 'Arn'] },
    ]);
  });
});

describe('StreamConsumer reader', () => {
  it('consumes the split queue in batches of 10 with ReportBatchItemFailures and no batching window', () => {
    const { template, consumer } = synthDefault();
    const esm = Object.values(resourcesOf(template, 'AWS::Lambda::EventSourceMapping')).find(
      (e) => e.Properties.EventSourceArn['Fn::GetAtt'][0] === logicalId(consumer.splitQueue),
    )!;
    expect(esm.Properties).toMatchObject({
      BatchSize: 10,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      FunctionName: { Ref: logicalId(consumer.readFunction) },
    });
    expect(esm.Properties.MaximumBatchingWindowInSeconds).toBeUndefined();
    expect(esm.Properties.ScalingConfig).toBeUndefined();
  });

  it('caps reader concurrency when asked to', () => {
    const { template, consumer } = synth({ maxConcurrency: 20 });
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: { 'Fn::GetAtt': [logicalId(consumer.splitQueue), 'Arn'] },
      ScalingConfig: { MaximumConcurrency: 20 },
    });
  });

  it("runs the user's handler for a function sink, with no built-in sink", () => {
    const { template, consumer } = synth({ sink: { kind: 'function', entry: USER_SINK, handler: 'onChanges' } });
    const fn = resourcesOf(template, 'AWS::Lambda::Function')[logicalId(consumer.readFunction)].Properties;
    expect(fn.Handler).toBe('index.onChanges');
    expect(fn.Environment.Variables.VARVE_CONSUMER_ID).toBe('orders-audit');
    expect(fn.Environment.Variables).not.toHaveProperty('VARVE_SINK');
  });

  it('writes progress and split fences only beside its own consumer file', () => {
    const { template, consumer } = synthDefault();
    const stmts = functionStatements(template, consumer.readFunction);
    const put = granting(stmts, 's3:PutObject').flatMap(resourceList).map(objectSuffix).sort();
    expect(put).toEqual([
      '/warehouse/shop.db/orders/consumer/consumer-orders-audit@failures/*',
      '/warehouse/shop.db/orders/consumer/consumer-orders-audit@fence/*',
      '/warehouse/shop.db/orders/consumer/consumer-orders-audit@progress/*',
    ]);
    put.shift();
    const fence = iamPattern(put[0]!.slice(1));
    expect(fence.test('warehouse/shop.db/orders/consumer/consumer-orders-audit@fence/dt=1/bucket-3')).toBe(true);
    expect(fence.test('warehouse/shop.db/orders/consumer/consumer-orders-audit-v2@fence/bucket-3')).toBe(false);
    // The reader bounds its sink calls by the split queue's visibility (6 × its timeout).
    expect(envOf(template, consumer.readFunction).VARVE_SPLIT_VISIBILITY_S).toBe('1800');
    const pattern = iamPattern(put[1]!.slice(1));
    expect(pattern.test('warehouse/shop.db/orders/consumer/consumer-orders-audit@progress/bucket-3')).toBe(true);
    expect(pattern.test('warehouse/shop.db/orders/consumer/consumer-orders-audit')).toBe(false);
    expect(pattern.test('warehouse/shop.db/orders/consumer/consumer-orders-audit-v2@progress/bucket-3')).toBe(false);
    expect(pattern.test('warehouse/shop.db/orders/consumer/consumer-billing')).toBe(false);
    expect(pattern.test('warehouse/shop.db/orders/snapshot/snapshot-7')).toBe(false);
    expect(granting(stmts, 's3:DeleteObject')).toHaveLength(0);
  });

  it('writes into another varve table for a table sink', () => {
    // Prepare
    const stack = testStack();
    const warehouse = new Warehouse(stack, 'Warehouse');
    const orders = new VarveTable(stack, 'Orders', { warehouse, database: 'shop', table: 'orders' });
    const history = new VarveTable(stack, 'History', { warehouse, database: 'shop', table: 'history' });
    // Act
    const consumer = new StreamConsumer(stack, 'ToHistory', {
      table: orders,
      consumerId: 'to-history',
      sink: { kind: 'table', target: history },
    });
    const template = Template.fromStack(stack);
    // Assess
    const env = envOf(template, consumer.readFunction);
    expect(env).toMatchObject({
      VARVE_SINK: 'table:shop.history',
      VARVE_SINK_COMMIT_MODE: 'queue',
      VARVE_SINK_COMMIT_QUEUE_URL: stack.resolve(history.commitQueue!.queueUrl),
    });
    const stmts = functionStatements(template, consumer.readFunction);
    expect(granting(stmts, 's3:PutObject').flatMap(resourceList).map(objectSuffix).sort()).toEqual([
      '/warehouse/shop.db/history/*',
      '/warehouse/shop.db/orders/consumer/consumer-to-history@failures/*',
      '/warehouse/shop.db/orders/consumer/consumer-to-history@fence/*',
      '/warehouse/shop.db/orders/consumer/consumer-to-history@progress/*',
    ]);
    expect(granting(stmts, 'sqs:SendMessage').flatMap(resourceList)).toEqual(
      expect.arrayContaining([
        { 'Fn::GetAtt': [logicalId(history.commitQueue!), 'Arn'] },
        { 'Fn::GetAtt': [logicalId(consumer.deadLetterQueues[0] as never), 'Arn'] },
      ]),
    );
  });

  it('refuses a table sink in another warehouse', () => {
    const stack = testStack();
    const a = new Warehouse(stack, 'A');
    const b = new Warehouse(stack, 'B');
    const orders = new VarveTable(stack, 'Orders', { warehouse: a, database: 'shop', table: 'orders' });
    const copy = new VarveTable(stack, 'Copy', { warehouse: b, database: 'shop', table: 'orders' });
    expect(
      () =>
        new StreamConsumer(stack, 'C', { table: orders, consumerId: 'copy', sink: { kind: 'table', target: copy } }),
    ).toThrow(InvalidArgumentError);
  });

  it('puts events on the warehouse bus, or a given one, for an EventBridge sink', () => {
    // Prepare / Act: warehouse bus
    const own = synth({ sink: { kind: 'eventbridge' } });
    expect(envOf(own.template, own.consumer.readFunction).VARVE_SINK).toEqual({
      'Fn::Join': ['', ['eventbridge:', { Ref: logicalId(own.warehouse.eventBus) }]],
    });
    expect(
      granting(functionStatements(own.template, own.consumer.readFunction), 'events:PutEvents').flatMap(resourceList),
    ).toEqual([{ 'Fn::GetAtt': [logicalId(own.warehouse.eventBus), 'Arn'] }]);
    // a bus of the user's
    const stack = testStack();
    const warehouse = new Warehouse(stack, 'Warehouse');
    const table = new VarveTable(stack, 'Orders', { warehouse, database: 'shop', table: 'orders' });
    const bus = new EventBus(stack, 'Changes', { eventBusName: 'order-changes' });
    const consumer = new StreamConsumer(stack, 'Out', { table, consumerId: 'out', sink: { kind: 'eventbridge', bus } });
    const template = Template.fromStack(stack);
    expect(envOf(template, consumer.readFunction).VARVE_SINK).toEqual({
      'Fn::Join': ['', ['eventbridge:', { Ref: logicalId(bus) }]],
    });
    expect(
      granting(functionStatements(template, consumer.readFunction), 'events:PutEvents').flatMap(resourceList),
    ).toEqual([{ 'Fn::GetAtt': [logicalId(bus), 'Arn'] }]);
  });

  it.each(['', 'a b', 'x/y', 'a*'])('rejects the consumer id %j', (consumerId) => {
    expect(() => synth({ consumerId })).toThrow(InvalidArgumentError);
  });
});
