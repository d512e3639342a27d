/**
 * The example stack of cdk.json's app: a warehouse, the table `shop.orders` with ingestion, and
 * the stream consumer `orders-audit` feeding a small sink of its own (infra/example-sink.ts).
 */
import * as path from 'node:path';
import { CfnOutput, RemovalPolicy, Stack, Validations, type StackProps } from 'aws-cdk-lib';
import { Construct } from 'constructs';
import { InvalidArgumentError } from '../lib/errors.js';
import { VarveAlarms } from './alarms.js';
import { PROJECT_ROOT } from './lambda.js';
import { StreamConsumer } from './stream-consumer.js';
import { VarveTable, type CommitMode } from './table.js';
import { Warehouse } from './warehouse.js';

/** The example stack; context `varve:prefix`, `varve:commitMode` and `varve:removalPolicy` tune it. */
export class VarveExampleStack extends Stack {
  readonly warehouse: Warehouse;
  readonly orders: VarveTable;
  readonly audit: StreamConsumer;
  readonly alarms: VarveAlarms;

  constructor(scope: Construct, id: string, props: StackProps = {}) {
    super(scope, id, props);
    const commitMode = contextChoice<CommitMode>(this, 'varve:commitMode', ['queue', 'direct'], 'queue');
    const removal = contextChoice(this, 'varve:removalPolicy', ['retain', 'destroy'], 'retain');
    this.warehouse = new Warehouse(this, 'Warehouse', {
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
    this.alarms = new VarveAlarms(this, 'Alarms', { tables: [this.orders], consumers: [this.audit] });
    // What docs/AWS.md needs to feed and watch the deployed example.
    new CfnOutput(this, 'BucketName', { value: this.warehouse.bucket.bucketName });
    new CfnOutput(this, 'WarehouseUri', { value: this.warehouse.uri });
    new CfnOutput(this, 'CatalogTable', { value: this.warehouse.catalog.tableName });
    new CfnOutput(this, 'InboxPrefix', { value: this.orders.inboxPrefix });
    new CfnOutput(this, 'IngestQueueUrl', { value: this.orders.ingestQueue.queueUrl });
    new CfnOutput(this, 'RejectsQueueUrl', { value: this.orders.rejectsQueue.queueUrl });
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
