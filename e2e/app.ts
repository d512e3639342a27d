/**
 * The CDK app the end-to-end run deploys onto the emulator (`npm run e2e:aws` synthesises it
 * offline into cdk.out.e2e with the local esbuild): the same constructs as the example app — a
 * warehouse, the table `shop.orders` in queue commit mode, one stream consumer — with the
 * consumer's sink the fault-injecting sink of e2e/fault-sink.ts and a reader timeout short
 * enough for a "sink slower than its timeout" to happen within the run.
 */
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { App, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { StreamConsumer } from '../infra/stream-consumer.js';
import { VarveTable } from '../infra/table.js';
import { Warehouse } from '../infra/warehouse.js';
import { E2E_CONSUMER_ID, E2E_READ_TIMEOUT_SECONDS, E2E_STACK_NAME } from './names.js';

const app = new App();
const stack = new Stack(app, E2E_STACK_NAME);
const warehouse = new Warehouse(stack, 'Warehouse', { removalPolicy: RemovalPolicy.DESTROY });
const orders = new VarveTable(stack, 'Orders', { warehouse, database: 'shop', table: 'orders', commitMode: 'queue' });
new StreamConsumer(stack, 'Audit', {
  table: orders,
  consumerId: E2E_CONSUMER_ID,
  sink: { kind: 'function', entry: path.join(path.dirname(fileURLToPath(import.meta.url)), 'fault-sink.ts') },
  readTimeout: Duration.seconds(E2E_READ_TIMEOUT_SECONDS),
});
app.synth();
