/**
 * `varve redrive <table> [--queue commit|compaction|split|ingest]`: moves the messages of a
 * deployed table's dead-letter queue back to their queue (lib/stream/redrive.ts), once what made
 * them fail is fixed. The commit DLQ is redriven by committing its batches in order, each without
 * the rows whose key a newer batch already committed (lib/stream/redrive-order.ts), and the
 * command prints what it committed and skipped. The queues are found by their varve tags, or
 * given by URL.
 */
import { InvalidArgumentError } from '../../errors.js';
import { REDRIVE_QUEUES, type RedriveQueue } from '../../stream/redrive-queues.js';
import type { CommitRedriveResult } from '../../stream/redrive-order.js';
import { warehouseUri, type CliContext } from '../context.js';

interface RedriveFlags {
  queue: string;
  consumer?: string;
  dlqUrl?: string;
  toUrl?: string;
  ignoreOrder?: boolean;
}

/** Registers `redrive`. */
export function registerRedrive({ program, out, catalog }: CliContext): void {
  program
    .command('redrive')
    .description(
      "move a deployed table's dead-letter queue messages back to their queue (AWS; the ingest DLQ's three shapes are normalised)",
    )
    .argument('<table>', 'DB.TABLE')
    .option('--queue <queue>', `which queue: ${REDRIVE_QUEUES.join(', ')}`, 'commit')
    .option('--consumer <id>', 'the consumer whose split queue to redrive (when the table has several)')
    .option('--dlq-url <url>', 'the dead-letter queue, instead of finding it by its tags')
    .option('--to-url <url>', 'the queue to move the messages to, instead of finding it by its tags')
    .option(
      '--ignore-order',
      'commit: commit every dead-lettered batch as written, even over newer versions of its keys',
    )
    .action(async (table: string, flags: RedriveFlags) => {
      if (!(REDRIVE_QUEUES as readonly string[]).includes(flags.queue)) {
        throw new InvalidArgumentError(`--queue is "${flags.queue}": use one of ${REDRIVE_QUEUES.join(', ')}`);
      }
      const queue = flags.queue as RedriveQueue;
      if (queue === 'commit') {
        const uri = catalog().store.uri;
        if (!uri.startsWith('s3://')) {
          throw new InvalidArgumentError(
            `${table} is in the local warehouse ${uri}, where writes commit directly: there is no commit queue to redrive. ` +
              'redrive is for a table deployed on AWS (docs/AWS.md): give its warehouse with --warehouse s3://bucket/prefix (or VARVE_WAREHOUSE), and AWS_REGION and credentials',
          );
        }
      }
      try {
        await redriveQueue(program, out, catalog, table, queue, flags);
      } catch (e) {
        const { awsSetupProblem } = await import('../../store/s3-errors.js');
        const problem = awsSetupProblem(e, 'SQS');
        if (problem === undefined) throw e;
        throw new InvalidArgumentError(`redrive works on the table's SQS queues on AWS: ${problem}`, { cause: e });
      }
    });
}

/** Finds the queues (by their tags, unless given) and redrives `queue`'s dead-letter queue, printing what it did. */
async function redriveQueue(
  program: CliContext['program'],
  out: (text: string) => void,
  catalog: CliContext['catalog'],
  table: string,
  queue: RedriveQueue,
  flags: RedriveFlags,
): Promise<void> {
  const { findVarveQueue, redrive } = await import('../../stream/redrive.js');
  const { redriveCommits } = await import('../../stream/redrive-order.js');
  const { defaultSqsClient } = await import('../../stream/sqs-queue.js');
  const client = defaultSqsClient();
  // Queues are tagged with their warehouse: two warehouses may hold a table of this name.
  const uri = warehouseUri(program.opts<{ warehouse?: string }>().warehouse);
  const warehouse = uri.startsWith('s3://') ? uri : undefined;
  const find = (deadLetter: boolean) =>
    findVarveQueue(client, table, queue, { warehouse, consumer: flags.consumer, deadLetter });
  const dlq = flags.dlqUrl ?? (await find(true));
  const to = flags.toUrl ?? (await find(false));
  if (queue === 'commit') {
    const r = await redriveCommits(client, await catalog().getTable(table), dlq, to, {
      ignoreOrder: flags.ignoreOrder,
    });
    printCommitRedrive(out, table, r);
    return;
  }
  const r = await redrive(client, queue, dlq, to);
  const shapes = Object.entries(r.byShape)
    .filter(([, n]) => n > 0)
    .map(([s, n]) => `${n} ${s}`)
    .join(', ');
  out(`${table}: moved ${r.moved} message(s) from ${dlq} to ${to}${shapes ? ` (${shapes})` : ''}\n`);
  for (const l of r.left) out(`  left in the dead-letter queue: ${l.messageId}: ${l.reason}\n`);
}

/** One line per dead-lettered batch: what was committed, what was skipped and why, what was left. */
function printCommitRedrive(out: (text: string) => void, table: string, r: CommitRedriveResult): void {
  const committed = r.batches.reduce((n, b) => n + b.committedRows, 0);
  const skipped = r.batches.reduce((n, b) => n + b.skippedRows, 0);
  const left = r.batches.filter((b) => b.outcome === 'left').length;
  out(
    `${table}: redrove ${r.batches.length} batch(es) from ${r.from}: committed ${committed} row(s), skipped ${skipped} row(s) whose key has a newer committed version, left ${left} batch(es) in the dead-letter queue (held ${r.held} newer message(s) of ${r.to} meanwhile)\n`,
  );
  for (const b of r.batches) {
    const what =
      b.outcome === 'left' || b.outcome === 'not-a-batch'
        ? `${b.outcome}: ${b.reason}`
        : `${b.outcome}${b.snapshotId !== undefined ? ` (snapshot ${b.snapshotId})` : ''}: ${b.committedRows} row(s) committed, ${b.skippedRows} skipped${b.skippedKeys.length ? ` (keys ${b.skippedKeys.join(' ')})` : ''}`;
    out(
      `  ${b.messageId} ${b.commitIdentifier} written ${b.writtenAt ? new Date(b.writtenAt).toISOString() : '?'}: ${what}\n`,
    );
  }
}
