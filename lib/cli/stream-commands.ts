/**
 * The streaming commands of the CLI: `varve tail` prints a table's changes as JSON lines, one per
 * change, as they come; `varve demo` walks through the whole system on a local warehouse.
 */
import type { Command } from 'commander';
import { InvalidArgumentError } from '../errors.js';
import type * as arrow from 'apache-arrow';
import { emptyTable } from '../format/columns.js';
import { tableArrowSchema } from '../format/arrow-schema.js';
import { filterTable, parsePredicate, type Predicate } from '../table/predicate.js';
import { LocalRuntime } from '../runtime/local-runtime.js';
import { checkConsumerId } from '../snapshot/consumer.js';
import { changeToJsonLine, changesOf, jsonlSink } from '../stream/sinks.js';
import { schemaChangeJsonLine, schemaChangeText } from '../stream/schema-change.js';
import { readSplit } from '../stream/split.js';
import { StreamScan } from '../stream/stream-scan.js';
import type { StreamOptions } from '../stream/stream-options.js';
import type { StreamSink } from '../stream/delivery.js';
import { onCommit } from '../table/commit-events.js';
import type { Table } from '../table/table.js';
import { openCatalog, warehouseUri } from './context.js';
import { runDemo } from './demo.js';
import { addSnapshotFlags, parseDurationFlag, parsePositiveInt, parseTimestamp, snapshotSpecOf, type GlobalOptions, type SnapshotFlags } from './parse-flags.js';

type Out = (text: string) => void;

/** How often a tail without commit events in this process looks for new snapshots. */
const TAIL_POLL_MS = 200;

/** `--from` of `varve tail`: latest-full | latest | earliest | full | snapshot:N | snapshot-full:N | timestamp:T. */
export function parseFrom(text: string): StreamOptions {
  if (text === 'latest-full' || text === 'latest' || text === 'earliest' || text === 'full') return { mode: text };
  const m = /^(snapshot|snapshot-full|timestamp):(.+)$/.exec(text);
  if (m && m[1] === 'timestamp') return { mode: 'from-timestamp', timestampMillis: parseTimestamp(m[2]) };
  if (m) {
    const id = Number(m[2]);
    if (!Number.isInteger(id) || id < 1) throw new InvalidArgumentError(`--from ${text}: the snapshot id must be an integer ≥ 1`);
    return { mode: m[1] === 'snapshot' ? 'from-snapshot' : 'from-snapshot-full', snapshotId: id };
  }
  throw new InvalidArgumentError(
    `--from "${text}" is not a start position; use latest-full, latest, earliest, snapshot:N, snapshot-full:N or timestamp:T (ISO-8601 or epoch ms)`,
  );
}

/**
 * Where a new tail starts: `--from`, or the time-travel flags `read` takes (`--snapshot N` =
 * `--from snapshot:N`, `--timestamp T` = `--from timestamp:T`, `--tag` = the tag's snapshot).
 */
function streamStartOf(o: SnapshotFlags & { from?: string }): StreamOptions {
  const spec = snapshotSpecOf(o);
  const picked = spec.snapshotId !== undefined || spec.timestamp !== undefined || spec.tag !== undefined;
  if (picked && o.from !== undefined) throw new InvalidArgumentError('give --from or one of --snapshot, --timestamp, --tag, not both: each picks where the stream starts');
  if (o.from !== undefined) return parseFrom(o.from);
  if (spec.snapshotId !== undefined) return { mode: 'from-snapshot', snapshotId: spec.snapshotId };
  if (spec.timestamp !== undefined) return { mode: 'from-timestamp', timestampMillis: spec.timestamp };
  if (spec.tag !== undefined) return { mode: 'from-snapshot', tag: spec.tag };
  return {};
}

