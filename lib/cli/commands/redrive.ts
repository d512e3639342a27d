/**
 * `varve redrive <table> [--queue commit|compaction|split|ingest]`: moves the messages of a
 * deployed table's dead-letter queue back to their queue (lib/stream/redrive.ts), once what made
 * them fail is fixed. The queues are found by their varve tags, or given by URL.
 */
import { InvalidArgumentError } from '../../errors.js';
import { findVarveQueue, redrive, REDRIVE_QUEUES, type RedriveQueue } from '../../stream/redrive.js';
import { defaultSqsClient } from '../../stream/sqs-queue.js';
import type { CliContext } from '../context.js';

interface RedriveFlags {
  queue: string;
  consumer?: string;
  dlqUrl?: string;
  toUrl?: string;
}

/** Registers `redrive`. */
export function registerRedrive({ program, out }: CliContext): void {
  program
    .command('redrive')
    .description("move a deployed table's dead-letter queue messages back to their queue (AWS; the ingest DLQ's three shapes are normalised)")
    .argument('<table>', 'DB.TABLE')
    .option('--queue <queue>', `which queue: ${REDRIVE_QUEUES.join(', ')}`, 'commit')
    .option('--consumer <id>', 'the consumer whose split queue to redrive (when the table has several)')
    .option('--dlq-url <url>', 'the dead-letter queue, instead of finding it by its tags')
    .option('--to-url <url>', 'the queue to move the messages to, instead of finding it by its tags')
    .action(async (table: string, flags: RedriveFlags) => {
      if (!(REDRIVE_QUEUES as readonly string[]).includes(flags.queue)) {
        throw new InvalidArgumentError(`--queue is "${flags.queue}": use one of ${REDRIVE_QUEUES.join(', ')}`);
      }
      const queue = flags.queue as RedriveQueue;
      const client = defaultSqsClient();
      const find = (deadLetter: boolean) => findVarveQueue(client, table, queue, { consumer: flags.consumer, deadLetter });
      const dlq = flags.dlqUrl ?? (await find(true));
      const to = flags.toUrl ?? (await find(false));
      const r = await redrive(client, queue, dlq, to);
      const shapes = Object.entries(r.byShape).filter(([, n]) => n > 0).map(([s, n]) => `${n} ${s}`).join(', ');
      out(`${table}: moved ${r.moved} message(s) from ${dlq} to ${to}${shapes ? ` (${shapes})` : ''}\n`);
      for (const l of r.left) out(`  left in the dead-letter queue: ${l.messageId}: ${l.reason}\n`);
    });
}
