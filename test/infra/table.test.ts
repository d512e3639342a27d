import { Duration, Size } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../lib/errors.js';
import { VarveTable, type VarveTableProps } from '../../infra/table.js';
import { Warehouse } from '../../infra/warehouse.js';
import {
  actionsOf,
  allIdentityStatements,
  envOf,
  functionStatements,
  granting,
  logicalId,
  objectSuffix,
  resourceList,
  resourcesOf,
  testStack,
  type Statement,
} from './template.js';

function synth(props: Partial<VarveTableProps> = {}) {
  const stack = testStack();
  const warehouse = new Warehouse(stack, 'Warehouse');
  const table = new VarveTable(stack, 'Orders', { warehouse, database: 'shop', table: 'orders', ...props });
  return { stack, warehouse, table, template: Template.fromStack(stack) };
}

/** The default stack, synthesised once for the tests that only read it (each synth is ≈ 0.5–1 s of CPU). */
let defaultSynth: ReturnType<typeof synth> | undefined;
function synthDefault(): ReturnType<typeof synth> {
  defaultSynth ??= synth();
  return defaultSynth;
}

/** The object-key suffixes (after the bucket ARN) a statement set grants `action` on. */
function objectKeys(stmts: Statement[], action: string): string[] {
  return granting(stmts, action).flatMap((s) => resourceList(s).map((r) => objectSuffix(r) ?? JSON.stringify(r)));
}

describe('VarveTable queues', () => {
  it('creates ingest, rejects, commit and compaction queues with dead-letter queues in queue mode', () => {
    const { template } = synthDefault();
    // ingest + DLQ, rejects, commit + DLQ, compact + DLQ, expiry failures
    template.resourceCountIs('AWS::SQS::Queue', 8);
  });

  it('tags each queue with a DLQ, and the DLQ, with the warehouse, the table and queue kind, for varve redrive', () => {
    const { template, table, stack, warehouse } = synthDefault();
    const queues = resourcesOf(template, 'AWS::SQS::Queue');
    const tagsOf = (q: { node: unknown }) =>
      Object.fromEntries(
        (queues[logicalId(q as never)].Properties.Tags ?? []).map((t: { Key: string; Value: string }) => [
          t.Key,
          t.Value,
        ]),
      );
    expect(tagsOf(table.commitQueue!)).toMatchObject({ 'varve:table': 'shop.orders', 'varve:queue': 'commit' });
    expect(tagsOf(table.commitQueue!)['varve:dead-letter']).toBeUndefined();
    expect(tagsOf(table.ingestQueue)).toMatchObject({ 'varve:table': 'shop.orders', 'varve:queue': 'ingest' });
    expect(tagsOf(table.compactQueue)).toMatchObject({ 'varve:queue': 'compaction' });
    const dlqTags = table.deadLetterQueues.map((q) => tagsOf(q)['varve:dead-letter']);
    expect(dlqTags.filter((t) => t === 'true').length).toBeGreaterThanOrEqual(3);
    // Two warehouses may hold a table of this name: each queue and DLQ names its warehouse (s3://bucket/prefix).
    const uri = stack.resolve(warehouse.uri);
    expect(JSON.stringify(uri)).toMatch(/s3:\/\/.*\/warehouse/);
    const redriven = table.deadLetterQueues.filter((q) => tagsOf(q)['varve:dead-letter'] === 'true');
    for (const q of [table.commitQueue!, table.ingestQueue, table.compactQueue, ...redriven])
      expect(tagsOf(q)['varve:warehouse']).toEqual(uri);
  });

  it('makes the commit queue FIFO with explicit deduplication and a FIFO DLQ after 5 receives', () => {
    const { template, table } = synthDefault();
    const queues = resourcesOf(template, 'AWS::SQS::Queue');
    const commit = queues[logicalId(table.commitQueue!)].Properties;
    expect(commit.FifoQueue).toBe(true);
    expect(commit.ContentBasedDeduplication).toBe(false);
    expect(commit.RedrivePolicy.maxReceiveCount).toBe(5);
    const dlqId = commit.RedrivePolicy.deadLetterTargetArn['Fn::GetAtt'][0] as string;
    expect(queues[dlqId].Properties.FifoQueue).toBe(true);
    // one group per table: no need for the high-throughput mode
    expect(commit.DeduplicationScope).toBeUndefined();
  });

  it('makes the compaction queue a high-throughput FIFO grouped per bucket with a FIFO DLQ', () => {
    const { template, table } = synthDefault();
    const queues = resourcesOf(template, 'AWS::SQS::Queue');
    const compact = queues[logicalId(table.compactQueue)].Properties;
    expect(compact).toMatchObject({
      FifoQueue: true,
      ContentBasedDeduplication: false,
      DeduplicationScope: 'messageGroup',
      FifoThroughputLimit: 'perMessageGroupId',
      RedrivePolicy: { maxReceiveCount: 5 },
    });
    expect(queues[compact.RedrivePolicy.deadLetterTargetArn['Fn::GetAtt'][0]].Properties.FifoQueue).toBe(true);
  });

  it('keeps the ingest queue standard with a DLQ, and the rejects queue for 14 days', () => {
    const { template, table } = synthDefault();
    const queues = resourcesOf(template, 'AWS::SQS::Queue');
    const ingest = queues[logicalId(table.ingestQueue)].Properties;
    expect(ingest.FifoQueue).toBeUndefined();
    expect(ingest.RedrivePolicy.maxReceiveCount).toBe(5);
    expect(queues[logicalId(table.rejectsQueue)].Properties.MessageRetentionPeriod).toBe(14 * 24 * 3600);
  });

  it('encrypts every queue and denies non-TLS access to it', () => {
    const { template } = synthDefault();
    for (const q of Object.values(resourcesOf(template, 'AWS::SQS::Queue')))
      expect(q.Properties.SqsManagedSseEnabled).toBe(true);
    const policies = Object.values(resourcesOf(template, 'AWS::SQS::QueuePolicy'));
    const queuesWithTlsDeny = policies
      .filter((p) =>
        (p.Properties.PolicyDocument.Statement as Statement[]).some(
          (s) => s.Effect === 'Deny' && s.Condition?.Bool?.['aws:SecureTransport'] === 'false',
        ),
      )
      .flatMap((p) => p.Properties.Queues);
    expect(queuesWithTlsDeny).toHaveLength(8);
  });

  it('omits the commit queue and function in direct mode', () => {
    const { template, table } = synth({ commitMode: 'direct' });
    template.resourceCountIs('AWS::SQS::Queue', 6);
    expect(table.commitQueue).toBeUndefined();
    expect(table.commitFunction).toBeUndefined();
    template.resourceCountIs('AWS::Lambda::EventSourceMapping', 2);
  });
});

