/**
 * One consumer inside the local runtime: serialised discovery (one run at a time; a trigger during
 * a run asks for one more run after it, like the reserved-concurrency-1 discovery Lambda) and a
 * few split-reader loops on the consumer's queue.
 */
import { ConsumerExpiredError, ConsumerLeaseLostError, TableNotFoundError, type VarveError } from '../errors.js';
import { checkOpenedTable, checkTableIdentity, openedTableUuid } from '../stream/table-identity.js';
import { ConsumerLeaseHandle, type LeaseHolder } from '../stream/lease.js';
import type { Table } from '../table/table.js';
import type { StreamSink } from '../stream/delivery.js';
import { discover, ensureConsumer, resetConsumer, rewindPlanning, type DiscoveryResult } from '../stream/discovery.js';
import { SplitReader } from '../stream/reader.js';
import type { Backoff } from '../stream/split-policy.js';
import { MemoryQueue } from '../stream/memory-queue.js';
import type { SplitQueue } from '../stream/split-queue.js';
import type { StreamOptions } from '../stream/stream-options.js';
import { describeGap, readConsumer, type ConsumerGap } from '../snapshot/consumer.js';

/** What a RuntimeConsumer is made of. */
export interface RuntimeConsumerOptions {
  table: Table;
  consumerId: string;
  sink: StreamSink;
  queue: SplitQueue;
  /** True when the queue outlives this process (SQS): undelivered splits planned before are still in it. */
  durableQueue?: boolean;
  stream?: StreamOptions;
  readers?: number;
  maxSnapshotsPerRun?: number;
  /** Own failures a split may have before its reader dead-letters it. @default SPLIT_FAILURE_BUDGET */
  failureBudget?: number;
  /** When a failed split comes back. @default SPLIT_BACKOFF (2, 4, 8, 16 … s) */
  backoff?: Backoff;
  /** Hold the consumer id with a lease (one reader group at a time). @default true */
  lease?: boolean;
  /** Take the lease over from a live holder (which is fenced off). */
  takeover?: boolean;
  /** Who this reader group is, in the lease. @default this host and pid, a random reader id */
  holder?: LeaseHolder;
  /** Lease duration; also the limit of one sink call. @default the queue's visibility (MemoryQueue) or 30 s */
  leaseMs?: number;
  /** The clock of the consumer's lease. @default Date.now (tests drive it to stand for a process blocked past its lease) */
  now?: () => number;
  /** Backstop discovery interval; 0 disables. @default the table's `continuous.discovery-interval` */
  discoveryIntervalMs?: number;
  log: (line: string) => void;
}

/** Long-poll wait of a reader loop; also how long `stop()` may take to notice. */
const POLL_WAIT_MS = 100;

/** A consumer run by the local runtime. */
export class RuntimeConsumer {
  readonly table: Table;
  readonly consumerId: string;
  readonly queue: SplitQueue;
  /** The last discovery run's result. */
  lastDiscovery?: DiscoveryResult;
  /** The last discovery failure (cleared by a successful run). */
  lastError?: Error;
  /** Why this consumer stopped for good (its id expired, its table was dropped); set once. */
  failure?: VarveError;
  /**
   * Expired snapshots this consumer skipped under `scan.on-expired = skip-to-earliest` (each also
   * logged, and kept in the consumer file): their changes never reached the sink.
   */
  readonly gaps: ConsumerGap[] = [];
  private readonly reader: SplitReader;
  /** The consumer id's lease, when this consumer holds one. */
  readonly lease?: ConsumerLeaseHandle;
  private renewTimer?: NodeJS.Timeout;
  /** The table this consumer reads (table-identity.ts), fixed at `init`. */
  private identity?: string;
  private loops: Promise<void>[] = [];
  private timer?: NodeJS.Timeout;
  private unwatch?: () => void;
  private running = false;
  private discovering?: Promise<void>;
  private again = false;

  /**
   * The stream options of discovery runs after `init`: without `ignoreProgress`, which starts the id
   * afresh once, at init — kept on, it would silently start again a consumer that expires later.
   */
  private readonly runStream: StreamOptions;

