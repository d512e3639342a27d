/**
 * A split's own retry budget (lib/stream/split-failures.ts, functions/shared/stream-handler.ts):
 * counted durably across reader processes, and at SPLIT_FAILURE_BUDGET own failures the reader
 * moves the split to the split DLQ itself, loudly, where `redrive` brings it back in order.
 * Splits behind it do not count its failures as theirs.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import type { Context } from 'aws-lambda';
import { describe, expect, it, vi } from 'vitest';
import { createStreamHandler as handlerOfProcessA } from '../../functions/shared/stream-handler.js';
import { log } from '../../functions/shared/observability.js';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { openStore } from '../../lib/store/open-store.js';
import { discover, ensureConsumer } from '../../lib/stream/discovery.js';
import { redrive } from '../../lib/stream/redrive.js';
import { readSplitFailures, splitFailuresKey, SPLIT_FAILURE_BUDGET } from '../../lib/stream/split-failures.js';
import { SqsSplitQueue } from '../../lib/stream/sqs-queue.js';
import { put } from '../stream/fixtures.js';
import {
  captureMetrics,
  createQueue,
  pollOnce,
  powertoolsEnv,
  queueArn,
  sqs,
  uniqueName,
  captureLogs,
} from './harness.js';

/** The functions' log lines: an ERROR line fails the test that logged it (harness.ts). */
captureLogs();

captureMetrics();
powertoolsEnv();

async function depth(url: string): Promise<number> {
  const a = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: url,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return (
    Number(a.Attributes!.ApproximateNumberOfMessages) + Number(a.Attributes!.ApproximateNumberOfMessagesNotVisible)
  );
}

