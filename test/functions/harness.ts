/**
 * What the handler tests run on: a moto "account" per test (bucket, DynamoDB catalog, the queues
 * and the bus a VarveTable and a StreamConsumer deploy, named uniquely), an event source mapping
 * stand-in that receives real SQS messages and calls a handler with a real-shaped SQSEvent, and
 * the EventBridge, S3 and schedule events the other functions get.
 */
import { randomUUID } from 'node:crypto';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  CreateEventBusCommand,
  EventBridgeClient,
  PutRuleCommand,
  PutTargetsCommand,
} from '@aws-sdk/client-eventbridge';
import {
  ChangeMessageVisibilityBatchCommand,
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  SendMessageBatchCommand,
  SQSClient,
  type Message,
} from '@aws-sdk/client-sqs';
import type {
  EventBridgeEvent,
  S3ObjectCreatedNotificationEvent,
  ScheduledEvent,
  SQSBatchResponse,
  SQSEvent,
} from 'aws-lambda';
import { queueArnOfUrl, receiveMessages, sqsEventOf as sqsEventFor } from '../../e2e/emulator/sqs-event.js';
import { openCatalog } from '../../lib/catalog/open-catalog.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import type { Table } from '../../lib/table/table.js';
import { afterEach, beforeEach, expect } from 'vitest';
import { freshBucket } from '../helpers/aws.js';
import { LogLines } from '../helpers/log-lines.js';

export const sqs = new SQSClient({});
const dynamo = new DynamoDBClient({});
const events = new EventBridgeClient({});

/** Names unique to one test, so that suites never see each other's queues. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

/** Creates a queue (FIFO when the name ends in .fifo, with explicit deduplication ids like infra/queues.ts). */
export async function createQueue(name: string, attrs: Record<string, string> = {}): Promise<string> {
  const fifo = name.endsWith('.fifo');
  const r = await sqs.send(
    new CreateQueueCommand({
      QueueName: name,
      Attributes: {
        ...(fifo ? { FifoQueue: 'true', ContentBasedDeduplication: 'false' } : {}),
        VisibilityTimeout: '60',
        ...attrs,
      },
    }),
  );
  return r.QueueUrl!;
}

/** A queue's ARN. */
export async function queueArn(url: string): Promise<string> {
  const r = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }));
  return r.Attributes!.QueueArn!;
}