describe('VarveTable functions', () => {
  it('runs every function on Node.js 22, arm64, with active tracing and a one-month log group', () => {
    const { template } = synthDefault();
    const fns = Object.values(resourcesOf(template, 'AWS::Lambda::Function')).filter((f) =>
      f.Properties.Runtime?.startsWith('nodejs'),
    );
    expect(fns).toHaveLength(4);
    const logGroups = resourcesOf(template, 'AWS::Logs::LogGroup');
    for (const f of fns) {
      expect(f.Properties).toMatchObject({
        Runtime: 'nodejs22.x',
        Architectures: ['arm64'],
        TracingConfig: { Mode: 'Active' },
      });
      expect(logGroups[f.Properties.LoggingConfig.LogGroup.Ref].Properties.RetentionInDays).toBe(30);
      expect(f.Properties.Environment.Variables.AWS_NODEJS_CONNECTION_REUSE_ENABLED).toBe('1');
    }
  });

  it('sizes the functions: ingest and commit 60 s, compaction 15 min with 3008 MB and 2 GiB /tmp, expiry 5 min', () => {
    const { template, table } = synthDefault();
    const fns = resourcesOf(template, 'AWS::Lambda::Function');
    expect(fns[logicalId(table.ingestFunction)].Properties.Timeout).toBe(60);
    expect(fns[logicalId(table.commitFunction!)].Properties.Timeout).toBe(60);
    expect(fns[logicalId(table.compactFunction)].Properties).toMatchObject({
      Timeout: 900,
      MemorySize: 3008,
      EphemeralStorage: { Size: 2048 },
    });
    expect(fns[logicalId(table.expireFunction)].Properties.Timeout).toBe(300);
  });

  it('takes compaction sizing from props', () => {
    const { template, table } = synth({ compaction: { memorySize: 4096, ephemeralStorageSize: Size.gibibytes(4) } });
    expect(resourcesOf(template, 'AWS::Lambda::Function')[logicalId(table.compactFunction)].Properties).toMatchObject({
      MemorySize: 4096,
      EphemeralStorage: { Size: 4096 },
    });
  });

  it('sets the environment contract of each function exactly', () => {
    // Prepare / Act
    const { template, table, warehouse, stack } = synthDefault();
    const r = (v: unknown) => stack.resolve(v);
    const base = {
      VARVE_WAREHOUSE: r(warehouse.uri),
      VARVE_CATALOG_TABLE: r(warehouse.catalog.tableName),
      VARVE_TABLE: 'shop.orders',
      POWERTOOLS_SERVICE_NAME: 'varve',
      POWERTOOLS_METRICS_NAMESPACE: 'Varve',
      AWS_NODEJS_CONNECTION_REUSE_ENABLED: '1',
    };
    const bus = r(warehouse.eventBus.eventBusName);
    const compactUrl = r(table.compactQueue.queueUrl);
    // Assess
    expect(envOf(template, table.ingestFunction)).toEqual({
      ...base,
      VARVE_COMMIT_MODE: 'queue',
      VARVE_COMMIT_QUEUE_URL: r(table.commitQueue!.queueUrl),
      VARVE_REJECTS_QUEUE_URL: r(table.rejectsQueue.queueUrl),
      VARVE_COMPACT_QUEUE_URL: compactUrl,
      VARVE_EVENT_BUS_NAME: bus,
    });
    expect(envOf(template, table.commitFunction!)).toEqual({
      ...base,
      VARVE_COMPACT_QUEUE_URL: compactUrl,
      VARVE_EVENT_BUS_NAME: bus,
      VARVE_REJECTS_QUEUE_URL: r(table.rejectsQueue.queueUrl),
    });
    // Compaction sends a bucket's next job when its run leaves the bucket still due (queued-jobs.ts).
    expect(envOf(template, table.compactFunction)).toEqual({
      ...base,
      VARVE_EVENT_BUS_NAME: bus,
      VARVE_COMPACT_QUEUE_URL: compactUrl,
    });
    expect(envOf(template, table.expireFunction)).toEqual(base);
  });

  it('tells ingest to commit directly in direct mode', () => {
    const { template, table } = synth({ commitMode: 'direct' });
    const env = envOf(template, table.ingestFunction);
    expect(env.VARVE_COMMIT_MODE).toBe('direct');
    expect(env).not.toHaveProperty('VARVE_COMMIT_QUEUE_URL');
  });
});