/** Registers `tail` and `demo` on `program`; `globals()` gives the global flags, `out` prints. */
export function registerStreamCommands(program: Command, globals: () => GlobalOptions, out: Out): void {
  addSnapshotFlags(program.command('tail'), 'start with the changes of')
    .description('print the changes of a table as JSON lines {"snapshot", "kind", "row"}, as they come')
    .argument('<table>', 'DB.TABLE')
    .option('--consumer-id <id>', 'record progress under this consumer: a later tail resumes where this one stopped, and expiry keeps what it has not read')
    .option('--from <position>', 'where a new stream starts: latest-full (default), latest, earliest, snapshot:N, snapshot-full:N, timestamp:T')
    .option('--ignore-progress', 'with --consumer-id: start from --from even when the consumer has progress')
    .option('--on-expired <what>', 'when the start or next snapshot, or the consumer id itself, has expired: fail (default) or skip-to-earliest (accept the gap)')
    .option('--takeover', 'with --consumer-id: take the consumer over from the reader holding it (that reader is fenced off and stops)')
    .option('--follow', 'keep waiting for new changes (default: stop once caught up)')
    .option('--idle-exit <duration>', 'with --follow: stop after this long without a new change, e.g. 8s, 500 ms')
    .option('--max-changes <n>', 'without --consumer-id: stop once this many changes are printed')
    .option('--where <predicate>', 'only changes whose row matches a predicate (without --consumer-id)')
    .action(async (name: string, o: SnapshotFlags & { consumerId?: string; from?: string; ignoreProgress?: boolean; onExpired?: string; follow?: boolean; idleExit?: string; maxChanges?: string; where?: string; takeover?: boolean }) => {
      const table = await openCatalog(warehouseUri(globals().warehouse)).getTable(name);
      if (o.onExpired !== undefined && o.onExpired !== 'fail' && o.onExpired !== 'skip-to-earliest') {
        throw new InvalidArgumentError(`--on-expired must be fail or skip-to-earliest, got "${o.onExpired}"`);
      }
      const stream: StreamOptions = {
        ...streamStartOf(o),
        ...(o.ignoreProgress ? { ignoreProgress: true } : {}),
        ...(o.onExpired ? { onExpired: o.onExpired as 'fail' | 'skip-to-earliest' } : {}),
      };
      const idleExitMs = o.idleExit !== undefined ? parseDurationFlag('--idle-exit', o.idleExit) : undefined;
      const maxChanges = o.maxChanges !== undefined ? parsePositiveInt('--max-changes', o.maxChanges) : undefined;
      // Status lines go to stderr, so stdout stays pure JSON lines.
      const status: Out = (text) => program.configureOutput().writeErr?.(text);
      if (o.consumerId !== undefined) {
        if (maxChanges !== undefined) {
          throw new InvalidArgumentError('--max-changes works without --consumer-id only (a consumer records progress per snapshot, not per change); drop one of them');
        }
        if (o.where !== undefined) throw new InvalidArgumentError('--where works without --consumer-id only: a consumer records every change it is given as delivered');
        checkConsumerId(o.consumerId);
        await tailWithConsumer(table, o.consumerId, stream, { follow: Boolean(o.follow), idleExitMs, takeover: Boolean(o.takeover), status }, out);
      } else {
        await tailWithoutConsumer(table, stream, { follow: Boolean(o.follow), idleExitMs, maxChanges, status, where: o.where }, out);
      }
    });

  program
    .command('demo')
    .description('the whole system in one minute: a streaming table, a consumer, updates, compaction, deletes, restart, expiry')
    .option('--table <name>', 'demo table (dropped first when it exists)', 'demo.orders')
    .action(async (o: { table: string }) => {
      await runDemo(openCatalog(warehouseUri(globals().warehouse)), o.table, out);
    });
}

interface TailOptions {
  follow: boolean;
  idleExitMs?: number;
  maxChanges?: number;
  /** Told once, with --follow, when the tail has caught up and waits for new commits. */
  status?: Out;
  /** Predicate text, parsed against the stream's schema (again after each schema change). */
  where?: string;
  /** With a consumer id: take its lease from a live holder. */
  takeover?: boolean;
}

