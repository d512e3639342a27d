/**
 * The commit DLQ redrive on moto: a batch that failed past maxReceiveCount sits in the DLQ while a
 * newer batch of the same key commits; the redrive must not let the older value win.
 */
import { randomUUID } from 'node:crypto';
import {
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { redriveCommits } from '../../lib/stream/redrive-order.js';
import { queueId } from '../../lib/stream/split-message.js';
import { encodeCommitMessage, isRedriveBarrier, type CommitMessage } from '../../lib/table/commit-message.js';
import { landRows } from '../../lib/table/land-rows.js';
import type { Table } from '../../lib/table/table.js';
import { awsAvailable } from '../helpers/aws.js';
import { createQueue } from '../functions/harness.js';

/** A table, its commit queue and commit DLQ (FIFO, the group per table), as the constructs make them. */
async function setup() {
  const table = await new FolderCatalog(new MemoryStore()).createTable('shop.orders', {
    fields: parseSchemaText('id BIGINT, status STRING'),
    primaryKeys: ['id'],
    options: { bucket: '2' },
  });
  const name = `redrive-${randomUUID().slice(0, 8)}`;
  const dlqUrl = await createQueue(`${name}-dlq.fifo`);
  const queueUrl = await createQueue(`${name}.fifo`);
  return { table, dlqUrl, queueUrl, sqs: new SQSClient({}) };
}

/** A writer's batch of `rows`, written now and handed over as its commit message. */
async function writeBatch(
  table: Table,
  id: string,
  rows: Array<{ id: bigint; status: string }>,
): Promise<CommitMessage> {
  let message: CommitMessage | undefined;
  await landRows(
    table,
    rows,
    rows.map(() => 0),
    { commitUser: 'ingest', commitIdentifier: id, sources: [`sqs:${id}`], enqueue: async (m) => void (message = m) },
  );
  return message!;
}

async function send(sqs: SQSClient, url: string, m: CommitMessage, dedup = m.commitIdentifier): Promise<void> {
  await sqs.send(
    new SendMessageCommand({
      QueueUrl: url,
      MessageBody: encodeCommitMessage(m),
      MessageGroupId: queueId(m.table),
      MessageDeduplicationId: queueId(dedup),
    }),
  );
}

async function statusOf(table: Table): Promise<Map<bigint, string>> {
  const rows = (await table.read()).toArray() as Array<{ id: bigint; status: string }>;
  return new Map(rows.map((r) => [r.id, r.status]));
}

const tick = () => new Promise((r) => setTimeout(r, 5));

/**
 * The older batch (1:new, 2:new) failed its receives and sits in the commit DLQ, while a newer
 * batch of key 1 (1:paid) committed (the commit function, here through the same lib commit).
 */
async function olderDeadLetteredNewerCommitted() {
  const s = await setup();
  const older = await writeBatch(s.table, 'ingest-m1', [
    { id: 1n, status: 'new' },
    { id: 2n, status: 'new' },
  ]);
  await send(s.sqs, s.dlqUrl, older);
  await tick();
  await landRows(s.table, [{ id: 1n, status: 'paid' }], [0], { commitUser: 'ingest', commitIdentifier: 'ingest-m2' });
  return s;
}

describe.skipIf(!awsAvailable())('commit DLQ redrive keeps per-key order (moto)', () => {
  it('commits the dead-lettered batch without the keys a newer batch already committed, and says what it skipped', async () => {
    // Prepare
    const { table, dlqUrl, queueUrl, sqs } = await olderDeadLetteredNewerCommitted();
    expect((await statusOf(table)).get(1n)).toBe('paid');
    // Act
    const r = await redriveCommits(sqs, table, dlqUrl, queueUrl, { pollMs: 100 });
    // Assess: key 1 keeps the newest value, key 2 (no newer version) lands; the result names both.
    const status = await statusOf(table);
    expect(status.get(1n)).toBe('paid');
    expect(status.get(2n)).toBe('new');
    expect(r.batches).toHaveLength(1);
    expect(r.batches[0]).toMatchObject({
      outcome: 'committed',
      committedRows: 1,
      skippedRows: 1,
      skippedKeys: ['[1]'],
      commitIdentifier: 'ingest-m1',
    });
    // The DLQ is empty, the commit queue holds nothing (the barrier the redrive held is gone).
    const depth = async (url: string) => {
      const a = await sqs.send(
        new GetQueueAttributesCommand({
          QueueUrl: url,
          AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
        }),
      );
      return (
        Number(a.Attributes!.ApproximateNumberOfMessages) + Number(a.Attributes!.ApproximateNumberOfMessagesNotVisible)
      );
    };
    expect(await depth(dlqUrl)).toBe(0);
    expect(await depth(queueUrl)).toBe(0);
  });

  it('sends a new barrier when the commit function took the first one (it polls the same group)', async () => {
    // Prepare: the older batch in the DLQ, a newer batch of key 1 committed; and a commit function
    // that receives the redrive's first barrier before the redrive does, and drops it.
    const { table, dlqUrl, queueUrl, sqs } = await olderDeadLetteredNewerCommitted();
    const commitFunction = new SQSClient({});
    let dropped = 0;
    const racing = Object.create(sqs) as SQSClient;
    racing.send = (async (command: Parameters<SQSClient['send']>[0]) => {
      const out = await sqs.send(command as SendMessageCommand);
      if (command instanceof SendMessageCommand && dropped === 0 && isRedriveBarrier(command.input.MessageBody ?? '')) {
        const r = await commitFunction.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, WaitTimeSeconds: 1 }));
        for (const m of r.Messages ?? []) {
          expect(isRedriveBarrier(m.Body ?? '')).toBe(true);
          await commitFunction.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle! }));
          dropped++;
        }
      }
      return out;
    }) as SQSClient['send'];

    // Act
    const r = await redriveCommits(racing, table, dlqUrl, queueUrl, { pollMs: 100, groupWaitMs: 20_000 });

    // Assess: the first barrier was taken, the redrive held the group with another and committed
    expect(dropped).toBe(1);
    expect(r.batches[0]).toMatchObject({ outcome: 'committed', committedRows: 1, skippedRows: 1 });
    const status = await statusOf(table);
    expect(status.get(1n)).toBe('paid');
    expect(status.get(2n)).toBe('new');
  });

  it('keeps the files of buckets with nothing skipped: the committed snapshot reads whole', async () => {
    // Prepare: an older batch over both buckets; a newer batch of key 1 only, so one bucket's file
    // is rewritten without key 1 and the other bucket's file is committed as written.
    const { table, dlqUrl, queueUrl, sqs } = await setup();
    const ids = Array.from({ length: 16 }, (_, i) => BigInt(i + 1));
    const older = await writeBatch(
      table,
      'ingest-m1',
      ids.map((id) => ({ id, status: 'new' })),
    );
    expect(new Set(older.batch.newFiles.map((f) => f.bucket)).size).toBe(2);
    await send(sqs, dlqUrl, older);
    await tick();
    await landRows(table, [{ id: 1n, status: 'paid' }], [0], { commitUser: 'ingest', commitIdentifier: 'ingest-m2' });
    // Act
    const r = await redriveCommits(sqs, table, dlqUrl, queueUrl, { pollMs: 100 });
    // Assess: every key reads, key 1 at its newer value (the kept file was not deleted as a replaced one).
    expect(r.batches[0]).toMatchObject({ outcome: 'committed', committedRows: ids.length - 1, skippedRows: 1 });
    const status = await statusOf(table);
    expect([...status.keys()].sort((a, b) => (a < b ? -1 : 1))).toEqual(ids);
    expect(status.get(1n)).toBe('paid');
    for (const id of ids.slice(1)) expect(status.get(id)).toBe('new');
  });

  it('lets the older value win with ignoreOrder (what the plain redrive did): the check above is what keeps the order', async () => {
    const { table, dlqUrl, queueUrl, sqs } = await setup();
    const older = await writeBatch(table, 'ingest-m1', [{ id: 1n, status: 'new' }]);
    await send(sqs, dlqUrl, older);
    await tick();
    await landRows(table, [{ id: 1n, status: 'paid' }], [0], { commitUser: 'ingest', commitIdentifier: 'ingest-m2' });
    const r = await redriveCommits(sqs, table, dlqUrl, queueUrl, { pollMs: 100, ignoreOrder: true });
    expect(r.batches[0]).toMatchObject({ outcome: 'committed', skippedRows: 0 });
    expect((await statusOf(table)).get(1n)).toBe('new');
  });

  it('redrives several dead letters oldest first, ordered among themselves by when they were written', async () => {
    const { table, dlqUrl, queueUrl, sqs } = await setup();
    const first = await writeBatch(table, 'ingest-a', [{ id: 7n, status: 'first' }]);
    await tick();
    const second = await writeBatch(table, 'ingest-b', [{ id: 7n, status: 'second' }]);
    await send(sqs, dlqUrl, first);
    await send(sqs, dlqUrl, second);
    const r = await redriveCommits(sqs, table, dlqUrl, queueUrl, { pollMs: 100 });
    expect(r.batches.map((b) => b.outcome)).toEqual(['committed', 'committed']);
    expect((await statusOf(table)).get(7n)).toBe('second');
  });

  it('holds the commit group while it commits and releases what it held, in order', async () => {
    const { table, dlqUrl, queueUrl, sqs } = await setup();
    const dead = await writeBatch(table, 'ingest-old', [{ id: 3n, status: 'old' }]);
    await send(sqs, dlqUrl, dead);
    // A batch sent after the dead one waits in the commit queue: newer, it must commit after.
    const waiting = await writeBatch(table, 'ingest-waiting', [{ id: 3n, status: 'later' }]);
    await send(sqs, queueUrl, waiting);
    const r = await redriveCommits(sqs, table, dlqUrl, queueUrl, { pollMs: 100 });
    expect(r.held).toBe(1);
    expect(r.batches[0]).toMatchObject({ outcome: 'committed', skippedRows: 0 });
    // The waiting batch is back at the head of the group for the commit function.
    const back = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
    );
    expect(back.Messages?.map((m) => JSON.parse(m.Body!).commitIdentifier)).toEqual(['ingest-waiting']);
  });

  it('leaves a batch in the DLQ, saying why, when the snapshots since it was written have expired', async () => {
    const { table, dlqUrl, queueUrl, sqs } = await setup();
    const dead = await writeBatch(table, 'ingest-old', [{ id: 4n, status: 'old' }]);
    await send(sqs, dlqUrl, dead);
    await tick();
    for (let i = 0; i < 3; i++)
      await landRows(table, [{ id: BigInt(10 + i), status: 'x' }], [0], {
        commitUser: 'ingest',
        commitIdentifier: `later-${i}`,
      });
    // Expire the first snapshot, written after the dead batch: what it held can no longer be seen.
    const fresh = table;
    await fresh.store.delete(fresh.snapshots.snapshotKey(1));
    const r = await redriveCommits(sqs, fresh, dlqUrl, queueUrl, { pollMs: 100 });
    expect(r.batches[0].outcome).toBe('left');
    expect(r.batches[0].reason).toMatch(/expired.*--ignore-order/);
    expect((await statusOf(fresh)).has(4n)).toBe(false);
  });
});