describe('VarveTable event sources and triggers', () => {
  it('subscribes every queue consumer with ReportBatchItemFailures and FIFO-legal batches', () => {
    const { template, table } = synthDefault();
    const esms = Object.values(resourcesOf(template, 'AWS::Lambda::EventSourceMapping'));
    expect(esms).toHaveLength(3);
    const byQueue = Object.fromEntries(esms.map((e) => [e.Properties.EventSourceArn['Fn::GetAtt'][0], e.Properties]));
    for (const e of esms) expect(e.Properties.FunctionResponseTypes).toEqual(['ReportBatchItemFailures']);
    expect(byQueue[logicalId(table.ingestQueue)]).toMatchObject({ BatchSize: 100, MaximumBatchingWindowInSeconds: 2 });
    // FIFO: at most 10 per batch and no batching window
    expect(byQueue[logicalId(table.commitQueue!)].BatchSize).toBe(10);
    expect(byQueue[logicalId(table.commitQueue!)].MaximumBatchingWindowInSeconds).toBeUndefined();
    expect(byQueue[logicalId(table.compactQueue)].BatchSize).toBe(10);
    expect(byQueue[logicalId(table.compactQueue)].MaximumBatchingWindowInSeconds).toBeUndefined();
  });

  it('gives every queue a visibility timeout of at least 6× its consumer timeout', () => {
    // Prepare
    const { template } = synthDefault();
    const queues = resourcesOf(template, 'AWS::SQS::Queue');
    const fns = resourcesOf(template, 'AWS::Lambda::Function');
    // Act / Assess: every mapping of the template, whichever it is
    for (const esm of Object.values(resourcesOf(template, 'AWS::Lambda::EventSourceMapping'))) {
      const queue = queues[esm.Properties.EventSourceArn['Fn::GetAtt'][0]].Properties;
      const fn = fns[esm.Properties.FunctionName.Ref].Properties;
      expect(queue.VisibilityTimeout).toBeGreaterThanOrEqual(6 * fn.Timeout);
    }
  });

  it('passes ingest batching options through and rejects batches above 100', () => {
    const { template } = synth({
      ingest: { batchSize: 50, maxBatchingWindow: Duration.seconds(10), maxConcurrency: 5 },
    });
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      BatchSize: 50,
      MaximumBatchingWindowInSeconds: 10,
      ScalingConfig: { MaximumConcurrency: 5 },
    });
    expect(() => synth({ ingest: { batchSize: 101 } })).toThrow(InvalidArgumentError);
    expect(() => synth({ ingest: { batchSize: 0 } })).toThrow(InvalidArgumentError);
  });

  it('routes S3 Object Created events under the inbox prefix to ingest, with EventBridge on for the bucket', () => {
    // Prepare / Act
    const { template, table, warehouse } = synthDefault();
    // Assess
    template.hasResourceProperties('Custom::S3BucketNotifications', {
      BucketName: { Ref: logicalId(warehouse.bucket) },
      NotificationConfiguration: { EventBridgeConfiguration: {} },
    });
    const rules = Object.values(resourcesOf(template, 'AWS::Events::Rule')).filter(
      (r) => r.Properties.EventPattern?.source?.[0] === 'aws.s3',
    );
    expect(rules).toHaveLength(1);
    const rule = rules[0].Properties;
    expect(rule.EventBusName).toBeUndefined(); // S3 publishes to the default bus only
    expect(rule.EventPattern).toEqual({
      source: ['aws.s3'],
      'detail-type': ['Object Created'],
      detail: {
        bucket: { name: [{ Ref: logicalId(warehouse.bucket) }] },
        object: { key: [{ prefix: 'warehouse/inbox/shop/orders/' }] },
      },
    });
    expect(rule.Targets).toHaveLength(1);
    expect(rule.Targets[0].Arn).toEqual({ 'Fn::GetAtt': [logicalId(table.ingestFunction), 'Arn'] });
    expect(rule.Targets[0].DeadLetterConfig.Arn['Fn::GetAtt'][0]).toMatch(/^OrdersIngestQueueDlq/);
  });

  it('sends inbox events that ingest keeps failing on to the ingest DLQ', () => {
    const { template, table } = synthDefault();
    const configs = Object.values(resourcesOf(template, 'AWS::Lambda::EventInvokeConfig')).filter(
      (c) => c.Properties.FunctionName.Ref === logicalId(table.ingestFunction),
    );
    expect(configs).toHaveLength(1);
    expect(configs[0].Properties).toMatchObject({
      FunctionName: { Ref: logicalId(table.ingestFunction) },
      MaximumRetryAttempts: 2,
      DestinationConfig: {
        OnFailure: { Destination: { 'Fn::GetAtt': [expect.stringMatching(/^OrdersIngestQueueDlq/), 'Arn'] } },
      },
    });
  });

  it('runs expiry on a 15-minute schedule and the bounded orphan scan daily, or on the configured schedules', () => {
    for (const [expireEvery, orphanScanEvery, expireRate, scanRate] of [
      [undefined, undefined, 'rate(15 minutes)', 'rate(1 day)'],
      [Duration.hours(1), Duration.hours(6), 'rate(1 hour)', 'rate(6 hours)'],
    ] as const) {
      const { template, table } = synth({ expireEvery, orphanScanEvery });
      const rules = Object.values(resourcesOf(template, 'AWS::Events::Rule')).filter(
        (r) => r.Properties.ScheduleExpression,
      );
      expect(rules).toHaveLength(2);
      const expire = rules.find((r) => r.Properties.Targets[0].Input === undefined)!;
      const scan = rules.find((r) => r.Properties.Targets[0].Input !== undefined)!;
      expect(expire.Properties.ScheduleExpression).toBe(expireRate);
      expect(scan.Properties.ScheduleExpression).toBe(scanRate);
      expect(JSON.parse(scan.Properties.Targets[0].Input)).toEqual({ orphanScan: true });
      for (const r of [expire, scan]) {
        expect(r.Properties.Targets[0].Arn).toEqual({ 'Fn::GetAtt': [logicalId(table.expireFunction), 'Arn'] });
        expect(r.Properties.Targets[0]).toMatchObject({
          RetryPolicy: { MaximumRetryAttempts: 2 },
          DeadLetterConfig: { Arn: { 'Fn::GetAtt': [expect.stringMatching(/^OrdersExpireDlq/), 'Arn'] } },
        });
      }
    }
  });

  it.each(['sh op', 'shop.x', 'a/b', ''])('rejects the database name %j', (database) => {
    expect(() => synth({ database })).toThrow(InvalidArgumentError);
  });
});

