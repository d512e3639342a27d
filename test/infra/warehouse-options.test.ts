import { fileURLToPath } from 'node:url';
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { EventBus } from 'aws-cdk-lib/aws-events';
import { Key } from 'aws-cdk-lib/aws-kms';
import { Bucket } from 'aws-cdk-lib/aws-s3';
import { describe, expect, it } from 'vitest';
import { StreamConsumer } from '../../infra/stream-consumer.js';
import { VarveTable } from '../../infra/table.js';
import { Warehouse, type WarehouseProps } from '../../infra/warehouse.js';
import {
  actionsOf,
  allIdentityStatements,
  functionStatements,
  granting,
  logicalId,
  resourceList,
  resourcesOf,
  testStack,
} from './template.js';

const SINK = fileURLToPath(new URL('./fixtures/sink.ts', import.meta.url));

/** A warehouse with one table and one consumer; `key` adds a customer-managed key. */
function synth(props: WarehouseProps = {}, opts: { key?: boolean } = {}) {
  const stack = testStack();
  const key = opts.key ? new Key(stack, 'Key', { enableKeyRotation: true }) : undefined;
  const warehouse = new Warehouse(stack, 'Warehouse', { ...props, encryptionKey: key });
  const table = new VarveTable(stack, 'Orders', {
    warehouse,
    database: 'shop',
    table: 'orders',
    tags: { team: 'orders' },
  });
  const consumer = new StreamConsumer(stack, 'Audit', {
    table,
    consumerId: 'orders-audit',
    sink: { kind: 'function', entry: SINK },
  });
  return { stack, key, warehouse, table, consumer, template: Template.fromStack(stack) };
}

describe('lifecycle rules', () => {
  it('aborts incomplete multipart uploads after a day and expires inbox files after 7 days, only under the inbox prefix', () => {
    // Prepare / Act
    const { template } = synth({ prefix: 'lake' });
    // Assess
    const [bucket] = Object.values(resourcesOf(template, 'AWS::S3::Bucket'));
    const rules = bucket.Properties.LifecycleConfiguration.Rules as Record<string, unknown>[];
    expect(rules).toEqual([
      {
        Id: 'abort-incomplete-multipart-uploads',
        AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 },
        Status: 'Enabled',
      },
      { Id: 'expire-inbox', Prefix: 'lake/inbox/', ExpirationInDays: 7, Status: 'Enabled' },
    ]);
  });

  it('takes the inbox expiration from props', () => {
    const { template } = synth({ inboxExpiration: Duration.days(2) });
    const [bucket] = Object.values(resourcesOf(template, 'AWS::S3::Bucket'));
    expect(bucket.Properties.LifecycleConfiguration.Rules[1]).toMatchObject({
      Prefix: 'warehouse/inbox/',
      ExpirationInDays: 2,
    });
  });
});

describe('customer-managed KMS key', () => {
  it('encrypts the bucket (with a bucket key), the catalog, every queue and every log group with it', () => {
    // Prepare / Act
    const { template, key } = synth({}, { key: true });
    const keyArn = { 'Fn::GetAtt': [logicalId(key!), 'Arn'] };
    // Assess
    const [bucket] = Object.values(resourcesOf(template, 'AWS::S3::Bucket'));
    expect(bucket.Properties.BucketEncryption.ServerSideEncryptionConfiguration[0]).toEqual({
      BucketKeyEnabled: true,
      ServerSideEncryptionByDefault: { SSEAlgorithm: 'aws:kms', KMSMasterKeyID: keyArn },
    });
    const [catalog] = Object.values(resourcesOf(template, 'AWS::DynamoDB::Table'));
    expect(catalog.Properties.SSESpecification).toEqual({ SSEEnabled: true, SSEType: 'KMS', KMSMasterKeyId: keyArn });
    const queues = Object.values(resourcesOf(template, 'AWS::SQS::Queue'));
    expect(queues.length).toBe(13); // table 8, consumer 5 (the discovery trigger DLQ, encrypted too)
    for (const q of queues) expect(q.Properties.KmsMasterKeyId).toEqual(keyArn);
    const logs = Object.values(resourcesOf(template, 'AWS::Logs::LogGroup'));
    expect(logs.length).toBe(6);
    for (const l of logs) expect(l.Properties.KmsKeyId).toEqual(keyArn);
  });

  it('lets CloudWatch Logs and EventBridge use the key, and every function decrypt with it', () => {
    const { template, key, table, consumer } = synth({}, { key: true });
    const policy = resourcesOf(template, 'AWS::KMS::Key')[logicalId(key!)].Properties.KeyPolicy.Statement as {
      Sid?: string;
      Principal?: { Service?: unknown };
      Action: string | string[];
    }[];
    expect(policy.find((s) => s.Sid === 'VarveCloudWatchLogs')).toBeDefined();
    expect(
      policy.some(
        (s) =>
          s.Principal?.Service === 'events.amazonaws.com' &&
          ([] as string[]).concat(s.Action).includes('kms:GenerateDataKey*'),
      ),
    ).toBe(true);
    const fns = [
      table.ingestFunction,
      table.commitFunction!,
      table.compactFunction,
      table.expireFunction,
      consumer.discoverFunction,
      consumer.readFunction,
    ];
    for (const fn of fns) {
      expect(granting(functionStatements(template, fn), 'kms:Decrypt').flatMap(resourceList)).toContainEqual({
        'Fn::GetAtt': [logicalId(key!), 'Arn'],
      });
    }
    // writers of table files may generate data keys
    for (const fn of [table.ingestFunction, table.commitFunction!, table.compactFunction, table.expireFunction]) {
      expect(granting(functionStatements(template, fn), 'kms:GenerateDataKey*')).not.toHaveLength(0);
    }
  });

  it('keeps AWS-owned keys without one', () => {
    const { template } = synth();
    template.resourceCountIs('AWS::KMS::Key', 0);
    for (const q of Object.values(resourcesOf(template, 'AWS::SQS::Queue')))
      expect(q.Properties.SqsManagedSseEnabled).toBe(true);
    expect(
      allIdentityStatements(template)
        .flatMap(actionsOf)
        .filter((a) => a.startsWith('kms:')),
    ).toEqual([]);
  });
});

