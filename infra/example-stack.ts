/**
 * The example stack of cdk.json's app: a warehouse, the table `shop.orders` with ingestion, and
 * the stream consumer `orders-audit` feeding a small sink of its own (infra/example-sink.ts).
 */
import * as path from 'node:path';
import { CfnOutput, RemovalPolicy, Stack, Validations, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { InvalidArgumentError } from '../lib/errors.js';
import { Key } from 'aws-cdk-lib/aws-kms';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import { ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { PROJECT_ROOT } from './lambda.js';
import { StreamConsumer } from './stream-consumer.js';
import { VarveTable, type CommitMode } from './table.js';
import { Warehouse } from './warehouse.js';

/**
 * The example stack; context `varve:prefix`, `varve:commitMode`, `varve:removalPolicy` and
 * `varve:alarmEmail` (an address subscribed to the alarm topic) tune it.
 */
export class VarveExampleStack extends Stack {
  readonly warehouse: Warehouse;
  readonly orders: VarveTable;
  readonly audit: StreamConsumer;
  /** Where every alarm of the example goes; subscribe to it (context `varve:alarmEmail` does). */
  readonly alarmTopic: Topic;

  constructor(scope: Construct, id: string, props: StackProps = {}) {
    super(scope, id, props);
    const commitMode = contextChoice<CommitMode>(this, 'varve:commitMode', ['queue', 'direct'], 'queue');
    const removal = contextChoice(this, 'varve:removalPolicy', ['retain', 'destroy'], 'retain');
    // CloudWatch cannot publish to a topic encrypted with the AWS-managed SNS key: a customer key
    // whose policy lets CloudWatch use it keeps the topic encrypted and the alarms delivered.
    const topicKey = new Key(this, 'AlarmTopicKey', {
      description: 'varve example: encrypts the alarm topic',
      enableKeyRotation: true,
      removalPolicy: removal === 'destroy' ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN,
    });
    topicKey.grant(new ServicePrincipal('cloudwatch.amazonaws.com'), 'kms:Decrypt', 'kms:GenerateDataKey*');
    this.alarmTopic = new Topic(this, 'AlarmTopic', {
      displayName: 'varve alarms',
      masterKey: topicKey,
      enforceSSL: true,
    });
    const email = this.node.tryGetContext('varve:alarmEmail') as string | undefined;
    if (email) this.alarmTopic.addSubscription(new EmailSubscription(email));
    this.warehouse = new Warehouse(this, 'Warehouse', {
      alarmTopic: this.alarmTopic,
      prefix: (this.node.tryGetContext('varve:prefix') as string | undefined) ?? 'warehouse',
      removalPolicy: removal === 'destroy' ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN,
    });
    this.orders = new VarveTable(this, 'Orders', {
      warehouse: this.warehouse,
      database: 'shop',
      table: 'orders',
      commitMode,
    });
    this.audit = new StreamConsumer(this, 'OrdersAudit', {
      table: this.orders,
      consumerId: 'orders-audit',
      sink: { kind: 'function', entry: path.join(PROJECT_ROOT, 'infra', 'example-sink.ts') },
    });
    // What docs/AWS.md needs to feed and watch the deployed example.
    new CfnOutput(this, 'BucketName', { value: this.warehouse.bucket.bucketName });
    new CfnOutput(this, 'WarehouseUri', { value: this.warehouse.uri });
    new CfnOutput(this, 'CatalogTable', { value: this.warehouse.catalog.tableName });
    new CfnOutput(this, 'InboxPrefix', { value: this.orders.inboxPrefix });
    new CfnOutput(this, 'IngestQueueUrl', { value: this.orders.ingestQueue.queueUrl });
    new CfnOutput(this, 'RejectsQueueUrl', { value: this.orders.rejectsQueue.queueUrl });
    new CfnOutput(this, 'AlarmTopicArn', { value: this.alarmTopic.topicArn });
    new CfnOutput(this, 'AuditLogGroup', { value: this.audit.readFunction.logGroup.logGroupName });
    Validations.of(this.warehouse.bucket).acknowledge({
      id: 'AwsSolutions::AwsSolutions-S1',
      reason:
        'The example keeps to one bucket: access logs need a second bucket (WarehouseProps.serverAccessLogsBucket); turn them on for production warehouses.',
    });
  }
}

/** Reads a context value that must be one of `choices`. */
function contextChoice<T extends string>(scope: Construct, key: string, choices: readonly T[], fallback: T): T {
  const value = (scope.node.tryGetContext(key) as string | undefined) ?? fallback;
  if (!(choices as readonly string[]).includes(value)) {
    throw new InvalidArgumentError(`context ${key} is '${value}': use one of ${choices.join(', ')}`);
  }
  return value as T;
}
