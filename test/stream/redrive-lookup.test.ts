/**
 * `varve redrive` finds a table's queues by their varve tags (lib/stream/redrive.ts): warehouse,
 * table, queue kind, consumer. Two warehouses may hold a table of the same name in one account and
 * region; the warehouse tag tells their queues apart, and a lookup that still finds several says
 * which and how to choose.
 */
import { ListQueuesCommand, ListQueueTagsCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../lib/errors.js';
import { findVarveQueue } from '../../lib/stream/redrive.js';

/** An SQS client that answers ListQueues and ListQueueTags from `queues` (URL → tags). */
function sqsWith(queues: Record<string, Record<string, string>>): SQSClient {
  const send = async (command: unknown) => {
    if (command instanceof ListQueuesCommand) return { QueueUrls: Object.keys(queues) };
    if (command instanceof ListQueueTagsCommand) return { Tags: queues[command.input.QueueUrl!] };
    throw new Error(`unexpected SQS call ${(command as object).constructor.name}`);
  };
  return { send } as unknown as SQSClient;
}

const tags = (warehouse: string | undefined, queue: string, deadLetter: boolean, consumer?: string) => ({
  ...(warehouse ? { 'varve:warehouse': warehouse } : {}),
  'varve:table': 'shop.orders',
  'varve:queue': queue,
  ...(consumer ? { 'varve:consumer': consumer } : {}),
  ...(deadLetter ? { 'varve:dead-letter': 'true' } : {}),
});

/** The commit queue and DLQ of shop.orders in two warehouses, and another table's queue. */
const TWO_WAREHOUSES = {
  'https://sqs/1/a-commit.fifo': tags('s3://a/warehouse', 'commit', false),
  'https://sqs/1/a-commit-dlq.fifo': tags('s3://a/warehouse', 'commit', true),
  'https://sqs/1/b-commit.fifo': tags('s3://b/lake', 'commit', false),
  'https://sqs/1/b-commit-dlq.fifo': tags('s3://b/lake', 'commit', true),
  'https://sqs/1/other.fifo': { ...tags('s3://a/warehouse', 'commit', false), 'varve:table': 'shop.other' },
};

describe('findVarveQueue', () => {
  it("finds the queue and DLQ of the table in the given warehouse, not the same table's in another", async () => {
    const sqs = sqsWith(TWO_WAREHOUSES);
    const lookup = (warehouse: string, deadLetter: boolean) =>
      findVarveQueue(sqs, 'shop.orders', 'commit', { warehouse, deadLetter });
    expect(await lookup('s3://a/warehouse', false)).toBe('https://sqs/1/a-commit.fifo');
    expect(await lookup('s3://a/warehouse', true)).toBe('https://sqs/1/a-commit-dlq.fifo');
    // A trailing slash on the flag names the same warehouse.
    expect(await lookup('s3://b/lake/', true)).toBe('https://sqs/1/b-commit-dlq.fifo');
    await expect(lookup('s3://c/warehouse', true)).rejects.toThrow(
      /no SQS queue is tagged as the commit dead-letter queue of shop.orders in warehouse s3:\/\/c\/warehouse/,
    );
  });

  it('without a warehouse, refuses to choose between two: lists each with its warehouse and says how to choose', async () => {
    const e = await findVarveQueue(sqsWith(TWO_WAREHOUSES), 'shop.orders', 'commit', { deadLetter: true }).catch(
      (x: unknown) => x,
    );
    expect(e).toBeInstanceOf(InvalidArgumentError);
    const message = (e as Error).message;
    expect(message).toMatch(/^2 SQS queues are tagged as the commit dead-letter queue of shop.orders: /);
    expect(message).toContain('https://sqs/1/a-commit-dlq.fifo (warehouse s3://a/warehouse)');
    expect(message).toContain('https://sqs/1/b-commit-dlq.fifo (warehouse s3://b/lake)');
    expect(message).toMatch(/--warehouse s3:\/\/bucket\/prefix.*--consumer.*--dlq-url <url>/);
  });

  it('takes a queue deployed before the warehouse tag, and lists it as untagged when another matches too', async () => {
    const sqs = sqsWith({
      'https://sqs/1/old-split-dlq.fifo': tags(undefined, 'split', true, 'audit'),
      'https://sqs/1/b-split-dlq.fifo': tags('s3://b/lake', 'split', true, 'audit'),
      'https://sqs/1/b-split-dlq-2.fifo': tags('s3://b/lake', 'split', true, 'billing'),
    });
    const lookup = (warehouse: string, consumer?: string) =>
      findVarveQueue(sqs, 'shop.orders', 'split', { warehouse, consumer, deadLetter: true });
    expect(await lookup('s3://a/warehouse', 'audit')).toBe('https://sqs/1/old-split-dlq.fifo');
    expect(await lookup('s3://b/lake', 'billing')).toBe('https://sqs/1/b-split-dlq-2.fifo');
    await expect(lookup('s3://b/lake', 'audit')).rejects.toThrow(
      /2 SQS queues .*old-split-dlq.fifo \(warehouse no varve:warehouse tag, consumer audit\); .*b-split-dlq.fifo \(warehouse s3:\/\/b\/lake, consumer audit\)/,
    );
  });
});