describe('VarveTable IAM', () => {
  const TABLE = '/warehouse/shop.db/orders/*';
  const DATA = '/warehouse/shop.db/orders/*bucket-*/*';
  const MANIFESTS = '/warehouse/shop.db/orders/manifest/*';
  const PENDING = '/warehouse/shop.db/orders/pending/*';
  const COMPACTION_MARKERS = '/warehouse/shop.db/orders/compaction/*';
  const INBOX = '/warehouse/inbox/shop/orders/*';

  it('grants no wildcard action anywhere, and no s3/sqs/dynamodb action with a wildcard', () => {
    for (const commitMode of ['queue', 'direct'] as const) {
      const { template } = synth({ commitMode });
      for (const s of allIdentityStatements(template)) {
        for (const a of actionsOf(s)) {
          expect(a).not.toMatch(/^([a-z0-9-]+:)?\*$/);
          if (/^(s3|sqs|dynamodb):/.test(a)) expect(a).not.toContain('*');
        }
      }
    }
  });

  it('limits object access of every function to the table prefix (ingest also reads and deletes in its inbox)', () => {
    const { template, table } = synthDefault();
    for (const fn of [table.ingestFunction, table.commitFunction!, table.compactFunction, table.expireFunction]) {
      const stmts = functionStatements(template, fn);
      for (const action of ['s3:GetObject', 's3:PutObject', 's3:DeleteObject']) {
        const allowed =
          fn === table.ingestFunction && action !== 's3:PutObject'
            ? [TABLE, INBOX]
            : action === 's3:DeleteObject'
              ? [TABLE, DATA, MANIFESTS, PENDING, COMPACTION_MARKERS]
              : [TABLE];
        for (const key of objectKeys(stmts, action)) expect(allowed).toContain(key);
      }
      const list = granting(stmts, 's3:ListBucket');
      expect(list).toHaveLength(1);
      expect(list[0].Resource).toEqual({ 'Fn::GetAtt': [logicalId(table.warehouse.bucket), 'Arn'] });
      // IfExists: a GET/HEAD of a missing key (no s3:prefix) must be answered 404, not 403.
      expect(list[0].Condition).toEqual({ StringLikeIfExists: { 's3:prefix': ['warehouse/shop.db/orders/*'] } });
    }
  });

  it('gives each function exactly the object actions its role needs', () => {
    const { template, table } = synthDefault();
    const has = (fn: typeof table.ingestFunction, action: string) =>
      objectKeys(functionStatements(template, fn), action).includes(TABLE);
    // queue-mode ingest writes level-0 files; it commits nothing and deletes only inbox files it ingested
    expect([has(table.ingestFunction, 's3:GetObject'), has(table.ingestFunction, 's3:PutObject')]).toEqual([
      true,
      true,
    ]);
    expect(objectKeys(functionStatements(template, table.ingestFunction), 's3:DeleteObject')).toEqual([INBOX]);
    for (const fn of [table.commitFunction!, table.compactFunction, table.expireFunction]) {
      expect([has(fn, 's3:GetObject'), has(fn, 's3:PutObject')]).toEqual([true, true]);
    }
    // Deletes: committers and compaction only data files and manifests; expiry alone the whole
    // table (snapshots, schemas' neighbours, everything only expired snapshots referenced).
    // The committer also removes the pending registrations of what it committed (found by the e2e IAM audit).
    expect(objectKeys(functionStatements(template, table.commitFunction!), 's3:DeleteObject').sort()).toEqual([
      DATA,
      MANIFESTS,
      PENDING,
    ]);
    expect(objectKeys(functionStatements(template, table.compactFunction), 's3:DeleteObject').sort()).toEqual(
      [DATA, COMPACTION_MARKERS, MANIFESTS].sort(),
    );
    expect(objectKeys(functionStatements(template, table.expireFunction), 's3:DeleteObject')).toEqual([TABLE]);
    // Compaction streams its output files as multipart uploads and aborts a failed one; no one else does.
    expect(objectKeys(functionStatements(template, table.compactFunction), 's3:AbortMultipartUpload')).toEqual([TABLE]);
    for (const fn of [table.ingestFunction, table.commitFunction!, table.expireFunction]) {
      expect(objectKeys(functionStatements(template, fn), 's3:AbortMultipartUpload')).toEqual([]);
    }
  });

  it('reads the catalog with GetItem and Query only', () => {
    const { template, table } = synthDefault();
    const dynamo = allIdentityStatements(template).filter((s) => actionsOf(s).some((a) => a.startsWith('dynamodb:')));
    expect(dynamo.length).toBeGreaterThan(0);
    for (const s of dynamo) {
      expect(actionsOf(s).sort()).toEqual(['dynamodb:GetItem', 'dynamodb:Query']);
      expect(s.Resource).toEqual({ 'Fn::GetAtt': [logicalId(table.warehouse.catalog), 'Arn'] });
    }
  });

  it('lets queue-mode ingest send to the commit and rejects queues but not commit itself', () => {
    const { template, table } = synthDefault();
    const stmts = functionStatements(template, table.ingestFunction);
    const sendTo = granting(stmts, 'sqs:SendMessage').flatMap(resourceList);
    expect(sendTo).toContainEqual({ 'Fn::GetAtt': [logicalId(table.commitQueue!), 'Arn'] });
    expect(sendTo).toContainEqual({ 'Fn::GetAtt': [logicalId(table.rejectsQueue), 'Arn'] });
    expect(sendTo).not.toContainEqual({ 'Fn::GetAtt': [logicalId(table.compactQueue), 'Arn'] });
    expect(granting(stmts, 'events:PutEvents')).toHaveLength(0);
  });

  it('lets direct-mode ingest commit: delete its lost manifests, enqueue compaction, put commit events', () => {
    const { template, table } = synth({ commitMode: 'direct' });
    const stmts = functionStatements(template, table.ingestFunction);
    expect(objectKeys(stmts, 's3:DeleteObject').sort()).toEqual([INBOX, DATA, MANIFESTS, PENDING]);
    expect(granting(stmts, 'sqs:SendMessage').flatMap(resourceList)).toContainEqual({
      'Fn::GetAtt': [logicalId(table.compactQueue), 'Arn'],
    });
    expect(granting(stmts, 'events:PutEvents').flatMap(resourceList)).toEqual([
      { 'Fn::GetAtt': [logicalId(table.warehouse.eventBus), 'Arn'] },
    ]);
  });

  it('lets commit and compaction put events on the warehouse bus and enqueue compaction, and commit reject poison', () => {
    const { template, table } = synthDefault();
    const bus = { 'Fn::GetAtt': [logicalId(table.warehouse.eventBus), 'Arn'] };
    expect(
      granting(functionStatements(template, table.commitFunction!), 'events:PutEvents').flatMap(resourceList),
    ).toEqual([bus]);
    expect(
      granting(functionStatements(template, table.compactFunction), 'events:PutEvents').flatMap(resourceList),
    ).toEqual([bus]);
    // compaction jobs, and commit messages that can never be committed go to the rejects queue
    expect(
      granting(functionStatements(template, table.commitFunction!), 'sqs:SendMessage').flatMap(resourceList),
    ).toEqual(
      expect.arrayContaining([
        { 'Fn::GetAtt': [logicalId(table.compactQueue), 'Arn'] },
        { 'Fn::GetAtt': [logicalId(table.rejectsQueue), 'Arn'] },
      ]),
    );
    expect(
      granting(functionStatements(template, table.commitFunction!), 'sqs:SendMessage').flatMap(resourceList),
    ).toHaveLength(2);
    // compaction sends only a bucket's next job (a run that left it due), to its own queue
    expect(
      granting(functionStatements(template, table.compactFunction), 'sqs:SendMessage').flatMap(resourceList),
    ).toEqual([{ 'Fn::GetAtt': [logicalId(table.compactQueue), 'Arn'] }]);
    // expiry sends only its own failures (its on-failure destination)
    expect(
      granting(functionStatements(template, table.expireFunction), 'sqs:SendMessage').flatMap(resourceList),
    ).toEqual([{ 'Fn::GetAtt': [logicalId(table.expireFailures), 'Arn'] }]);
  });
});