/** The DynamoDB catalog table (partition key `name`, as infra/warehouse.ts deploys it). */
export async function createCatalogTable(name: string): Promise<void> {
  await dynamo.send(
    new CreateTableCommand({
      TableName: name,
      KeySchema: [{ AttributeName: 'name', KeyType: 'HASH' }],
      AttributeDefinitions: [{ AttributeName: 'name', AttributeType: 'S' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
}

/** What one test's deployment holds. */
export interface Deployment {
  bucket: string;
  warehouse: string;
  catalogTable: string;
  busName: string;
  /** Standard queue receiving every `Snapshot Committed` event (an EventBridge rule's target). */
  commitEventsUrl: string;
  /** The table's standard ingest queue (what the ingest function's event source reads). */
  ingestUrl: string;
  rejectsUrl: string;
  commitUrl: string;
  compactUrl: string;
  splitUrl: string;
  consumerId: string;
  /** The environment of every function of the table (docs/AWS.md), for `mode` commits. */
  env(mode: 'direct' | 'queue', extra?: Record<string, string>): Record<string, string>;
}

/** A warehouse, catalog, bus and the queues of one table with one consumer, all new. */
export async function deploy(): Promise<Deployment> {
  const bucket = await freshBucket('varve-fn');
  const catalogTable = uniqueName('catalog');
  const busName = uniqueName('bus');
  const [, ingestUrl, rejectsUrl, commitUrl, compactUrl, splitUrl, commitEventsUrl] = await Promise.all([
    createCatalogTable(catalogTable),
    createQueue(uniqueName('ingest')),
    createQueue(uniqueName('rejects')),
    createQueue(`${uniqueName('commit')}.fifo`),
    createQueue(`${uniqueName('compact')}.fifo`, {
      DeduplicationScope: 'messageGroup',
      FifoThroughputLimit: 'perMessageGroupId',
    }),
    createQueue(`${uniqueName('splits')}.fifo`, {
      DeduplicationScope: 'messageGroup',
      FifoThroughputLimit: 'perMessageGroupId',
    }),
    createQueue(uniqueName('commit-events')),
  ]);
  await events.send(new CreateEventBusCommand({ Name: busName }));
  await routeEvents(busName, { source: ['varve'], 'detail-type': ['Snapshot Committed'] }, commitEventsUrl);
  const warehouse = `s3://${bucket}/wh`;
  const consumerId = 'audit';
  return {
    bucket,
    warehouse,
    catalogTable,
    busName,
    commitEventsUrl,
    ingestUrl,
    rejectsUrl,
    commitUrl,
    compactUrl,
    splitUrl,
    consumerId,
    env: (mode, extra = {}) => ({
      VARVE_WAREHOUSE: warehouse,
      VARVE_CATALOG_TABLE: catalogTable,
      VARVE_TABLE: 'shop.orders',
      VARVE_COMMIT_MODE: mode,
      ...(mode === 'queue' ? { VARVE_COMMIT_QUEUE_URL: commitUrl } : {}),
      VARVE_REJECTS_QUEUE_URL: rejectsUrl,
      VARVE_COMPACT_QUEUE_URL: compactUrl,
      VARVE_EVENT_BUS_NAME: busName,
      VARVE_CONSUMER_ID: consumerId,
      VARVE_SPLIT_QUEUE_URL: splitUrl,
      ...extra,
    }),
  };
}

/** An EventBridge rule on `bus` sending matching events to the queue at `url`. */
export async function routeEvents(bus: string, pattern: Record<string, unknown>, url: string): Promise<void> {
  const rule = uniqueName('rule');
  await events.send(new PutRuleCommand({ Name: rule, EventBusName: bus, EventPattern: JSON.stringify(pattern) }));
  await events.send(
    new PutTargetsCommand({ Rule: rule, EventBusName: bus, Targets: [{ Id: 'q', Arn: await queueArn(url) }] }),
  );
}

/** `shop.orders (id BIGINT, dt STRING, status STRING, amount DOUBLE)`, keyed by id, through the deployment's catalog. */
export async function createOrders(
  d: Deployment,
  options: Record<string, string> = {},
  name = 'shop.orders',
): Promise<Table> {
  return openCatalog(d.warehouse, { VARVE_CATALOG_TABLE: d.catalogTable }).createTable(name, {
    fields: parseSchemaText('id BIGINT, status STRING, amount DOUBLE'),
    primaryKeys: ['id'],
    options: { bucket: '2', ...options },
  });
}

/** The table as a function opens it now (latest schema, through the catalog). */
export async function reopen(d: Deployment, name = 'shop.orders'): Promise<Table> {
  return openCatalog(d.warehouse, { VARVE_CATALOG_TABLE: d.catalogTable }).getTable(name);
}

/** Sends message bodies to a queue (FIFO queues get group `g` and a fresh deduplication id each). */
export async function sendBodies(url: string, bodies: string[]): Promise<void> {
  const fifo = url.endsWith('.fifo');
  for (let i = 0; i < bodies.length; i += 10) {
    await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: url,
        Entries: bodies.slice(i, i + 10).map((b, k) => ({
          Id: String(k),
          MessageBody: b,
          ...(fifo ? { MessageGroupId: 'g', MessageDeduplicationId: randomUUID() } : {}),
        })),
      }),
    );
  }
}

/** Receives up to `max` messages with every attribute an event source mapping passes on. */
export function receive(url: string, max = 10, waitSeconds = 0): Promise<Message[]> {
  return receiveMessages(sqs, url, max, waitSeconds);
}

/** An SQSEvent as Lambda's event source mapping builds it from received messages. */
export function sqsEventOf(url: string, messages: Message[]): SQSEvent {
  return sqsEventFor(queueArnOfUrl(url), messages);
}

/** What one emulated event-source-mapping poll did. */
export interface Poll {
  event: SQSEvent;
  response: SQSBatchResponse;
}

/**
 * One poll of Lambda's event source mapping: receive a batch, invoke the handler, delete what
 * succeeded and release what failed at once (ChangeMessageVisibility 0, in order: moto reorders
 * FIFO groups whose visibility merely expires). Returns undefined when the queue had nothing.
 */
export async function pollOnce(
  url: string,
  handler: (e: SQSEvent) => Promise<SQSBatchResponse | void>,
  max = 10,
  waitSeconds = 0,
): Promise<Poll | undefined> {
  const messages = await receive(url, max, waitSeconds);
  if (messages.length === 0) return undefined;
  const event = sqsEventOf(url, messages);
  const response = (await handler(event)) ?? { batchItemFailures: [] };
  const failed = new Set(response.batchItemFailures.map((f) => f.itemIdentifier));
  const done = messages.filter((m) => !failed.has(m.MessageId!));
  const back = messages.filter((m) => failed.has(m.MessageId!));
  if (done.length)
    await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: url,
        Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })),
      }),
    );
  if (back.length) {
    await sqs.send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: url,
        Entries: back.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle!, VisibilityTimeout: 0 })),
      }),
    );
  }
  return { event, response };
}

