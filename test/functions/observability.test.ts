import type { Context } from 'aws-lambda';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { openCatalog } from '../../lib/catalog/open-catalog.js';
import { expireSnapshots } from '../../lib/maintenance/expire-snapshots.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { ensureConsumer } from '../../lib/stream/discovery.js';
import type { Table } from '../../lib/table/table.js';
import { createQueue, uniqueName } from './harness.js';

/** A Lambda context as the runtime passes it. */
function lambdaContext(requestId: string): Context {
  return {
    awsRequestId: requestId,
    functionName: 'varve-expire',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:us-east-1:123456789012:function:varve-expire',
    memoryLimitInMB: '1024',
    logGroupName: '/aws/lambda/varve-expire',
    logStreamName: 'stream',
    callbackWaitsForEmptyEventLoop: true,
    getRemainingTimeInMillis: () => 60_000,
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

const saved = { ...process.env };
beforeEach(() => {
  // Fresh module singletons (logger, tracer, the client decorator list) for each test.
  vi.resetModules();
  process.env.VARVE_TABLE = 'shop.orders';
  process.env.VARVE_CONSUMER_ID = 'orders-audit';
  process.env.POWERTOOLS_SERVICE_NAME = 'varve';
  // What Lambda sets for an on-demand container (Powertools reports no cold start otherwise).
  process.env.AWS_LAMBDA_INITIALIZATION_TYPE = 'on-demand';
});
afterEach(() => {
  process.env = { ...saved };
  vi.restoreAllMocks();
});

/** The JSON log lines written while `fn` runs. */
async function logLines(fn: () => Promise<unknown>): Promise<Record<string, unknown>[]> {
  const lines: string[] = [];
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    lines.push(String(chunk));
    return true;
  });
  try {
    await fn();
  } finally {
    spy.mockRestore();
  }
  return lines
    .flatMap((l) => l.split('\n'))
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe('instrumented handlers', () => {
  it('log with the request id, the function, the cold start (first invocation only), the table and the consumer', async () => {
    // Prepare
    const { instrumented, log } = await import('../../functions/shared/observability.js');
    const handler = instrumented(async (event: { n: number }) => {
      log().info('ran', { n: event.n });
      return event.n;
    });
    // Act
    const first = await logLines(() => handler({ n: 1 }, lambdaContext('req-1')));
    const second = await logLines(() => handler({ n: 2 }, lambdaContext('req-2')));
    // Assess
    expect(first).toHaveLength(1);
    expect(first[0]).toMatchObject({
      message: 'ran',
      n: 1,
      function_request_id: 'req-1',
      function_name: 'varve-expire',
      cold_start: true,
      table: 'shop.orders',
      consumer: 'orders-audit',
      service: 'varve',
    });
    expect(second[0]).toMatchObject({ function_request_id: 'req-2', cold_start: false, table: 'shop.orders' });
  });

  it('pass the handler result and its error through unchanged', async () => {
    const { instrumented } = await import('../../functions/shared/observability.js');
    await expect(instrumented(async () => 'ok')({}, lambdaContext('a'))).resolves.toBe('ok');
    const boom = new Error('boom');
    await expect(instrumented(async () => Promise.reject(boom))({}, lambdaContext('b'))).rejects.toBe(boom);
  });
});

describe('tracing of SDK clients', () => {
  it('wraps every client varve makes (S3, SQS, DynamoDB, EventBridge) with X-Ray inside Lambda', async () => {
    // Prepare: what the Lambda runtime sets
    process.env.AWS_EXECUTION_ENV = 'AWS_Lambda_nodejs22.x';
    process.env.AWS_LAMBDA_FUNCTION_NAME = 'varve-ingest';
    process.env.AWS_REGION ??= 'us-east-1';
    const { trace } = await import('../../functions/shared/observability.js');
    const { defaultS3Client } = await import('../../lib/store/s3-store.js');
    const { defaultSqsClient } = await import('../../lib/stream/sqs-queue.js');
    const { eventBridgeClient } = await import('../../lib/aws/clients.js');
    const { DynamoCatalog } = await import('../../lib/catalog/dynamo-catalog.js');
    const { MemoryStore } = await import('../../lib/store/memory-store.js');
    // Act
    const clients = [
      defaultS3Client(),
      defaultSqsClient(),
      eventBridgeClient(),
      new DynamoCatalog(new MemoryStore(), { tableName: 'catalog' }).client,
    ];
    // Assess
    expect(trace().isTracingEnabled()).toBe(true);
    for (const c of clients)
      expect(c.middlewareStack.identify().some((m) => m.startsWith('XRaySDKInstrumentation'))).toBe(true);
  });

  it('leaves clients untouched outside Lambda', async () => {
    delete process.env.AWS_EXECUTION_ENV;
    delete process.env.AWS_LAMBDA_FUNCTION_NAME;
    await import('../../functions/shared/observability.js');
    const { defaultS3Client } = await import('../../lib/store/s3-store.js');
    expect(
      defaultS3Client()
        .middlewareStack.identify()
        .some((m) => m.startsWith('XRaySDKInstrumentation')),
    ).toBe(false);
  });
});

/** A local warehouse with table shop.orders, its consumer orders-audit started at `earliest`, and `writes` committed. */
async function ordersWithConsumer(
  options: Record<string, string>,
  writes: number,
): Promise<{ wh: string; table: Table }> {
  const wh = mkdtempSync(join(tmpdir(), 'varve-consumer-'));
  const table = await openCatalog(wh).createTable('shop.orders', {
    fields: parseSchemaText('k BIGINT'),
    primaryKeys: ['k'],
    partitionKeys: [],
    options: { bucket: '1', 'consumer.expiration-time': '1 h', ...options },
  });
  await ensureConsumer(table, 'orders-audit', { mode: 'earliest' });
  for (let k = 1; k <= writes; k++) await table.write([{ k: BigInt(k) }]);
  return { wh, table };
}

/** Runs the discovery function once; its error and every JSON line it logged (Powertools: errors on stderr, metrics as EMF on stdout). */
async function discoverOnce(
  wh: string,
  queueUrl: string,
): Promise<{ error: unknown; lines: Record<string, unknown>[] }> {
  const env = {
    VARVE_WAREHOUSE: wh,
    VARVE_TABLE: 'shop.orders',
    VARVE_CONSUMER_ID: 'orders-audit',
    VARVE_SPLIT_QUEUE_URL: queueUrl,
  };
  const { createDiscoverHandler } = await import('../../functions/discover.js');
  let error: unknown;
  const errors: string[] = [];
  const err = vi
    .spyOn(process.stderr, 'write')
    .mockImplementation((chunk: string | Uint8Array) => errors.push(String(chunk)) > 0);
  const lines = await logLines(async () => {
    error = await createDiscoverHandler(env)({ 'detail-type': 'Scheduled Event' } as never).then(
      () => undefined,
      (e: unknown) => e,
    );
  }).finally(() => err.mockRestore());
  lines.push(
    ...errors
      .flatMap((l) => l.split('\n'))
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>),
  );
  return { error, lines };
}

