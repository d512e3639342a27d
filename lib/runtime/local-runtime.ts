/**
 * The local runtime: in one process, what the Lambdas do on AWS. Per consumer, discovery runs
 * right after every commit of its table (an in-process commit event: a change reaches the
 * consumer in milliseconds) and on a timer as a backstop; split readers consume an in-process
 * FIFO queue with SQS FIFO semantics. Per table, compaction runs on a timer (writers compact
 * inline too, unless the table is `write-only`: then this is the compaction function), and
 * snapshot expiry runs on a timer.
 */
import { VarveError } from '../errors.js';
import { onCommit, type CommitEvent } from '../table/commit-events.js';
import type { Table } from '../table/table.js';
import { compactTable, type CompactionSummary } from '../maintenance/compact.js';
import {
  expireSnapshots,
  type ExpireSnapshotsOptions,
  type ExpireSnapshotsResult,
} from '../maintenance/expire-snapshots.js';
import type { ConsumerLag } from '../stream/progress.js';
import { consumerLag } from '../stream/progress.js';
import type { StreamSink } from '../stream/delivery.js';
import type { StreamOptions } from '../stream/stream-options.js';
import { MemoryQueue } from '../stream/memory-queue.js';
import { SPLIT_FAILURE_BUDGET } from '../stream/split-failures.js';
import type { Backoff } from '../stream/split-policy.js';
import type { SplitQueue } from '../stream/split-queue.js';
import { RuntimeConsumer } from './runtime-consumer.js';

/** Options of a LocalRuntime. */
export interface LocalRuntimeOptions {
  /**
   * Backstop discovery interval per consumer; commits made in this process trigger discovery at
   * once. 0 disables. @default the table's `continuous.discovery-interval` (10 s)
   */
  discoveryIntervalMs?: number;
  /** Compaction of every table on a timer; 0 disables. @default 10_000 */
  compactionIntervalMs?: number;
  /** Snapshot expiry of every table on a timer (retention from the table options); 0 disables. @default 60_000 */
  expiryIntervalMs?: number;
  /** Where problems are reported. @default console.error */
  log?: (line: string) => void;
}

/** A consumer to run. */
export interface ConsumerSpec {
  table: Table;
  consumerId: string;
  sink: StreamSink;
  /** Where a new consumer starts (and `ignoreProgress` to start an existing one again). */
  stream?: StreamOptions;
  /** Concurrent split readers (buckets are read in parallel, each bucket by one reader at a time). @default 2 */
  readers?: number;
  /**
   * @default an in-process MemoryQueue: visibility 30 s; its maxReceiveCount, 10 × SPLIT_FAILURE_BUDGET,
   * is only a backstop (the reader dead-letters a split at its own failure budget, split-policy.ts)
   */
  queue?: SplitQueue;
  /** The queue outlives this process (SQS). @default false: planning restarts at the consumer's position */
  durableQueue?: boolean;
  /** Own failures a split may have before its reader dead-letters it. @default SPLIT_FAILURE_BUDGET */
  failureBudget?: number;
  /**
   * When a failed split comes back: after `baseMs`, doubling per own failure, at most `maxMs`.
   * @default SPLIT_BACKOFF, as on Lambda: 2, 4, 8, 16 s, so the budget spans a sink outage of about 30 s
   */
  backoff?: Backoff;
  /** Snapshots planned per discovery run. @default 64 */
  maxSnapshotsPerRun?: number;
  /** Hold the consumer id with a lease, so that a second reader group fails at once. @default true */
  lease?: boolean;
  /** Take the consumer id's lease from a live holder, fencing it off. */
  takeover?: boolean;
  /** Lease duration, renewed every third of it; also the limit of one sink call. @default the queue's visibility */
  leaseMs?: number;
}

interface ManagedTable {
  table: Table;
  compacting?: Promise<void>;
  compactAgain: boolean;
}

/** Runs consumers, compaction and expiry in this process (see the file comment). */
export class LocalRuntime {
  private readonly consumers: RuntimeConsumer[] = [];
  private readonly tables = new Map<string, ManagedTable>();
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly log: (line: string) => void;
  private unsubscribe?: () => void;
  private running = false;

  constructor(private readonly opts: LocalRuntimeOptions = {}) {
    this.log = opts.log ?? ((line) => console.error(line));
  }

