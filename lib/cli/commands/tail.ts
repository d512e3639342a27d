/** `varve tail`: a table's changes as JSON lines, as they come (lib/cli/tail.ts runs it). */
import { InvalidArgumentError } from '../../errors.js';
import type { StreamOptions } from '../../stream/stream-options.js';
import type { Table } from '../../table/table.js';
import type { CliContext } from '../context.js';
import {
  addSnapshotFlags,
  parseDurationFlag,
  parseFrom,
  parsePositiveInt,
  snapshotSpecOf,
  type SnapshotFlags,
} from '../parse-flags.js';

interface TailFlags extends SnapshotFlags {
  consumerId?: string;
  from?: string;
  ignoreProgress?: boolean;
  onExpired?: string;
  follow?: boolean;
  idleExit?: string;
  maxChanges?: string;
  where?: string;
  takeover?: boolean;
}

/** Registers `tail`. */
export function registerTail({ program, catalog, out, status }: CliContext): void {
  addSnapshotFlags(program.command('tail'), 'start with the changes of')
    .description('print the changes of a table as JSON lines {"snapshot", "kind", "row"}, as they come')
    .argument('<table>', 'DB.TABLE')
    .option(
      '--consumer-id <id>',
      'record progress under this consumer: a later tail resumes where this one stopped, and expiry keeps what it has not read',
    )
    .option(
      '--from <position>',
      "where a new stream starts: latest-full (default), latest, earliest, compacted-full (the latest compaction's state, then changes), snapshot:N, snapshot-full:N, timestamp:T",
    )
    .option('--ignore-progress', 'with --consumer-id: start from --from even when the consumer has progress')
    .option(
      '--on-expired <what>',
      'when the start or next snapshot, or the consumer id itself, has expired: fail (default) or skip-to-earliest (accept the gap)',
    )
    .option(
      '--takeover',
      'with --consumer-id: take the consumer over from the reader holding it (that reader is fenced off and stops)',
    )
    .option('--follow', 'keep waiting for new changes (default: stop once caught up)')
    .option('--idle-exit <duration>', 'with --follow: stop after this long without a new change, e.g. 8s, 500 ms')
    .option('--max-changes <n>', 'without --consumer-id: stop once this many changes are printed')
    .option('--where <predicate>', 'only changes whose row matches a predicate (without --consumer-id)')
    .action(async (name: string, o: TailFlags) => {
      if (o.consumerId === undefined && (o.takeover || o.ignoreProgress)) {
        throw new InvalidArgumentError(
          `--${o.takeover ? 'takeover' : 'ignore-progress'} goes with --consumer-id: a tail without one holds no consumer and has no progress`,
        );
      }
      const { checkConsumerId } = await import('../../snapshot/consumer.js');
      const { tailWithConsumer, tailWithoutConsumer } = await import('../tail.js');
      const table = await catalog().getTable(name);
      const stream = streamOptionsOf(o);
      await checkStartExists(table, stream);
      const idleExitMs = o.idleExit !== undefined ? parseDurationFlag('--idle-exit', o.idleExit) : undefined;
      const maxChanges = o.maxChanges !== undefined ? parsePositiveInt('--max-changes', o.maxChanges) : undefined;
      // Status lines go to stderr, so stdout stays pure JSON lines.
      if (o.consumerId !== undefined) {
        if (maxChanges !== undefined) {
          throw new InvalidArgumentError(
            '--max-changes works without --consumer-id only (a consumer records progress per snapshot, not per change); drop one of them',
          );
        }
        if (o.where !== undefined)
          throw new InvalidArgumentError(
            '--where works without --consumer-id only: a consumer records every change it is given as delivered',
          );
        checkConsumerId(o.consumerId);
        await tailWithConsumer(
          table,
          o.consumerId,
          stream,
          { follow: Boolean(o.follow), idleExitMs, takeover: Boolean(o.takeover), status },
          out,
        );
      } else {
        await tailWithoutConsumer(
          table,
          stream,
          { follow: Boolean(o.follow), idleExitMs, maxChanges, status, where: o.where },
          out,
        );
      }
    });
}

/**
 * A start snapshot beyond the next one to be committed is refused: it names a snapshot that does
 * not exist, and the tail would print nothing (or, following, skip every commit before it).
 */
async function checkStartExists(table: Table, stream: StreamOptions): Promise<void> {
  if (stream.snapshotId === undefined) return;
  const latest = (await table.snapshots.latestId()) ?? 0;
  if (stream.snapshotId <= latest + 1) return;
  throw new InvalidArgumentError(
    `${table.name} has no snapshot ${stream.snapshotId}: the latest is ${latest === 0 ? 'none yet' : latest}; start at most at ${latest + 1}, ` +
      'the next commit (--from latest waits for it)',
  );
}

/** The stream options of the flags: where it starts, whether progress is ignored, what an expired start does. */
function streamOptionsOf(o: TailFlags): StreamOptions {
  if (o.onExpired !== undefined && o.onExpired !== 'fail' && o.onExpired !== 'skip-to-earliest') {
    throw new InvalidArgumentError(`--on-expired must be fail or skip-to-earliest, got "${o.onExpired}"`);
  }
  return {
    ...streamStartOf(o),
    ...(o.ignoreProgress ? { ignoreProgress: true } : {}),
    ...(o.onExpired ? { onExpired: o.onExpired as 'fail' | 'skip-to-earliest' } : {}),
  };
}

/**
 * Where a new tail starts: `--from`, or the time-travel flags `read` takes (`--snapshot N` =
 * `--from snapshot:N`, `--timestamp T` = `--from timestamp:T`, `--tag` = the tag's snapshot).
 */
function streamStartOf(o: SnapshotFlags & { from?: string }): StreamOptions {
  const spec = snapshotSpecOf(o);
  const picked = spec.snapshotId !== undefined || spec.timestamp !== undefined || spec.tag !== undefined;
  if (picked && o.from !== undefined)
    throw new InvalidArgumentError(
      'give --from or one of --snapshot, --timestamp, --tag, not both: each picks where the stream starts',
    );
  if (o.from !== undefined) return parseFrom(o.from);
  if (spec.snapshotId !== undefined) return { mode: 'from-snapshot', snapshotId: spec.snapshotId };
  if (spec.timestamp !== undefined) return { mode: 'from-timestamp', timestampMillis: spec.timestamp };
  if (spec.tag !== undefined) return { mode: 'from-snapshot', tag: spec.tag };
  return {};
}
