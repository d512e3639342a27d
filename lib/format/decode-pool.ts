/**
 * Parquet decoding off the calling thread: a small pool of worker threads, each with its own
 * parquet-wasm instance, decodes row groups (a standalone one-row-group file from rowGroupFile,
 * posted as a Blob: no copy) and hands back their Arrow IPC bytes (transferred). While the workers
 * decode the next row groups, the calling thread merges the ones already decoded: the merged read
 * of several buckets and files runs on as many cores as the pool has threads.
 *
 * Sized like the encoder pool: `VARVE_DECODE_THREADS`, default the cores (at most 4; on Lambda the
 * vCPUs its memory buys), 0 with one core — then every row group decodes inline. Row groups under
 * POOL_DECODE_BYTES decode inline too (a round trip costs more than their decode). Workers start
 * on first use and are unref'd whenever they hold no request, so a CLI exits when its work is
 * done. A worker that dies fails every row group it held with DecoderWorkerError: the read fails,
 * it never returns fewer rows. A decode error inside a worker comes back as the error the inline
 * decode throws (same name and message). Where no worker entry exists (a bundle that does not ship
 * `decode-worker.js` beside itself), the pool is unavailable and row groups decode inline.
 */
import { DecoderWorkerError, InvalidArgumentError } from '../errors.js';
import type { DecodeReply, DecodeRequest } from './decode-protocol.js';
import { defaultPoolThreads, findWorkerEntry, remoteWorkerError, type WorkerEntry } from './worker-entry.js';
import { WorkerSlots } from './worker-slots.js';

/** Environment variable that sets the pool's thread count; 0 decodes on the calling thread. */
export const DECODE_THREADS_ENV = 'VARVE_DECODE_THREADS';
/** Environment variable that sets POOL_DECODE_BYTES's value for the process (bytes). */
const DECODE_MIN_BYTES_ENV = 'VARVE_DECODE_MIN_BYTES';
/** Compressed bytes of a row group from which it decodes on a worker; smaller ones decode inline. */
const POOL_DECODE_BYTES = 16 * 1024;

/** The default thread count: `VARVE_DECODE_THREADS` when set, else as the encoder pool (cores ≤ 4, 0 on one core). */
export function defaultDecodeThreads(env: NodeJS.ProcessEnv = process.env): number {
  return defaultPoolThreads(DECODE_THREADS_ENV, env);
}

/** POOL_DECODE_BYTES, or `VARVE_DECODE_MIN_BYTES` when set. */
export function defaultDecodeMinBytes(env: NodeJS.ProcessEnv = process.env): number {
  const set = env[DECODE_MIN_BYTES_ENV];
  if (set === undefined || set.trim() === '') return POOL_DECODE_BYTES;
  const n = Number(set);
  if (!Number.isInteger(n) || n < 0)
    throw new InvalidArgumentError(`${DECODE_MIN_BYTES_ENV} must be a whole number of bytes, got "${set}"`);
  return n;
}

interface Pending {
  resolve(ipc: Uint8Array): void;
  reject(e: unknown): void;
}

/** A pool of Parquet decoder threads (see the file comment). */
export class DecodePool {
  private readonly workers = new WorkerSlots<Pending, DecodeReply>({
    onMessage: (slot, msg) => {
      const p = this.workers.settle(slot, msg.id);
      if (p === undefined) return;
      if ('error' in msg) p.reject(remoteWorkerError(msg.error, 'a Parquet decoder thread'));
      else p.resolve(msg.ipc);
    },
    died: (open, why, cause) => {
      for (const p of open) {
        p.reject(
          new DecoderWorkerError(
            `the Parquet decoder thread ${why} while it was decoding ${open.length} row group(s) of this read; the read failed and returned nothing — retry it (set ${DECODE_THREADS_ENV}=0 to decode on the calling thread)`,
            { cause },
          ),
        );
      }
    },
  });
  private entry: WorkerEntry | null | undefined;
  private nextId = 1;

  constructor(
    private maxThreads: number,
    /** Row groups of at least this many compressed bytes decode on a worker. */
    public minBytes = defaultDecodeMinBytes(),
  ) {}

  /** The most workers this pool runs (0: none; row groups decode inline). */
  get threads(): number {
    return this.maxThreads;
  }

  setThreads(threads: number): void {
    this.maxThreads = threads;
  }

  /** Workers running (busy or idle). */
  get started(): number {
    return this.workers.started;
  }

  /** True when a row group of `bytes` compressed bytes decodes on a worker here. */
  takes(bytes: number): boolean {
    if (this.maxThreads <= 0 || bytes < this.minBytes) return false;
    if (this.entry === undefined) this.entry = findWorkerEntry('decode-worker');
    return this.entry !== null;
  }

  /** The Arrow IPC stream of `columns` (file order) of a one-row-group file of `rows` rows, decoded by a worker. */
  decode(blob: Blob, columns: readonly string[], rows: number): Promise<Uint8Array> {
    if (!this.takes(Number.POSITIVE_INFINITY))
      throw new InvalidArgumentError('the decode pool has no worker threads here; decode inline (decodeRowGroupIPC)');
    const id = this.nextId++;
    return new Promise<Uint8Array>((resolve, reject) => {
      const msg: DecodeRequest = { id, blob, columns: [...columns], rows };
      this.workers.post(this.entry!, this.maxThreads, id, { resolve, reject }, msg);
    });
  }

  /** Stops every worker (pending decodes fail). The pool starts new ones on its next use. */
  close(): Promise<void> {
    return this.workers.close();
  }
}

let shared: DecodePool | null = null;

/** The process's decode pool (threads from `defaultDecodeThreads()` unless configured). */
export function decodePool(): DecodePool {
  if (shared === null) shared = new DecodePool(defaultDecodeThreads());
  return shared;
}

/** Stops of the pools that decode with this pool's settings on their own threads (see onDecodePoolRestart). */
const restartHooks = new Set<() => Promise<void>>();

/**
 * Registers `stop` (a pool of a higher layer whose threads decode with this pool's settings, such
 * as the merge pool) to be called when `configureDecodePool({ restart: true })` restarts the decode
 * workers, so its threads too start afresh (reading the environment again) on their next use.
 */
export function onDecodePoolRestart(stop: () => Promise<void>): void {
  restartHooks.add(stop);
}

/**
 * Sets the process's decoder thread count (0: decode on the calling thread; without `threads`, the
 * default) and the size from which a row group goes to a worker; `restart` stops running workers
 * first, the decode pool's and those of every pool registered with onDecodePoolRestart (new ones
 * read the environment afresh).
 */
export async function configureDecodePool(
  opts: { threads?: number; minBytes?: number; restart?: boolean } = {},
): Promise<void> {
  const threads = opts.threads ?? defaultDecodeThreads();
  if (!Number.isInteger(threads) || threads < 0 || threads > 64)
    throw new InvalidArgumentError(`decoder threads must be a whole number from 0 to 64, got ${threads}`);
  if (opts.restart) await Promise.all([shared?.close(), ...[...restartHooks].map((stop) => stop())]);
  if (shared === null) shared = new DecodePool(threads);
  else shared.setThreads(threads);
  shared.minBytes = opts.minBytes ?? defaultDecodeMinBytes();
}
