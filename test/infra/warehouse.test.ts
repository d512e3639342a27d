import { RemovalPolicy } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { Bucket } from 'aws-cdk-lib/aws-s3';
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../lib/errors.js';
import { Warehouse } from '../../infra/warehouse.js';
import { iamPattern, logicalId, objectSuffix, resourcesOf, testStack, type Statement } from './template.js';

function synth(props: ConstructorParameters<typeof Warehouse>[2] = {}) {
  const stack = testStack();
  const warehouse = new Warehouse(stack, 'Warehouse', props);
  return { stack, warehouse, template: Template.fromStack(stack) };
}

function bucketPolicyStatements(template: Template): Statement[] {
  const policies = Object.values(resourcesOf(template, 'AWS::S3::BucketPolicy'));
  expect(policies).toHaveLength(1);
  return policies[0].Properties.PolicyDocument.Statement as Statement[];
}

describe('Warehouse bucket', () => {
  it('blocks public access, encrypts with S3-managed keys, is unversioned and retained by default', () => {
    // Prepare / Act
    const { template } = synth();
    // Assess
    template.resourceCountIs('AWS::S3::Bucket', 1);
    const [bucket] = Object.values(resourcesOf(template, 'AWS::S3::Bucket'));
    expect(bucket.Properties.PublicAccessBlockConfiguration).toEqual({
      BlockPublicAcls: true,
      BlockPublicPolicy: true,
      IgnorePublicAcls: true,
      RestrictPublicBuckets: true,
    });
    expect(
      bucket.Properties.BucketEncryption.ServerSideEncryptionConfiguration[0].ServerSideEncryptionByDefault,
    ).toEqual({
      SSEAlgorithm: 'AES256',
    });
    expect(bucket.Properties.VersioningConfiguration).toBeUndefined();
    expect(bucket.Properties.LoggingConfiguration).toBeUndefined();
    expect(bucket.DeletionPolicy).toBe('Retain');
  });

  it('applies a configured removal policy to the bucket and the catalog', () => {
    const { template } = synth({ removalPolicy: RemovalPolicy.DESTROY });
    expect(Object.values(resourcesOf(template, 'AWS::S3::Bucket'))[0].DeletionPolicy).toBe('Delete');
    expect(Object.values(resourcesOf(template, 'AWS::DynamoDB::Table'))[0].DeletionPolicy).toBe('Delete');
  });

  it('names the bucket and logs access when asked to', () => {
    // Prepare
    const stack = testStack();
    const logs = new Bucket(stack, 'Logs');
    // Act
    new Warehouse(stack, 'Warehouse', {
      bucketName: 'my-lake',
      serverAccessLogsBucket: logs,
      serverAccessLogsPrefix: 'lake/',
    });
    // Assess
    Template.fromStack(stack).hasResourceProperties('AWS::S3::Bucket', {
      BucketName: 'my-lake',
      LoggingConfiguration: { DestinationBucketName: { Ref: logicalId(logs) }, LogFilePrefix: 'lake/' },
    });
  });

  it('denies every request that does not use TLS', () => {
    const { template } = synth();
    const ssl = bucketPolicyStatements(template).filter((s) => s.Condition?.Bool?.['aws:SecureTransport'] === 'false');
    expect(ssl).toHaveLength(1);
    expect(ssl[0]).toMatchObject({ Effect: 'Deny', Action: 's3:*', Principal: { AWS: '*' } });
  });

  it('denies a snapshot put without If-None-Match, on snapshot files only', () => {
    // Prepare / Act
    const { template, warehouse } = synth();
    const deny = bucketPolicyStatements(template).filter((s) => s.Condition?.Null);
    // Assess: one Deny for everyone, on s3:PutObject, when the if-none-match key is absent
    expect(deny).toHaveLength(1);
    expect(deny[0]).toMatchObject({
      Effect: 'Deny',
      Principal: { AWS: '*' },
      Action: 's3:PutObject',
      Condition: { Null: { 's3:if-none-match': 'true' } },
    });
    expect((deny[0].Resource as { 'Fn::Join': [string, unknown[]] })['Fn::Join'][1][0]).toEqual({
      'Fn::GetAtt': [logicalId(warehouse.bucket), 'Arn'],
    });
    const pattern = iamPattern(objectSuffix(deny[0].Resource)!.slice(1));
    // snapshot files of any table in the warehouse are covered …
    expect(pattern.test('warehouse/shop.db/orders/snapshot/snapshot-1')).toBe(true);
    expect(pattern.test('warehouse/a.db/b/snapshot/snapshot-123456')).toBe(true);
    // … hints, manifests, data files and other prefixes are not
    expect(pattern.test('warehouse/shop.db/orders/snapshot/LATEST')).toBe(false);
    expect(pattern.test('warehouse/shop.db/orders/snapshot/EARLIEST')).toBe(false);
    expect(pattern.test('warehouse/shop.db/orders/manifest/manifest-list-1')).toBe(false);
    expect(pattern.test('warehouse/shop.db/orders/bucket-0/data-1.parquet')).toBe(false);
    expect(pattern.test('other/shop.db/orders/snapshot/snapshot-1')).toBe(false);
  });

  it('scopes the snapshot rule to a custom prefix', () => {
    const { template, warehouse } = synth({ prefix: 'lake/prod' });
    const deny = bucketPolicyStatements(template).find((s) => s.Condition?.Null)!;
    expect(objectSuffix(deny.Resource)).toBe('/lake/prod/*/snapshot/snapshot-*');
    expect(warehouse.tablePrefix('shop', 'orders')).toBe('lake/prod/shop.db/orders');
    expect(warehouse.inboxPrefix('shop', 'orders')).toBe('lake/prod/inbox/shop/orders/');
  });

  it.each(['', '/warehouse', 'warehouse/', 'a//b', 'has space', 'a/*'])('rejects the prefix %j', (prefix) => {
    expect(() => synth({ prefix })).toThrow(InvalidArgumentError);
  });

  it('exposes the warehouse URI as s3://<bucket>/<prefix>', () => {
    const { stack, warehouse } = synth();
    expect(stack.resolve(warehouse.uri)).toEqual({
      'Fn::Join': ['', ['s3://', { Ref: logicalId(warehouse.bucket) }, '/warehouse']],
    });
  });
});

describe('Warehouse catalog', () => {
  it('is an on-demand DynamoDB table keyed by name with point-in-time recovery', () => {
    const { template } = synth();
    template.resourceCountIs('AWS::DynamoDB::Table', 1);
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      KeySchema: [{ AttributeName: 'name', KeyType: 'HASH' }],
      AttributeDefinitions: [{ AttributeName: 'name', AttributeType: 'S' }],
      BillingMode: 'PAY_PER_REQUEST',
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
    });
  });
});

describe('Warehouse event bus', () => {
  it('creates a dedicated bus by default', () => {
    const { template, stack, warehouse } = synth();
    template.resourceCountIs('AWS::Events::EventBus', 1);
    expect(stack.resolve(warehouse.eventBus.eventBusName)).toEqual({ Ref: expect.stringMatching(/^WarehouseBus/) });
  });

  it("uses the account's default bus when asked to", () => {
    const { template, warehouse } = synth({ eventBus: 'default' });
    template.resourceCountIs('AWS::Events::EventBus', 0);
    expect(warehouse.eventBus.eventBusName).toBe('default');
  });
});