  constructor(private readonly opts: RuntimeConsumerOptions) {
    const { ignoreProgress: _once, ...runStream } = opts.stream ?? {};
    this.runStream = runStream;
    this.table = opts.table;
    this.consumerId = opts.consumerId;
    this.queue = opts.queue;
    const visibility = opts.queue instanceof MemoryQueue ? opts.queue.visibilityMs : 30_000;
    const leaseMs = opts.leaseMs ?? visibility;
    if (opts.lease !== false) {
      this.lease = new ConsumerLeaseHandle(opts.table.store, opts.table.path, opts.consumerId, {
        holder: opts.holder,
        ttlMs: leaseMs,
        takeover: opts.takeover,
        tableUuid: openedTableUuid(opts.table),
        now: opts.now,
        log: opts.log,
      });
    }
    this.reader = new SplitReader({
      table: opts.table,
      consumerId: opts.consumerId,
      queue: opts.queue,
      sink: opts.sink,
      failureBudget: opts.failureBudget,
      backoff: opts.backoff,
      log: opts.log,
      // A sink call may take as long as its message stays invisible, as Lambda's timeout allows.
      fence: { lease: this.lease, sinkTimeoutMs: Math.min(visibility, leaseMs) },
      // Fenced off by a newer holder: stop at once (the splits are that holder's to deliver).
      onLeaseLost: (e) => this.halt(e),
    });
  }

  /**
   * Creates the consumer at its start position, or starts it again with `ignoreProgress`. With a
   * queue that starts empty in every process, planning restarts at the consumer's position.
   */
  async init(): Promise<void> {
    // The table at the path must be the one this consumer was opened on (not a re-created one).
    this.identity = await checkOpenedTable(this.table);
    // First the lease: a second reader group fails here, before it touches the position.
    await this.lease?.acquire();
    try {
      if (this.opts.stream?.ignoreProgress)
        await resetConsumer(this.table, this.consumerId, this.opts.stream, Date.now, (g) => this.reportGap(g));
      else if (this.opts.durableQueue)
        await ensureConsumer(this.table, this.consumerId, this.opts.stream, Date.now, (g) => this.reportGap(g));
      else await rewindPlanning(this.table, this.consumerId, this.opts.stream, Date.now, (g) => this.reportGap(g));
    } catch (e) {
      await this.lease?.release();
      throw e;
    }
  }

  /** Starts the reader loops, the backstop discovery timer and a first discovery (taking the lease again after a stop). */
  async start(): Promise<void> {
    if (this.running || this.failure) return;
    if (this.lease && !this.lease.held) await this.lease.acquire();
    this.running = true;
    for (let i = 0; i < (this.opts.readers ?? 2); i++) this.loops.push(this.readLoop());
    const interval = this.opts.discoveryIntervalMs ?? this.table.options.continuousDiscoveryInterval;
    // A backstop: commits of this process trigger discovery at once; others are found by it.
    if (interval > 0) this.timer = setInterval(() => this.scheduleDiscovery(), interval).unref();
    // Commits of other processes on a local folder: the snapshot folder's change notification.
    this.unwatch = this.table.snapshots.watch(() => this.running && this.scheduleDiscovery());
    if (this.lease)
      this.renewTimer = setInterval(
        () => void this.renewLease(),
        Math.max(10, Math.floor(this.lease.ttlMs / 3)),
      ).unref();
    this.scheduleDiscovery();
  }

  /** Moves the dead letters of an in-process queue back to their groups (SQS: StartMessageMoveTask); returns how many. */
  redriveDeadLetters(): number {
    return this.queue instanceof MemoryQueue ? this.queue.redrive() : 0;
  }

  /**
   * Stops the readers after their current batch, waits for a running discovery, and records what
   * the readers delivered in the consumer's position (so expiry can release it at once).
   */
  async stop(): Promise<void> {
    if (this.failure) {
      await Promise.all(this.loops.splice(0));
      return;
    }
    if (!this.running) return;
    this.running = false;
    clearInterval(this.timer);
    clearInterval(this.renewTimer);
    this.unwatch?.();
    await Promise.all(this.loops.splice(0));
    await this.discovering;
    try {
      await discover(this.table, this.queue, this.consumerId, { ...this.runStream, maxSnapshotsPerRun: 0 });
    } catch (e) {
      this.opts.log(
        `varve: recording the position of consumer ${this.consumerId} of ${this.table.name} failed: ${(e as Error).message}`,
      );
    }
    await this.lease?.release();
  }

  private async renewLease(): Promise<void> {
    try {
      await this.lease?.renew();
    } catch (e) {
      if (e instanceof ConsumerLeaseLostError) {
        // A drop deletes the lease too: say that rather than a takeover.
        const dropped =
          this.identity === undefined
            ? undefined
            : await checkTableIdentity(this.table, this.identity).then(
                () => undefined,
                (x: unknown) => x,
              );
        this.halt(dropped instanceof TableNotFoundError ? dropped : e);
      } else
        this.opts.log(
          `varve: renewing the lease of consumer ${this.consumerId} failed (retried): ${(e as Error).message}`,
        );
    }
  }

