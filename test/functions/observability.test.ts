import type { Context } from 'aws-lambda';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

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
  return lines.flatMap((l) => l.split('\n')).filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
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
    const { eventBridgeClient } = await import('../../functions/shared/aws-clients.js');
    const { DynamoCatalog } = await import('../../lib/catalog/dynamo-catalog.js');
    const { MemoryStore } = await import('../../lib/store/memory-store.js');
    // Act
    const clients = [defaultS3Client(), defaultSqsClient(), eventBridgeClient(), new DynamoCatalog(new MemoryStore(), { tableName: 'catalog' }).client];
    // Assess
    expect(trace().isTracingEnabled()).toBe(true);
    for (const c of clients) expect(c.middlewareStack.identify().some((m) => m.startsWith('XRaySDKInstrumentation'))).toBe(true);
  });

  it('leaves clients untouched outside Lambda', async () => {
    delete process.env.AWS_EXECUTION_ENV;
    delete process.env.AWS_LAMBDA_FUNCTION_NAME;
    await import('../../functions/shared/observability.js');
    const { defaultS3Client } = await import('../../lib/store/s3-store.js');
    expect(defaultS3Client().middlewareStack.identify().some((m) => m.startsWith('XRaySDKInstrumentation'))).toBe(false);
  });
});

describe('the discovery function meeting an expired consumer id', () => {
  it('logs an error naming the last position, emits ConsumerExpired (table, consumer) and fails', async () => {
    // Prepare: a local warehouse whose consumer orders-audit expired.
    const { mkdtempSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { openCatalog } = await import('../../lib/catalog/open-catalog.js');
    const { parseSchemaText } = await import('../../lib/schema/parse.js');
    const { ensureConsumer } = await import('../../lib/stream/discovery.js');
    const { expireSnapshots } = await import('../../lib/maintenance/expire-snapshots.js');
    const wh = mkdtempSync(join(tmpdir(), 'varve-expired-'));
    const table = await openCatalog(wh).createTable('shop.orders', { fields: parseSchemaText('k BIGINT'), primaryKeys: ['k'], partitionKeys: [], options: { bucket: '1', 'consumer.expiration-time': '1 h' } });
    await ensureConsumer(table, 'orders-audit', { mode: 'earliest' });
    await table.write([{ k: 1n }]);
    await expireSnapshots(table, { now: Date.now() + 2 * 3600_000, retainMin: 10 });
    const env = { VARVE_WAREHOUSE: wh, VARVE_TABLE: 'shop.orders', VARVE_CONSUMER_ID: 'orders-audit', VARVE_SPLIT_QUEUE_URL: 'http://localhost:1/q.fifo' };
    const { createDiscoverHandler } = await import('../../functions/discover.js');
    // Act
    let error: unknown;
    // Powertools writes errors to stderr, metrics (EMF) to stdout.
    const errors: string[] = [];
    const err = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => errors.push(String(chunk)) > 0);
    const lines = await logLines(async () => {
      error = await createDiscoverHandler(env)({ 'detail-type': 'Scheduled Event' } as never).catch((e) => e);
    }).finally(() => err.mockRestore());
    lines.push(...errors.flatMap((l) => l.split('\n')).filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>));
    // Assess
    expect((error as Error).name).toBe('ConsumerExpiredError');
    expect(lines.find((l) => l.level === 'ERROR')).toMatchObject({ consumer: 'orders-audit', lastPosition: 1 });
    const emf = lines.find((l) => l.ConsumerExpired !== undefined);
    expect(emf).toMatchObject({ ConsumerExpired: 1, table: 'shop.orders', consumer: 'orders-audit', service: 'varve' });
  });

  it('resumed with skip-to-earliest after its snapshots expired: logs the skipped snapshots as an error and emits ConsumerSnapshotsSkipped', async () => {
    // Prepare: consumer orders-audit stopped at snapshot 1; it expired, and so did snapshots 1..2.
    const { mkdtempSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { openCatalog } = await import('../../lib/catalog/open-catalog.js');
    const { parseSchemaText } = await import('../../lib/schema/parse.js');
    const { ensureConsumer } = await import('../../lib/stream/discovery.js');
    const { expireSnapshots } = await import('../../lib/maintenance/expire-snapshots.js');
    const wh = mkdtempSync(join(tmpdir(), 'varve-skipped-'));
    const options = { bucket: '1', 'consumer.expiration-time': '1 h', 'scan.on-expired': 'skip-to-earliest' };
    const table = await openCatalog(wh).createTable('shop.orders', { fields: parseSchemaText('k BIGINT'), primaryKeys: ['k'], partitionKeys: [], options });
    await ensureConsumer(table, 'orders-audit', { mode: 'earliest' });
    for (const k of [1n, 2n, 3n]) await table.write([{ k }]);
    await expireSnapshots(table, { now: Date.now() + 2 * 3600_000, retainMin: 1 });
    const { createQueue, uniqueName } = await import('./harness.js');
    const queue = await createQueue(uniqueName('skipped') + '.fifo');
    const env = { VARVE_WAREHOUSE: wh, VARVE_TABLE: 'shop.orders', VARVE_CONSUMER_ID: 'orders-audit', VARVE_SPLIT_QUEUE_URL: queue };
    const { createDiscoverHandler } = await import('../../functions/discover.js');
    // Act
    const errors: string[] = [];
    const err = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => errors.push(String(chunk)) > 0);
    const lines = await logLines(async () => {
      await createDiscoverHandler(env)({ 'detail-type': 'Scheduled Event' } as never);
    }).finally(() => err.mockRestore());
    lines.push(...errors.flatMap((l) => l.split('\n')).filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>));
    // Assess: never silent. Snapshots 1 and 2 expired before the consumer read them.
    const skippedLog = lines.find((l) => l.level === 'ERROR' && String(l.message).includes('skipped expired snapshots'));
    expect(skippedLog, JSON.stringify(lines)).toMatchObject({ consumer: 'orders-audit', skipped: [{ snapshots: '1..2', reason: 'consumer-expired' }] });
    const emf = lines.find((l) => l.ConsumerSnapshotsSkipped !== undefined);
    expect(emf).toMatchObject({ ConsumerSnapshotsSkipped: 2, table: 'shop.orders', consumer: 'orders-audit' });
  });
});
