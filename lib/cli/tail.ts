/**
 * The two ways `varve tail` reads a stream: without a consumer id, a StreamScan pulled snapshot by
 * snapshot in this process (nothing recorded); with one, the local runtime (discovery, the split
 * queue, a reader) recording progress in the consumer file.
 */
import type * as arrow from 'apache-arrow';
import { tableArrowSchema } from '../format/arrow-schema.js';
import { emptyTable } from '../format/columns.js';
import { LocalRuntime } from '../runtime/local-runtime.js';
import type { StreamSink } from '../stream/delivery.js';
import { schemaChangeJsonLine, schemaChangeText } from '../stream/schema-change.js';
import { changesOf, changeToJsonLine, jsonlSink } from '../stream/sinks.js';
import { readSplit } from '../stream/split.js';
import { StreamScan, type StreamPlan } from '../stream/stream-scan.js';
import type { StreamOptions } from '../stream/stream-options.js';
import { onCommit } from '../table/commit-events.js';
import { filterTable, parsePredicate, type Predicate } from '../table/predicate.js';
import type { Table } from '../table/table.js';
import type { Out } from './context.js';

/** How often a tail without commit events in this process looks for new snapshots. */
const TAIL_POLL_MS = 200;

export interface TailOptions {
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

/**
 * Wakes a waiting tail at once on a commit of this process, or of another process on a local
 * folder (the snapshot folder's change notification); else the poll is the backstop (the only way
 * on S3).
 */
class CommitSignal {
  private wake: (() => void) | undefined;
  // A change while planning (no one waiting yet) must not be lost: the next wait returns at once.
  private changed = false;
  private readonly unsubscribe: () => void;
  private readonly unwatch: () => void;

  constructor(table: Table) {
    const poke = (): void => {
      if (this.wake) this.wake();
      else this.changed = true;
    };
    this.unsubscribe = onCommit((e) => {
      if (e.table === table.name && e.warehouse === table.store.uri) poke();
    });
    this.unwatch = table.snapshots.watch(poke);
  }

  /** Resolves at the next commit seen, or after the poll interval. */
  async wait(): Promise<void> {
    if (this.changed) {
      this.changed = false;
      return;
    }
    await new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, TAIL_POLL_MS);
      this.wake = done;
    });
  }

  close(): void {
    this.unsubscribe();
    this.unwatch();
  }
}

/** A tail that keeps no state: a StreamScan pulled snapshot by snapshot, woken by commits. */
export async function tailWithoutConsumer(
  table: Table,
  stream: StreamOptions,
  opts: TailOptions,
  out: Out,
): Promise<void> {
  const scan = new StreamScan(table, stream);
  const tail = new StatelessTail(table, opts, out);
  const signal = new CommitSignal(table);
  let announced = false;
  try {
    for (;;) {
      const plan = await scan.plan();
      if (plan) {
        if (await tail.print(scan.table, plan)) return;
        continue;
      }
      if (!opts.follow) return;
      if (!announced) {
        // From here on every commit is printed: a script may start writing once it sees this line.
        opts.status?.(`following ${table.name} from snapshot ${scan.nextSnapshot}\n`);
        announced = true;
      }
      if (opts.idleExitMs !== undefined && Date.now() - tail.lastChange >= opts.idleExitMs) return;
      await signal.wait();
    }
  } finally {
    signal.close();
  }
}

/** Prints the planned snapshots of a stateless tail: its events, then its changes (filtered, capped). */
class StatelessTail {
  lastChange = Date.now();
  private printed = 0;
  private predicate: { schemaId: number; p: Predicate } | undefined;

  constructor(
    table: Table,
    private readonly opts: TailOptions,
    private readonly out: Out,
  ) {
    // A bad --where fails before anything is read.
    if (opts.where !== undefined) this.filter(table, emptyTable(tableArrowSchema(table.schema)));
  }

  /** Prints one planned snapshot; true once --max-changes is reached. */
  async print(current: Table, plan: StreamPlan): Promise<boolean> {
    this.printEvents(plan);
    for (const split of plan.splits) {
      const data = this.filter(current, await readSplit(current, split));
      const batch = {
        table: current,
        consumerId: '',
        snapshotId: split.snapshotId,
        partition: split.partition,
        bucket: split.bucket,
        kind: split.kind,
        data,
        splitId: '',
      };
      let lines = changesOf(batch).map((c) => changeToJsonLine(current, c));
      if (this.opts.maxChanges !== undefined) lines = lines.slice(0, this.opts.maxChanges - this.printed);
      if (lines.length > 0) {
        this.out(lines.join(''));
        this.printed += lines.length;
        this.lastChange = Date.now();
      }
      if (this.opts.maxChanges !== undefined && this.printed >= this.opts.maxChanges) return true;
    }
    return false;
  }

  /** The lines that say what happened to the stream itself: a schema change, expired or skipped snapshots. */
  private printEvents(plan: StreamPlan): void {
    const { out, opts } = this;
    if (plan.schemaChange) {
      // Rows after this line carry the new columns: say so before the first of them.
      out(schemaChangeJsonLine(plan.schemaChange));
      opts.status?.(schemaChangeText(plan.schemaChange));
      this.lastChange = Date.now();
    }
    if (plan.skipped) {
      const { from, to } = plan.skipped;
      out(
        `${JSON.stringify({ snapshot: plan.snapshot.id, event: 'snapshots-skipped', from, to: to - 1, warning: `snapshots ${from}..${to - 1} expired before this stream read them (--on-expired skip-to-earliest): their changes are lost to it` })}\n`,
      );
      opts.status?.(
        `varve: snapshots ${from}..${to - 1} expired before this stream read them: their changes are lost to it (--on-expired skip-to-earliest)\n`,
      );
      this.lastChange = Date.now();
    }
    if (plan.overwriteSkipped) {
      out(
        `${JSON.stringify({ snapshot: plan.snapshot.id, event: 'overwrite-skipped', warning: 'an OVERWRITE snapshot (write --overwrite, truncate, drop-partition, rollback) replaced rows; its changes are not streamed: read the table again for its new state' })}\n`,
      );
      this.lastChange = Date.now();
    }
  }

  /** The rows matching --where, the predicate parsed against `t`'s schema (again after a schema change). */
  private filter(t: Table, data: arrow.Table): arrow.Table {
    const where = this.opts.where;
    if (where === undefined) return data;
    if (this.predicate?.schemaId !== t.schema.id)
      this.predicate = { schemaId: t.schema.id, p: parsePredicate(where, t.schema.fields) };
    return filterTable(data, this.predicate.p, t.schema.fields);
  }
}

/** A tail through the local runtime: discovery, the split queue and a reader, progress in the consumer file. */
export async function tailWithConsumer(
  table: Table,
  consumerId: string,
  stream: StreamOptions,
  opts: TailOptions,
  out: Out,
): Promise<void> {
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