describe('split retry budget', () => {
  it('moves a split to the DLQ after its own failures (counted across processes), loudly; the splits behind it follow at once; redrive brings them back in order with a new budget', async () => {
    // Prepare: one bucket, three snapshots; the sink fails on snapshot 1 until healed
    // A folder warehouse: the second reader process (a fresh module instance) sees it too.
    const warehouse = mkdtempSync(path.join(tmpdir(), 'split-budget-'));
    const table = await new FolderCatalog(openStore(warehouse)).createTable('db.t', {
      fields: parseSchemaText('k BIGINT, v STRING'),
      primaryKeys: ['k'],
      options: { bucket: '1' },
    });
    await ensureConsumer(table, 'audit', { mode: 'earliest' });
    for (const v of ['a', 'b', 'c']) await put(table, [[1, v]]);
    const dlq = await createQueue(`${uniqueName('split-dlq')}.fifo`);
    const url = await createQueue(`${uniqueName('splits')}.fifo`, {
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: await queueArn(dlq), maxReceiveCount: '50' }),
    });
    await discover(table, new SqsSplitQueue({ queueUrl: url }), 'audit');
    const env = {
      VARVE_WAREHOUSE: warehouse,
      VARVE_TABLE: 'db.t',
      VARVE_CONSUMER_ID: 'audit',
      VARVE_SPLIT_DLQ_URL: dlq,
    };
    let healed = false;
    const seen: string[] = [];
    const sink = (changes: { snapshot: number; row: Record<string, unknown> }[]) => {
      if (!healed && changes.some((c) => c.snapshot === 1)) throw new Error('sink down for snapshot 1');
      for (const c of changes) seen.push(`${c.snapshot}:${String(c.row.v)}`);
    };
    // A second reader process: its own module instance (no in-process state shared).
    vi.resetModules();
    const handlerOfProcessB = (await import('../../functions/shared/stream-handler.js')).createStreamHandler;
    const logOfProcessB = (await import('../../functions/shared/observability.js')).log;
    const handlers = [handlerOfProcessA(sink, env), handlerOfProcessB(sink, env)];
    const errors: string[] = [];
    for (const logger of [log(), logOfProcessB()]) {
      vi.spyOn(logger, 'warn').mockImplementation(() => {});
      vi.spyOn(logger, 'error').mockImplementation(((m: unknown) => void errors.push(String(m))) as never);
    }
    // Act: each attempt by the other process; the two followers are received with the head every time
    const received: number[][] = [];
    for (let i = 0; i < SPLIT_FAILURE_BUDGET; i++) {
      const p = await pollOnce(url, handlers[i % 2]);
      received.push(p!.event.Records.map((r) => Number(r.attributes.ApproximateReceiveCount)));
    }
    // Assess: the head failed on its own SPLIT_FAILURE_BUDGET times and is in the DLQ, reported loudly
    expect(received.map((r) => r.length)).toEqual(Array(SPLIT_FAILURE_BUDGET).fill(3));
    expect(errors[0]).toMatch(
      new RegExp(
        `snapshot 1, bucket 0\\) MOVED TO THE DEAD-LETTER QUEUE after failing on its own ${SPLIT_FAILURE_BUDGET} times.*sink down for snapshot 1.*varve redrive`,
      ),
    );
    // The followers were received as often as the head, but none of that was their own, and
    // behind the moved head they can only fail on its gap: they follow it to the DLQ at once, in
    // the same batch, naming it.
    expect(received.at(-1)).toEqual([SPLIT_FAILURE_BUDGET, SPLIT_FAILURE_BUDGET, SPLIT_FAILURE_BUDGET]);
    expect(await depth(url)).toBe(0);
    expect(await depth(dlq)).toBe(3);
    expect(errors).toHaveLength(3);
    for (const [i, e] of errors.slice(1).entries())
      expect(e).toMatch(
        new RegExp(
          `snapshot ${i + 2}, bucket 0\\) MOVED TO THE DEAD-LETTER QUEUE behind the dead-lettered split of snapshot 1.*redrive`,
        ),
      );
    const record = await readSplitFailures(table.store, splitFailuresKey(table.path, 'audit', '', 0));
    expect(record).toMatchObject({ snapshot: 1, failures: SPLIT_FAILURE_BUDGET, deadLettered: true });
    expect(record!.lastError).toMatch(/sink down for snapshot 1/);
    // Act: redrive while the sink still fails: the redriven head has its budget again (one more
    // failure does not move it back), then the sink heals.
    expect((await redrive(sqs, 'split', dlq, url)).moved).toBe(3);
    await pollOnce(url, handlers[0]);
    expect(await depth(dlq)).toBe(0);
    expect(await readSplitFailures(table.store, splitFailuresKey(table.path, 'audit', '', 0))).toMatchObject({
      snapshot: 1,
      failures: 1,
    });
    expect(seen).toEqual([]);
    healed = true;
    for (let i = 0; i < 10 && (await depth(url)) > 0; i++) await pollOnce(url, handlers[i % 2]);
    // Assess: every change, in order, and nothing left behind
    expect(seen).toEqual(['1:a', '2:b', '3:c']);
    expect(await depth(url)).toBe(0);
    expect(await depth(dlq)).toBe(0);
    expect(errors).toHaveLength(3);
  }, 120_000);

  it('counts a deadline against the split whose own sink call used the time, not against the splits that found no time left after it', async () => {
    // Prepare: two buckets, one snapshot: two splits in one batch; the first sink call outlives the deadline
    const warehouse = mkdtempSync(path.join(tmpdir(), 'split-budget-deadline-'));
    const table = await new FolderCatalog(openStore(warehouse)).createTable('db.t', {
      fields: parseSchemaText('k BIGINT, v STRING'),
      primaryKeys: ['k'],
      options: { bucket: '2' },
    });
    await ensureConsumer(table, 'audit', { mode: 'earliest' });
    const keys = [1, 2, 3, 4, 5, 6, 7, 8];
    await put(
      table,
      keys.map((k) => [k, 'a']),
    );
    const url = await createQueue(`${uniqueName('splits')}.fifo`);
    await discover(table, new SqsSplitQueue({ queueUrl: url }), 'audit');
    const env = { VARVE_WAREHOUSE: warehouse, VARVE_TABLE: 'db.t', VARVE_CONSUMER_ID: 'audit' };
    let slowBucket: number | undefined;
    const handler = handlerOfProcessA(async (_changes, batch) => {
      slowBucket ??= batch.bucket;
      if (batch.bucket === slowBucket) await new Promise((resolve) => setTimeout(resolve, 1500));
    }, env);
    const warns: { msg: string; fields: Record<string, unknown> }[] = [];
    vi.spyOn(log(), 'warn').mockImplementation(
      ((msg: unknown, fields: Record<string, unknown>) => void warns.push({ msg: String(msg), fields })) as never,
    );
    // Act: one invocation with 1 s left (its sink deadline 0.8 s from the start)
    const end = Date.now() + 1000;
    const context = {
      awsRequestId: uniqueName('req'),
      getRemainingTimeInMillis: () => Math.max(0, end - Date.now()),
    } as unknown as Context;
    const p = await pollOnce(url, (e) => handler(e, context));
    // Assess: both splits failed; only the slow one counted a failure of its own
    expect(p!.event.Records).toHaveLength(2);
    expect(p!.response.batchItemFailures).toHaveLength(2);
    const other = 1 - slowBucket!;
    expect(await readSplitFailures(table.store, splitFailuresKey(table.path, 'audit', '', slowBucket!))).toMatchObject({
      snapshot: 1,
      failures: 1,
    });
    expect(await readSplitFailures(table.store, splitFailuresKey(table.path, 'audit', '', other))).toBeUndefined();
    const lines = warns.filter((w) => w.msg.startsWith('split of snapshot'));
    expect(lines.map((w) => [w.fields.bucket, w.fields.reason, w.fields.ownFailures])).toEqual(
      expect.arrayContaining([
        [slowBucket, 'deadline', 1],
        [other, 'deadline', undefined],
      ]),
    );
    expect(lines.find((w) => w.fields.bucket === other)!.fields.error).toMatch(
      /no time is left .* earlier sink call\(s\) of this batch used it/,
    );
  }, 60_000);
});
