/**
 * An invocation that dies in a split (crash, out of memory, Lambda's timeout) reports nothing;
 * each reader invocation here is its own OS process, SIGKILLed inside the sink call. The split's
 * noted attempts (lib/stream/split-failures.ts) count each death as its own failure, so the split
 * reaches the dead-letter queue after its budget, loudly, instead of after the queue's
 * maxReceiveCount (50 receives, hours at a five-minute reader timeout); redrive brings it back.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { openStore } from '../../lib/store/open-store.js';
import { discover, ensureConsumer } from '../../lib/stream/discovery.js';
import { redrive } from '../../lib/stream/redrive.js';
import { readSplitFailures, splitFailuresKey, SPLIT_FAILURE_BUDGET } from '../../lib/stream/split-failures.js';
import { SqsSplitQueue } from '../../lib/stream/sqs-queue.js';
import { put } from '../stream/fixtures.js';
import { createQueue, queueArn, sqs, uniqueName } from './harness.js';

const ROOT = path.join(__dirname, '../..');
const SPLIT_MAX_RECEIVES = 50;

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

/** One reader invocation in its own process; killed with SIGKILL once its sink call has begun on the hanging snapshot. */
function invoke(url: string, env: Record<string, string>): Promise<{ out: string; killed: boolean }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(ROOT, 'test/functions/fixtures/split-reader-child.ts'), url],
    { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  let killed = false;
  child.stdout.setEncoding('utf8').on('data', (t: string) => {
    out += t;
    if (!killed && out.includes('IN-SINK')) {
      killed = true;
      child.kill('SIGKILL');
    }
  });
  child.stderr.setEncoding('utf8').on('data', (t: string) => (out += t));
  return new Promise((resolve) => child.on('close', () => resolve({ out, killed })));
}

describe('a split whose invocations die', () => {
  it('reaches the dead-letter queue after its own budget of deaths, loudly, with the split behind it; redrive delivers both in order', async () => {
    // Prepare: one bucket, two snapshots; the reader dies in the sink call of snapshot 1
    const warehouse = mkdtempSync(path.join(tmpdir(), 'split-crash-'));
    try {
      const table = await new FolderCatalog(openStore(warehouse)).createTable('db.t', {
        fields: parseSchemaText('k BIGINT, v STRING'),
        primaryKeys: ['k'],
        options: { bucket: '1' },
      });
      await ensureConsumer(table, 'audit', { mode: 'earliest' });
      await put(table, [[1, 'a']]);
      await put(table, [[1, 'b']]);
      const dlq = await createQueue(`${uniqueName('split-dlq')}.fifo`);
      // A short visibility: a dead invocation's messages come back after 5 s (on AWS: the reader's
      // timeout and more), after its split fence (held to its end, 3 s, and 1 s of clock skew).
      const url = await createQueue(`${uniqueName('splits')}.fifo`, {
        VisibilityTimeout: '5',
        RedrivePolicy: JSON.stringify({
          deadLetterTargetArn: await queueArn(dlq),
          maxReceiveCount: String(SPLIT_MAX_RECEIVES),
        }),
      });
      await discover(table, new SqsSplitQueue({ queueUrl: url }), 'audit');
      const env = {
        VARVE_WAREHOUSE: warehouse,
        VARVE_TABLE: 'db.t',
        VARVE_CONSUMER_ID: 'audit',
        VARVE_SPLIT_DLQ_URL: dlq,
        VARVE_SPLIT_VISIBILITY_S: '5',
      };

      // Act: invocations, each a new process, until the queue is empty (sized by work: each death is one invocation)
      let kills = 0;
      let log = '';
      for (let i = 0; i < 60 && (await depth(url)) > 0; i++) {
        const r = await invoke(url, { ...env, VARVE_TEST_HANG_SNAPSHOT: '1' });
        log += r.out;
        if (r.killed) kills++;
        if (r.out.includes('EMPTY')) await new Promise((res) => setTimeout(res, 500));
      }

      // Assess: the first receive is not noted, the second notes its attempt, and from the third on
      // each receive counts the death before it. (On a starved machine an invocation may reach its
      // sink deadline before its sink call: then that is its own failure, counted as such, and when
      // it is the last of the budget only the dead-letter line names it.)
      const lines = log.split('\n');
      const deaths = lines.filter((l) => l.includes('an invocation died in the split of snapshot 1')).length;
      const movedByDeadline = lines.filter(
        (l) =>
          l.includes('(snapshot 1, bucket 0) MOVED TO THE DEAD-LETTER QUEUE') && l.includes('(last: SinkTimeoutError'),
      ).length;
      const ownDeadlines =
        lines.filter((l) => l.includes('split of snapshot 1 bucket 0 failed') && l.includes('no time is left')).length +
        movedByDeadline;
      expect(await depth(url), log).toBe(0);
      expect(deaths, log).toBeGreaterThanOrEqual(1);
      expect(deaths + ownDeadlines, log).toBe(SPLIT_FAILURE_BUDGET);
      expect(kills, log).toBe(deaths + 1);
      expect(await depth(dlq), log).toBe(2);
      const errors = lines.filter((l) => l.includes('MOVED TO THE DEAD-LETTER QUEUE'));
      expect(errors, log).toHaveLength(2);
      expect(errors[0]).toMatch(
        new RegExp(
          `snapshot 1, bucket 0\\) MOVED TO THE DEAD-LETTER QUEUE after failing on its own ${SPLIT_FAILURE_BUDGET} times \\(last: `,
        ),
      );
      expect(errors[1]).toMatch(
        /snapshot 2, bucket 0\) MOVED TO THE DEAD-LETTER QUEUE behind the dead-lettered split of snapshot 1/,
      );
      expect(await readSplitFailures(table.store, splitFailuresKey(table.path, 'audit', '', 0))).toMatchObject({
        snapshot: 1,
        failures: SPLIT_FAILURE_BUDGET,
        deadLettered: true,
      });
      expect(log).not.toMatch(/DELIVERED/);

      // Act: the cause is fixed; redrive, and invoke until the queue is empty
      expect((await redrive(sqs, 'split', dlq, url)).moved).toBe(2);
      let delivered = '';
      for (let i = 0; i < 10 && (await depth(url)) > 0; i++) delivered += (await invoke(url, env)).out;

      // Assess: both, in order
      expect(
        delivered.split('\n').filter((l) => l.startsWith('DELIVERED')),
        delivered,
      ).toEqual(['DELIVERED 1 1=a', 'DELIVERED 2 1=b']);
      expect(await depth(dlq)).toBe(0);
    } finally {
      rmSync(warehouse, { recursive: true, force: true });
    }
    // A limit, not a measure: ~60 s on an idle 2-core machine, 7 child processes each starting tsx;
    // a machine loaded 15x over took more than 240 s.
  }, 600_000);
});