/** A tail that keeps no state: a StreamScan pulled snapshot by snapshot, woken by commits. */
async function tailWithoutConsumer(table: Table, stream: StreamOptions, opts: TailOptions, out: Out): Promise<void> {
  const scan = new StreamScan(table, stream);
  let lastChange = Date.now();
  let printed = 0;
  let announced = false;
  let predicate: { schemaId: number; p: Predicate } | undefined;
  const filter = (t: Table, data: arrow.Table): arrow.Table => {
    if (opts.where === undefined) return data;
    if (predicate?.schemaId !== t.schema.id) predicate = { schemaId: t.schema.id, p: parsePredicate(opts.where, t.schema.fields) };
    return filterTable(data, predicate.p, t.schema.fields);
  };
  if (opts.where !== undefined) filter(table, emptyTable(tableArrowSchema(table.schema)));
  let wake: (() => void) | undefined;
  // A change while planning (no one waiting yet) must not be lost: the next wait is skipped.
  let changed = false;
  const poke = (): void => {
    if (wake) wake();
    else changed = true;
  };
  const unsubscribe = onCommit((e) => {
    if (e.table === table.name && e.warehouse === table.store.uri) poke();
  });
  // Other processes' commits on a local folder: the snapshot folder's change notification, with
  // the poll below as the backstop (and the only way on S3).
  const unwatch = table.snapshots.watch(poke);
  try {
    for (;;) {
      const plan = await scan.plan();
      if (plan) {
        const current = scan.table;
        if (plan.schemaChange) {
          // Rows after this line carry the new columns: say so before the first of them.
          out(schemaChangeJsonLine(plan.schemaChange));
          opts.status?.(schemaChangeText(plan.schemaChange));
          lastChange = Date.now();
        }
        if (plan.skipped) {
          const { from, to } = plan.skipped;
          out(`${JSON.stringify({ snapshot: plan.snapshot.id, event: 'snapshots-skipped', from, to: to - 1, warning: `snapshots ${from}..${to - 1} expired before this stream read them (--on-expired skip-to-earliest): their changes are lost to it` })}\n`);
          opts.status?.(`varve: snapshots ${from}..${to - 1} expired before this stream read them: their changes are lost to it (--on-expired skip-to-earliest)\n`);
          lastChange = Date.now();
        }
        if (plan.overwriteSkipped) {
          out(`${JSON.stringify({ snapshot: plan.snapshot.id, event: 'overwrite-skipped', warning: 'an OVERWRITE snapshot (write --overwrite, truncate, drop-partition) replaced rows; its changes are not streamed: read the table again for its new state' })}\n`);
          lastChange = Date.now();
        }
        for (const split of plan.splits) {
          const data = filter(current, await readSplit(current, split));
          const batch = { table: current, consumerId: '', snapshotId: split.snapshotId, partition: split.partition, bucket: split.bucket, kind: split.kind, data, splitId: '' };
          let lines = changesOf(batch).map((c) => changeToJsonLine(current, c));
          if (opts.maxChanges !== undefined) lines = lines.slice(0, opts.maxChanges - printed);
          if (lines.length > 0) {
            out(lines.join(''));
            printed += lines.length;
            lastChange = Date.now();
          }
          if (opts.maxChanges !== undefined && printed >= opts.maxChanges) return;
        }
        continue;
      }
      if (!opts.follow) return;
      if (!announced) {
        // From here on every commit is printed: a script may start writing once it sees this line.
        opts.status?.(`following ${table.name} from snapshot ${scan.nextSnapshot}\n`);
        announced = true;
      }
      if (opts.idleExitMs !== undefined && Date.now() - lastChange >= opts.idleExitMs) return;
      if (changed) {
        changed = false;
        continue;
      }
      // Commits of this process, and of others on a local folder, wake the tail at once; the
      // rest are seen by polling.
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, TAIL_POLL_MS);
        function done(): void {
          clearTimeout(timer);
          wake = undefined;
          resolve();
        }
        wake = done;
      });
    }
  } finally {
    unsubscribe();
    unwatch();
  }
}

/** A tail through the local runtime: discovery, the split queue and a reader, progress in the consumer file. */
async function tailWithConsumer(table: Table, consumerId: string, stream: StreamOptions, opts: TailOptions, out: Out): Promise<void> {
  let lastChange = Date.now();
  const runtime = new LocalRuntime({ discoveryIntervalMs: TAIL_POLL_MS, compactionIntervalMs: 0, expiryIntervalMs: 0 });
  const lines = jsonlSink((text) => {
    out(text);
    lastChange = Date.now();
  });
  const write: StreamSink = {
    async write(batch) {
      if (batch.schemaChange) {
        out(schemaChangeJsonLine(batch.schemaChange));
        opts.status?.(schemaChangeText(batch.schemaChange));
      }
      await lines.write(batch);
    },
  };
  // One reader: lines come roughly in commit order (each bucket's lines always in order).
  // The consumer id's lease is taken first: a second tail of the same id fails here, naming the holder.
  await runtime.addConsumer({ table, consumerId, sink: write, stream, readers: 1, takeover: opts.takeover });
  await runtime.start();
  try {
    if (!opts.follow) {
      await runtime.idle(24 * 3600_000);
      return;
    }
    for (;;) {
      await new Promise((r) => setTimeout(r, Math.min(TAIL_POLL_MS, opts.idleExitMs ?? TAIL_POLL_MS)));
      // A consumer that stopped for good (its id expired, its table was dropped) ends the tail, loudly.
      const failure = runtime.failure();
      if (failure) throw failure;
      if (opts.idleExitMs === undefined || Date.now() - lastChange < opts.idleExitMs) continue;
      // Quiet for long enough: exit once nothing committed is still on its way.
      await runtime.idle(24 * 3600_000);
      if (Date.now() - lastChange >= opts.idleExitMs) return;
    }
  } finally {
    await runtime.stop();
  }
}