describe('the discovery function meeting an expired consumer id', () => {
  it('logs an error naming the last position, emits ConsumerExpired (table, consumer) and fails', async () => {
    // Prepare: consumer orders-audit of a local warehouse expired.
    const { wh, table } = await ordersWithConsumer({}, 1);
    await expireSnapshots(table, { now: Date.now() + 2 * 3600_000, retainMin: 10 });
    // Act
    const { error, lines } = await discoverOnce(wh, 'http://localhost:1/q.fifo');
    // Assess
    expect((error as Error).name).toBe('ConsumerExpiredError');
    expect(lines.find((l) => l.level === 'ERROR')).toMatchObject({ consumer: 'orders-audit', lastPosition: 1 });
    const emf = lines.find((l) => l.ConsumerExpired !== undefined);
    expect(emf).toMatchObject({ ConsumerExpired: 1, table: 'shop.orders', consumer: 'orders-audit', service: 'varve' });
  });

  it('resumed with skip-to-earliest after its snapshots expired: logs the skipped snapshots as an error and emits ConsumerSnapshotsSkipped', async () => {
    // Prepare: consumer orders-audit stopped at snapshot 1; it expired, and so did snapshots 1..2.
    const { wh, table } = await ordersWithConsumer({ 'scan.on-expired': 'skip-to-earliest' }, 3);
    await expireSnapshots(table, { now: Date.now() + 2 * 3600_000, retainMin: 1 });
    const queue = await createQueue(uniqueName('skipped') + '.fifo');
    // Act
    const { error, lines } = await discoverOnce(wh, queue);
    // Assess: never silent. Snapshots 1 and 2 expired before the consumer read them.
    expect(error).toBeUndefined();
    const skippedLog = lines.find(
      (l) => l.level === 'ERROR' && String(l.message).includes('skipped expired snapshots'),
    );
    expect(skippedLog, JSON.stringify(lines)).toMatchObject({
      consumer: 'orders-audit',
      skipped: [{ snapshots: '1..2', reason: 'consumer-expired' }],
    });
    const emf = lines.find((l) => l.ConsumerSnapshotsSkipped !== undefined);
    expect(emf).toMatchObject({ ConsumerSnapshotsSkipped: 2, table: 'shop.orders', consumer: 'orders-audit' });
  });
});
