/**
 * Issue 11, failures 3 and 5 on moto: `varve redrive` moves dead-lettered messages back, finding
 * the queues by their varve tags; the ingest DLQ's three shapes (queue messages, Lambda async
 * failure records, EventBridge delivery failures) are normalised so that ingest takes each.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { DeleteMessageCommand, SendMessageCommand, TagQueueCommand } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse } from 'aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import { createCommitHandler } from '../../functions/commit.js';
import { createIngestHandler } from '../../functions/ingest.js';
import { runCli } from '../../lib/cli/main.js';
import { awsAvailable } from '../helpers/aws.js';
import {
  captureMetrics,
  createOrders,
  createQueue,
  deploy,
  drain,
  objectCreatedEvent,
  powertoolsEnv,
  receive,
  reopen,
  sqs,
  sqsEventOf,
  uniqueName,
  captureLogs,
} from './harness.js';

/** The functions' log lines: an ERROR line fails the test that logged it (harness.ts). */
captureLogs();

const s3 = new S3Client({ forcePathStyle: true });

async function redriveCli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCli(['redrive', ...args], { out: (t) => (out += t), err: (t) => (err += t) });
  return { code, out, err };
}

describe.skipIf(!awsAvailable())('varve redrive on moto', () => {
  captureMetrics();
  beforeAll(() => powertoolsEnv());

  it('moves the three shapes of the ingest DLQ back to the ingest queue, found by tags, and ingest lands them all', async () => {
    // Prepare: the table's ingest queue and DLQ tagged as the constructs tag them (a unique table name keeps other tests' queues out)
    const d = await deploy();
    await createOrders(d);
    const tagged = uniqueName('shop.tagged');
    const dlqUrl = await createQueue(uniqueName('ingest-dlq'));
    await sqs.send(
      new TagQueueCommand({ QueueUrl: d.ingestUrl, Tags: { 'varve:table': tagged, 'varve:queue': 'ingest' } }),
    );
    await sqs.send(
      new TagQueueCommand({
        QueueUrl: dlqUrl,
        Tags: { 'varve:table': tagged, 'varve:queue': 'ingest', 'varve:dead-letter': 'true' },
      }),
    );
    const file = async (name: string, id: number) => {
      const key = `wh/inbox/shop/orders/${name}`;
      const r = await s3.send(
        new PutObjectCommand({ Bucket: d.bucket, Key: key, Body: `{"id": ${id}, "status": "${name}", "amount": 1}\n` }),
      );
      return objectCreatedEvent(d.bucket, key, r.ETag!);
    };
    const asyncFailure = {
      version: '1.0',
      requestContext: {
        requestId: randomUUID(),
        functionArn: 'arn:aws:lambda:us-east-1:123456789012:function:ingest:$LATEST',
        condition: 'RetriesExhausted',
        approximateInvokeCount: 3,
      },
      requestPayload: await file('async.jsonl', 2),
      responseContext: { statusCode: 200, functionError: 'Unhandled' },
      responsePayload: { errorMessage: 'S3 unavailable' },
    };
    const attr = (v: string) => ({ DataType: 'String', StringValue: v });
    await sqs.send(
      new SendMessageCommand({ QueueUrl: dlqUrl, MessageBody: JSON.stringify({ id: 1, status: 'queued', amount: 1 }) }),
    );
    await sqs.send(new SendMessageCommand({ QueueUrl: dlqUrl, MessageBody: JSON.stringify(asyncFailure) }));
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: dlqUrl,
        MessageBody: JSON.stringify(await file('eventbridge.jsonl', 3)),
        MessageAttributes: {
          ERROR_CODE: attr('SDK_CLIENT_ERROR'),
          RULE_ARN: attr('arn:aws:events:us-east-1:123456789012:rule/inbox'),
          TARGET_ARN: attr('arn:aws:lambda:us-east-1:123456789012:function:ingest'),
        },
      }),
    );
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: dlqUrl,
        MessageBody: JSON.stringify({ ...asyncFailure, requestPayload: { Records: [] } }),
      }),
    );

    // Act
    const r = await redriveCli([tagged, '--queue', 'ingest']);
    const polls = await drain(
      d.ingestUrl,
      async (e) => (await createIngestHandler(d.env('direct'))(e)) as SQSBatchResponse,
    );

    // Assess: three moved and landed, the unknown shape left in the DLQ and named
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/moved 3 message\(s\).*1 message, 1 lambda-async-failure, 1 eventbridge-failure, 1 unknown/);
    expect(r.out).toMatch(/left in the dead-letter queue: .*not an S3 Object Created event/);
    expect(polls.flatMap((p) => p.response.batchItemFailures)).toEqual([]);
    const rows = (await (await reopen(d)).read())
      .toArray()
      .map((x) => `${String(x.id)}:${String(x.status)}`)
      .sort();
    expect(rows).toEqual(['1:queued', '2:async.jsonl', '3:eventbridge.jsonl']);
  });

  it('redrives a dead-lettered commit message by committing it (the ordered redrive), and empties the DLQ', async () => {
    // Prepare: a writer's batch that ended in the commit DLQ
    const d = await deploy();
    await createOrders(d);
    const dlqUrl = await createQueue(`${uniqueName('commit-dlq')}.fifo`);
    const ingest = createIngestHandler(d.env('queue'));
    await ingest(
      sqsEventOf(d.ingestUrl, [
        {
          MessageId: 'm1',
          ReceiptHandle: 'r',
          Body: JSON.stringify({ id: 7, status: 'dlq', amount: 1 }),
          Attributes: {},
        },
      ]),
    );
    const [m] = await receive(d.commitUrl, 1);
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: dlqUrl,
        MessageBody: m.Body!,
        MessageGroupId: m.Attributes!.MessageGroupId!,
        MessageDeduplicationId: m.Attributes!.MessageDeduplicationId!,
      }),
    );
    await sqs.send(new DeleteMessageCommand({ QueueUrl: d.commitUrl, ReceiptHandle: m.ReceiptHandle! }));

    // Act: the commit DLQ is redriven by committing its batches in order (lib/stream/redrive-order.ts),
    // so the CLI needs the table's warehouse; whatever it held of the commit queue meanwhile is drained after
    let out = '';
    let err = '';
    const code = await runCli(
      [
        '--warehouse',
        d.warehouse,
        'redrive',
        'shop.orders',
        '--queue',
        'commit',
        '--dlq-url',
        dlqUrl,
        '--to-url',
        d.commitUrl,
      ],
      { out: (t) => (out += t), err: (t) => (err += t) },
    );
    const polls = await drain(d.commitUrl, createCommitHandler(d.env('queue')));

    // Assess
    expect({ code, err }).toEqual({ code: 0, err: '' });
    expect(out).toMatch(/redrove 1 batch\(es\).*committed 1 row\(s\), skipped 0 row\(s\)/);
    expect(polls.flatMap((p) => p.response.batchItemFailures)).toEqual([]);
    expect(await receive(dlqUrl, 10)).toEqual([]);
    expect((await (await reopen(d)).read()).toArray().map((x) => String(x.status))).toEqual(['dlq']);
  });

  it('finds the queues of the table in the --warehouse given when two warehouses hold a table of that name', async () => {
    // Prepare: one table name, ingest queue and DLQ in warehouses s3://<x>/a and s3://<x>/b, tagged as the constructs tag them
    const table = uniqueName('shop.twin');
    const bucket = uniqueName('twin');
    const queues: Record<string, { queue: string; dlq: string }> = {};
    for (const w of ['a', 'b']) {
      const warehouse = `s3://${bucket}/${w}`;
      const queue = await createQueue(uniqueName(`ingest-${w}`));
      const dlq = await createQueue(uniqueName(`ingest-dlq-${w}`));
      const tags = { 'varve:warehouse': warehouse, 'varve:table': table, 'varve:queue': 'ingest' };
      await sqs.send(new TagQueueCommand({ QueueUrl: queue, Tags: tags }));
      await sqs.send(new TagQueueCommand({ QueueUrl: dlq, Tags: { ...tags, 'varve:dead-letter': 'true' } }));
      queues[w] = { queue, dlq };
    }
    await sqs.send(new SendMessageCommand({ QueueUrl: queues.b.dlq, MessageBody: '{"id": 1}' }));
    const cli = async (warehouse: string) => {
      let out = '';
      let err = '';
      const code = await runCli(['--warehouse', warehouse, 'redrive', table, '--queue', 'ingest'], {
        out: (t) => (out += t),
        err: (t) => (err += t),
      });
      return { code, out, err };
    };

    // Act
    const local = await cli(mkdtempSync(path.join(tmpdir(), 'varve-local-')));
    const b = await cli(`s3://${bucket}/b/`);

    // Assess: without an s3:// warehouse both match: refused, each listed; with it, b's DLQ went to b's queue
    expect(local.code).not.toBe(0);
    expect(local.err).toContain(`2 SQS queues are tagged as the ingest dead-letter queue of ${table}`);
    expect(local.err).toContain(`${queues.a.dlq} (warehouse s3://${bucket}/a)`);
    expect(local.err).toContain(`${queues.b.dlq} (warehouse s3://${bucket}/b)`);
    expect(local.err).toMatch(/--warehouse s3:\/\/bucket\/prefix/);
    expect({ code: b.code, err: b.err }).toEqual({ code: 0, err: '' });
    expect(b.out).toContain(`moved 1 message(s) from ${queues.b.dlq} to ${queues.b.queue}`);
    expect((await receive(queues.b.queue, 10)).map((m) => m.Body)).toEqual(['{"id": 1}']);
    expect(await receive(queues.a.queue, 10)).toEqual([]);
  });
});