/** Polls until the queue has nothing to deliver (at most `limit` polls); returns every poll. */
export async function drain(
  url: string,
  handler: (e: SQSEvent) => Promise<SQSBatchResponse | void>,
  max = 10,
  limit = 50,
): Promise<Poll[]> {
  const polls: Poll[] = [];
  for (let i = 0; i < limit; i++) {
    // An empty short poll does not prove the queue empty (SQS short polling samples a subset of its
    // servers); Lambda's mapping long-polls, so the last look waits 1 s.
    const p = (await pollOnce(url, handler, max)) ?? (await pollOnce(url, handler, max, 1));
    if (!p) return polls;
    polls.push(p);
  }
  throw new Error(`${url} still had messages after ${limit} polls`);
}

/** Every message body waiting in a queue, deleted as read (so a FIFO queue's message groups never block the rest). */
export async function takeAll(url: string): Promise<string[]> {
  const out: string[] = [];
  for (;;) {
    const messages = await receive(url, 10);
    if (messages.length === 0) return out;
    out.push(...messages.map((m) => m.Body ?? ''));
    await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: url,
        Entries: messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })),
      }),
    );
  }
}

/** The EventBridge events waiting in a rule's target queue (an event's SQS body is the whole event). */
export async function takeEvents<D>(url: string): Promise<Array<EventBridgeEvent<string, D>>> {
  return (await takeAll(url)).map((b) => JSON.parse(b) as EventBridgeEvent<string, D>);
}

/** The `Object Created` event S3 puts on EventBridge for a new object. */
export function objectCreatedEvent(
  bucket: string,
  key: string,
  etag: string,
  size = 0,
): S3ObjectCreatedNotificationEvent {
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': 'Object Created',
    source: 'aws.s3',
    account: '123456789012',
    time: new Date().toISOString(),
    region: 'us-east-1',
    resources: [`arn:aws:s3:::${bucket}`],
    detail: {
      version: '0',
      bucket: { name: bucket },
      // An unversioned bucket's events carry no version id; the type insists on one.
      object: { key, size, etag: etag.replace(/"/g, ''), 'version-id': '', sequencer: '0062E99A88DC407460' },
      'request-id': 'N4N7GDK58NMKJ12R',
      requester: '123456789012',
      'source-ip-address': '203.0.113.15',
      reason: 'PutObject',
    },
  };
}

/** The event a scheduled EventBridge rule invokes a function with. */
export function scheduledEvent(): ScheduledEvent {
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': 'Scheduled Event',
    source: 'aws.events',
    account: '123456789012',
    time: new Date().toISOString(),
    region: 'us-east-1',
    resources: ['arn:aws:events:us-east-1:123456789012:rule/varve-expire'],
    detail: {},
  };
}

