/**
 * The worker bookkeeping the encoder, decode and merge pools share: each worker thread with the
 * requests it holds, by id. A request goes to the idle worker, to a new one while fewer than
 * `threads` run, else to the one holding the fewest; a worker is ref'd while it holds a request
 * and unref'd when it holds none (a CLI exits when its work is done). A worker that fails or exits
 * leaves the pool, and every request it held is handed to `died` (the pool fails them with its own
 * error); the next request starts a new one. What a reply means stays the pool's: `onMessage`
 * receives each message with the worker's slot, and the pool settles the request it answers.
 */
import { Worker } from 'node:worker_threads';
import type { WorkerEntry } from './worker-entry.js';

/** A worker and the requests it holds, by id. */
export interface WorkerSlot<P> {
  readonly worker: Worker;
  readonly pending: Map<number, P>;
}

/** What a pool does with its workers' messages and deaths. */
export interface WorkerSlotHooks<P, M> {
  onMessage(slot: WorkerSlot<P>, msg: M): void;
  /** The worker failed (`why`) holding `open` (already forgotten): fail them. */
  died(open: P[], why: string, cause?: unknown): void;
}

/** A pool's workers (see the file comment). */
export class WorkerSlots<P, M> {
  private readonly slots: WorkerSlot<P>[] = [];

  constructor(private readonly hooks: WorkerSlotHooks<P, M>) {}

  /** Workers running (busy or idle). */
  get started(): number {
    return this.slots.length;
  }

  /** Sends `msg` as request `id` (held as `pending`) to the least busy of at most `threads` workers of `entry`. */
  post(
    entry: WorkerEntry,
    threads: number,
    id: number,
    pending: P,
    msg: unknown,
    transfer: readonly ArrayBuffer[] = [],
  ): WorkerSlot<P> {
    const slot = this.pick(entry, threads);
    if (slot.pending.size === 0) slot.worker.ref();
    slot.pending.set(id, pending);
    slot.worker.postMessage(msg, transfer as ArrayBuffer[]);
    return slot;
  }

  /** Request `id` of `slot` is answered: forgets and returns it (undefined: not held, e.g. already failed). */
  settle(slot: WorkerSlot<P>, id: number): P | undefined {
    const p = slot.pending.get(id);
    if (p === undefined) return undefined;
    slot.pending.delete(id);
    if (slot.pending.size === 0) slot.worker.unref();
    return p;
  }

  /** Stops every worker (requests they held fail through `died`). New ones start on the next post. */
  async close(): Promise<void> {
    const slots = this.slots.splice(0);
    await Promise.all(slots.map((s) => s.worker.terminate()));
  }

  private pick(entry: WorkerEntry, threads: number): WorkerSlot<P> {
    const usable = this.slots.slice(0, threads);
    let best: WorkerSlot<P> | undefined;
    for (const s of usable) if (!best || s.pending.size < best.pending.size) best = s;
    if (best && (best.pending.size === 0 || usable.length >= threads)) return best;
    return this.spawn(entry);
  }

  private spawn(entry: WorkerEntry): WorkerSlot<P> {
    const worker = 'file' in entry ? new Worker(entry.file) : new Worker(entry.eval, { eval: true });
    const slot: WorkerSlot<P> = { worker, pending: new Map() };
    this.slots.push(slot);
    worker.unref();
    worker.on('message', (msg: M) => this.hooks.onMessage(slot, msg));
    const die = (why: string, cause?: unknown) => {
      const i = this.slots.indexOf(slot);
      if (i >= 0) this.slots.splice(i, 1);
      const open = [...slot.pending.values()];
      slot.pending.clear();
      if (open.length > 0) this.hooks.died(open, why, cause);
    };
    worker.on('error', (e) => die(`failed (${e.message})`, e));
    worker.on('exit', (code) => die(`exited with code ${code}`));
    return slot;
  }
}