  /** Starts listening to commits and the timers. */
  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    this.unsubscribe = onCommit((e) => this.onCommitEvent(e));
    const every = (ms: number | undefined, fallback: number, fn: () => void) => {
      const interval = ms ?? fallback;
      if (interval > 0) this.timers.push(setInterval(fn, interval).unref());
    };
    every(this.opts.compactionIntervalMs, 10_000, () => this.tables.forEach((t) => this.scheduleCompaction(t)));
    every(this.opts.expiryIntervalMs, 60_000, () => this.tables.forEach((t) => void this.expireTable(t.table)));
    for (const c of this.consumers) await c.start();
  }

  /** Stops every consumer and timer; waits for the work in progress. */
  async stop(): Promise<void> {
    this.running = false;
    this.unsubscribe?.();
    this.timers.splice(0).forEach(clearInterval);
    await Promise.all(this.consumers.map((c) => c.stop()));
    await Promise.all([...this.tables.values()].map((t) => t.compacting));
  }

  /** Adds a table whose compaction and expiry this runtime runs. */
  addTable(table: Table): void {
    const id = tableId(table.store.uri, table.name);
    if (!this.tables.has(id)) this.tables.set(id, { table, compactAgain: false });
  }

  /** Adds and (when running) starts a consumer; its table is added too. */
  async addConsumer(spec: ConsumerSpec): Promise<RuntimeConsumer> {
    this.addTable(spec.table);
    // As deployed (infra): the queue's own dead-lettering far above the reader's budget.
    const queue = spec.queue ?? new MemoryQueue({ visibilityMs: 30_000, maxReceiveCount: 10 * SPLIT_FAILURE_BUDGET });
    const consumer = new RuntimeConsumer({
      ...spec,
      queue,
      discoveryIntervalMs: this.opts.discoveryIntervalMs,
      log: this.log,
    });
    await consumer.init();
    this.consumers.push(consumer);
    if (this.running) await consumer.start();
    return consumer;
  }

  /** Removes a consumer (its position stays in the table). */
  async removeConsumer(consumer: RuntimeConsumer): Promise<void> {
    const i = this.consumers.indexOf(consumer);
    if (i >= 0) this.consumers.splice(i, 1);
    await consumer.stop();
  }

  /** Compacts a table now (what the compaction function does on AWS), then lets its consumers discover. */
  async compact(table: Table, opts: { full?: boolean } = {}): Promise<CompactionSummary> {
    const summary = await compactTable(table, { full: opts.full });
    // COMPACT commits carry the changelog of lookup / full-compaction tables: plan it at once.
    if (summary.snapshots.length > 0)
      this.consumersOf(table.store.uri, table.name).forEach((c) => c.scheduleDiscovery());
    return summary;
  }

  /** Expires snapshots of a table now (what the expiry function does on AWS); consumers hold back what they still need. */
  async expireTable(table: Table, opts: ExpireSnapshotsOptions = {}): Promise<ExpireSnapshotsResult | undefined> {
    try {
      return await expireSnapshots(table, opts);
    } catch (e) {
      this.log(`varve: expiring snapshots of ${table.name} failed: ${(e as Error).message}`);
      return undefined;
    }
  }

  /** Each consumer's lag. */
  async lag(): Promise<ConsumerLag[]> {
    const out: ConsumerLag[] = [];
    for (const c of this.consumers) {
      const l = await consumerLag(c.table, c.consumerId);
      if (l) out.push(l);
    }
    return out;
  }

  /** The first consumer that stopped for good (expired id, dropped table), with why; undefined while all run. */
  failure(): VarveError | undefined {
    return this.consumers.find((c) => c.failure)?.failure;
  }

  /**
   * Resolves once every consumer has delivered everything committed so far; rejects after
   * `timeoutMs`, or with a consumer's discovery error that retrying cannot heal.
   */
  async idle(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      // A failure no retry can heal (an expired position) would keep a consumer busy forever.
      const stuck = this.consumers.find((c) => c.lastError instanceof VarveError && !c.lastError.retryable);
      if (stuck) throw stuck.lastError;
      const states = await Promise.all(this.consumers.map((c) => c.isIdle()));
      const compacting = [...this.tables.values()].some((t) => t.compacting !== undefined);
      if (states.every(Boolean) && !compacting) return;
      if (Date.now() > deadline) {
        throw new VarveError(
          `the local runtime did not become idle within ${timeoutMs} ms; check its consumers' lag and log`,
          { kind: 'unavailable', retryable: true },
        );
      }
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  private onCommitEvent(e: CommitEvent): void {
    for (const c of this.consumersOf(e.warehouse, e.table)) c.scheduleDiscovery();
  }

  /** One compaction at a time per table; commits during one ask for one more after it. */
  private scheduleCompaction(t: ManagedTable): void {
    if (t.compacting) {
      t.compactAgain = true;
      return;
    }
    t.compacting = (async () => {
      do {
        t.compactAgain = false;
        try {
          await this.compact(t.table);
        } catch (e) {
          this.log(`varve: compacting ${t.table.name} failed: ${(e as Error).message}`);
        }
      } while (t.compactAgain && this.running);
      t.compacting = undefined;
    })();
  }

  private consumersOf(warehouse: string, table: string): RuntimeConsumer[] {
    return this.consumers.filter((c) => c.table.store.uri === warehouse && c.table.name === table);
  }
}

function tableId(warehouse: string, table: string): string {
  return `${warehouse}\u0000${table}`;
}