/** One CloudWatch metric data point printed in Embedded Metric Format. */
export interface EmfPoint {
  name: string;
  value: number;
  dimensions: Record<string, string>;
  namespace: string;
}

/**
 * Collects the EMF lines Powertools prints to stdout (and keeps them off the test output).
 * Call in a test file's top level; read `points` in tests, `clear()` between them.
 */
export function captureMetrics(): { points: EmfPoint[]; clear(): void } {
  const points: EmfPoint[] = [];
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    if (!text.includes('"_aws"')) return (write as (...a: unknown[]) => boolean)(chunk, ...rest);
    for (const line of text.split('\n').filter(Boolean)) {
      const emf = JSON.parse(line) as {
        _aws: {
          CloudWatchMetrics: Array<{ Namespace: string; Dimensions: string[][]; Metrics: Array<{ Name: string }> }>;
        };
      } & Record<string, unknown>;
      for (const cw of emf._aws.CloudWatchMetrics) {
        const dimensions = Object.fromEntries(cw.Dimensions[0].map((d) => [d, String(emf[d])]));
        for (const m of cw.Metrics) {
          const v = emf[m.Name];
          for (const value of Array.isArray(v) ? v : [v])
            points.push({ name: m.Name, value: Number(value), dimensions, namespace: cw.Namespace });
        }
      }
    }
    return true;
  }) as typeof process.stdout.write;
  return { points, clear: () => points.splice(0) };
}

/** The level the functions log at in this test file: WARN once `captureLogs` collects their lines. */
let logLevel: 'WARN' | 'SILENT' = 'SILENT';

/** Powertools settings every function gets from the CDK constructs; logs kept quiet unless asked or captured. */
export function powertoolsEnv(): void {
  process.env.POWERTOOLS_SERVICE_NAME = 'varve';
  process.env.POWERTOOLS_METRICS_NAMESPACE = 'Varve';
  process.env.POWERTOOLS_LOG_LEVEL = process.env.VARVE_TEST_LOG_LEVEL ?? logLevel;
}

/** `LEVEL message[: error]` of a Powertools JSON log line, or undefined for any other output. */
function powertoolsLine(line: string): string | undefined {
  if (!line.startsWith('{')) return undefined;
  let entry: unknown;
  try {
    entry = JSON.parse(line);
  } catch {
    return undefined;
  }
  const { level, message, error } = entry as { level?: unknown; message?: unknown; error?: { message?: unknown } };
  if (typeof level !== 'string' || typeof message !== 'string') return undefined;
  const cause = typeof error?.message === 'string' ? `: ${error.message}` : '';
  return `${level} ${message}${cause}`;
}

/**
 * Collects the functions' Powertools log lines at WARN and above (what they print as JSON, on
 * stdout or stderr) as `LEVEL message[: error]` lines, and keeps them off the test output. Call at
 * a test file's top level, before `powertoolsEnv()` runs. A test that expects lines (a dead letter,
 * a rejected message) names them with `logs.expectOnly(...)`; after every other test, an ERROR
 * line fails it: an error the test did not look at may hide a loss. Lines are cleared before each test.
 */
export function captureLogs(): LogLines {
  const logs = new LogLines();
  logLevel = 'WARN';
  process.env.POWERTOOLS_LOG_LEVEL = process.env.VARVE_TEST_LOG_LEVEL ?? logLevel;
  for (const stream of [process.stdout, process.stderr]) {
    const write = stream.write.bind(stream) as (...a: unknown[]) => boolean;
    stream.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
      const lines = text.split('\n').filter(Boolean);
      const captured = lines.map(powertoolsLine);
      if (lines.length === 0 || captured.some((l) => l === undefined)) return write(chunk, ...rest);
      for (const l of captured) logs.add(l!);
      return true;
    }) as typeof stream.write;
  }
  beforeEach(() => logs.clear());
  afterEach(() => {
    if (!logs.checked)
      expect(logs.matching(/^ERROR /), 'ERROR lines the functions logged that the test did not expect').toEqual([]);
  });
  return logs;
}