  /** Runs discovery soon; a request during a run makes one more run after it. */
  scheduleDiscovery(): void {
    if (this.discovering) {
      this.again = true;
      return;
    }
    this.discovering = (async () => {
      do {
        this.again = false;
        await this.discoverOnce();
      } while (this.again && this.running);
      this.discovering = undefined;
    })();
  }

  /** True when everything committed so far is planned and the queue holds nothing deliverable. */
  async isIdle(): Promise<boolean> {
    if (this.discovering) return false;
    const [consumer, latest, depth] = await Promise.all([
      readConsumer(this.table.store, this.table.path, this.consumerId),
      this.table.snapshots.latestId(),
      this.queue.depth(),
    ]);
    const planned = consumer?.plannedSnapshot ?? 0;
    if (latest !== undefined && planned < latest) {
      this.scheduleDiscovery(); // a commit the events did not announce (another process, a COMPACT)
      return false;
    }
    return depth.visible === 0 && depth.inFlight === 0;
  }

  private async discoverOnce(): Promise<void> {
    try {
      let result: DiscoveryResult;
      // A lease that ran out while this process was blocked is taken back here when still free.
      await this.lease?.ensure();
      if (this.identity !== undefined) await checkTableIdentity(this.table, this.identity);
      do {
        result = await discover(this.table, this.queue, this.consumerId, {
          ...this.runStream,
          maxSnapshotsPerRun: this.opts.maxSnapshotsPerRun,
        });
        this.lastDiscovery = result;
        for (const gap of result.gaps) this.reportGap(gap);
        for (const id of result.overwritesSkipped) {
          // Paimon's default: an OVERWRITE is not streamed. Never silently: say what the consumer did not get.
          this.opts.log(
            `varve: consumer ${this.consumerId} of ${this.table.name} skipped OVERWRITE snapshot ${id} (write --overwrite, truncate, drop-partition, rollback): ` +
              'the rows it replaced or added are not streamed; read the table again for its new state, or set streaming-read-overwrite=true',
          );
        }
      } while (!result.caughtUp && !result.lostRace && this.running);
      this.lastError = undefined;
    } catch (e) {
      const err = e as Error;
      if (
        err instanceof ConsumerExpiredError ||
        err instanceof ConsumerLeaseLostError ||
        err instanceof TableNotFoundError
      ) {
        // Never re-created silently: the consumer stops, and says why, until the user decides.
        this.halt(err);
        return;
      }
      // Once per distinct failure: the backstop timer retries every second.
      if (this.lastError?.message !== err.message)
        this.opts.log(`varve: discovery for consumer ${this.consumerId} of ${this.table.name} failed: ${err.message}`);
      this.lastError = err;
    }
  }

  /** A skip of expired snapshots: never silent (logged, and kept in `gaps`). */
  private reportGap(gap: ConsumerGap): void {
    this.gaps.push(gap);
    this.opts.log(
      `varve: consumer ${this.consumerId} of ${this.table.name} skipped snapshots ${describeGap(gap)}: they had expired before it read them ` +
        `(${gap.reason === 'consumer-expired' ? 'its id had expired and was resumed' : 'its start or next snapshot had expired'}), so their changes are LOST to it; ` +
        'accepted with scan.on-expired=skip-to-earliest. Rebuild what it feeds from a full read (--ignore-progress --from latest-full) if that needs them',
    );
  }

  /** Stops this consumer for good because of `reason` (logged once); readers finish their batch. */
  halt(reason: VarveError): void {
    if (this.failure) return;
    this.failure = reason;
    this.lastError = reason;
    this.opts.log(`varve: consumer ${this.consumerId} of ${this.table.name} stopped: ${reason.message}`);
    this.running = false;
    clearInterval(this.timer);
    clearInterval(this.renewTimer);
    this.unwatch?.();
  }

  private async readLoop(): Promise<void> {
    while (this.running) {
      try {
        await this.reader.poll({ waitMs: POLL_WAIT_MS });
      } catch (e) {
        this.opts.log(`varve: split reader of consumer ${this.consumerId} failed: ${(e as Error).message}`);
        await new Promise((r) => setTimeout(r, POLL_WAIT_MS));
      }
    }
  }
}