describe('existing bucket and event bus', () => {
  it('uses an existing bucket, creates none, and warns about what CDK cannot set on it', () => {
    // Prepare
    const stack = testStack();
    const existing = Bucket.fromBucketName(stack, 'Existing', 'my-lake');
    // Act
    const warehouse = new Warehouse(stack, 'Warehouse', { bucket: existing, prefix: 'lake' });
    new VarveTable(stack, 'Orders', { warehouse, database: 'shop', table: 'orders' });
    // Assess
    const template = Template.fromStack(stack);
    template.resourceCountIs('AWS::S3::Bucket', 0);
    expect(warehouse.uri).toBe('s3://my-lake/lake');
    expect(warehouse.bucket).toBe(existing);
    Annotations.fromStack(stack).hasWarning('/Test/Warehouse', Match.stringLikeRegexp('existing bucket'));
    // the functions' grants name the existing bucket
    const objectGrants = allIdentityStatements(template).filter((s) => actionsOf(s).includes('s3:GetObject'));
    expect(JSON.stringify(objectGrants)).toContain('my-lake/lake/shop.db/orders/*');
  });

  it('puts commit events on an existing bus', () => {
    const stack = testStack();
    const bus = EventBus.fromEventBusName(stack, 'Bus', 'lake-events');
    const warehouse = new Warehouse(stack, 'Warehouse', { eventBus: bus });
    const table = new VarveTable(stack, 'Orders', { warehouse, database: 'shop', table: 'orders' });
    const template = Template.fromStack(stack);
    template.resourceCountIs('AWS::Events::EventBus', 0);
    expect(stack.resolve(table.writerEnvironment().VARVE_EVENT_BUS_NAME)).toBe('lake-events');
  });
});

describe('tags', () => {
  it('tags every taggable resource with the warehouse tags, varve:table, the table tags, and varve:consumer for the consumer', () => {
    // Prepare / Act
    const { template, stack } = synth({ tags: { 'cost-center': 'data' } }, { key: true });
    // Assess: every resource type that takes Tags carries them
    const taggable = ['AWS::SQS::Queue', 'AWS::Lambda::Function', 'AWS::Logs::LogGroup', 'AWS::IAM::Role'];
    let checked = 0;
    for (const [id, r] of Object.entries(
      template.toJSON().Resources as Record<
        string,
        { Type: string; Properties?: { Tags?: { Key: string; Value: string }[] } }
      >,
    )) {
      // CDK's stack-level BucketNotificationsHandler is no varve resource.
      if (!taggable.includes(r.Type) || !/^(Orders|Audit)/.test(id)) continue;
      const tags = Object.fromEntries((r.Properties?.Tags ?? []).map((t) => [t.Key, t.Value]));
      expect(tags['cost-center'], id).toBe('data');
      expect(tags['varve:table'], id).toBe('shop.orders');
      if (id.startsWith('Audit')) expect(tags['varve:consumer'], id).toBe('orders-audit');
      else expect(tags.team, id).toBe('orders');
      checked++;
    }
    expect(checked).toBeGreaterThan(25);
    const [bucket] = Object.values(resourcesOf(template, 'AWS::S3::Bucket'));
    expect(bucket.Properties.Tags).toContainEqual({ Key: 'cost-center', Value: 'data' });
    const [catalog] = Object.values(resourcesOf(template, 'AWS::DynamoDB::Table'));
    expect(catalog.Properties.Tags).toContainEqual({ Key: 'cost-center', Value: 'data' });
    expect(stack).toBeDefined();
  });
});

describe('log groups and execution roles', () => {
  it('log groups follow the warehouse removal policy', () => {
    for (const [policy, expected] of [
      [undefined, 'Retain'],
      [RemovalPolicy.DESTROY, 'Delete'],
    ] as const) {
      const { template } = synth({ removalPolicy: policy });
      const logs = Object.values(resourcesOf(template, 'AWS::Logs::LogGroup'));
      expect(logs).toHaveLength(6);
      for (const l of logs) expect(l.DeletionPolicy).toBe(expected);
    }
  });

  it('gives every function a role without managed policies whose log permissions name only its own log group', () => {
    const { template, table, consumer } = synth();
    const fns = [
      table.ingestFunction,
      table.commitFunction!,
      table.compactFunction,
      table.expireFunction,
      consumer.discoverFunction,
      consumer.readFunction,
    ];
    const roles = resourcesOf(template, 'AWS::IAM::Role');
    const functions = resourcesOf(template, 'AWS::Lambda::Function');
    for (const fn of fns) {
      const role = roles[logicalId(fn.role!)];
      expect(role.Properties.ManagedPolicyArns).toBeUndefined();
      const logStmts = functionStatements(template, fn).filter((s) => actionsOf(s).some((a) => a.startsWith('logs:')));
      expect(logStmts.flatMap(actionsOf).sort()).toEqual(['logs:CreateLogStream', 'logs:PutLogEvents']);
      const logGroupId = functions[logicalId(fn)].Properties.LoggingConfig.LogGroup.Ref as string;
      expect(logStmts.flatMap(resourceList)).toEqual([{ 'Fn::GetAtt': [logGroupId, 'Arn'] }]);
    }
  });
});
