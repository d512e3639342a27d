/**
 * Whole sections of a merged read on worker threads: a worker decodes the section's files, merges
 * them through the table's merge engine and takes the winners' values exactly as the calling
 * thread would inline (read.ts mergeSection), then transfers the merged Arrow buffers back (not
 * copied, not IPC-encoded: arrow-transfer.ts). The calling thread keeps the store: a worker asks it
 * for each byte range it reads, so a read on the pool fetches exactly the ranges the inline read
 * fetches, from any store. A LocalStore's folder a worker reads itself (one handle per file, no
 * round trip through the calling thread, which the workers' decoding keeps off the cores); a range
 * it fails to read there it asks the calling thread for, so a store error is the store's own as
 * inline. The calling thread only plans, serves reads and concatenates.
 *
 * It runs as many threads as the decode pool is configured with (`VARVE_DECODE_THREADS`,
 * configureDecodePool; 0: every section merges inline) and takes a section when its files hold at
 * least 64 × the decode pool's `minBytes` (1 MiB by default). A worker that dies fails every section
 * it held with DecoderWorkerError: the read fails, it never returns fewer rows. A worker's error
 * comes back as the error the inline merge throws (by name), a store error as the store's own.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Worker } from 'node:worker_threads';
import type * as arrow from 'apache-arrow';
import { DecoderWorkerError } from '../errors.js';
import { unpackTable } from '../format/arrow-transfer.js';
import { DECODE_THREADS_ENV, decodePool, onDecodePoolRestart } from '../format/decode-pool.js';
import { findWorkerEntry, remoteWorkerError, serializeWorkerError, type WorkerEntry } from '../format/worker-entry.js';
import { WorkerSlots } from '../format/worker-slots.js';
import type { ManifestEntry } from '../manifest/types.js';
import { keyFirstSchema } from '../mergetree/key-first-merge.js';
import { LocalStore } from '../store/local-store.js';
import type { FromMergeWorker, MergeRequest, ToMergeWorker } from './merge-protocol.js';
import type { SectionOptions } from './read.js';
import type { Table } from './table.js';

/** A section goes to a worker when its files hold at least this many times the decode pool's `minBytes`. */
const MERGE_BYTES_PER_DECODE_BYTES = 64;

interface Task {
  table: Table;
  resolve(t: arrow.Table): void;
  reject(e: unknown): void;
  /** The section comes back without `_SEQUENCE_NUMBER`. */
  dropSequence: boolean;
  /** The first error the store gave one of this task's reads: what the task then fails with. */
  storeError?: unknown;
}

/** A pool of decode-and-merge threads (see the file comment). */
export class MergePool {
  private readonly workers: WorkerSlots<Task, FromMergeWorker> = new WorkerSlots<Task, FromMergeWorker>({
    onMessage: (slot, msg) => {
      const task = slot.pending.get(msg.id);
      if (task === undefined) return;
      if (msg.op === 'read') {
        this.serveRead(slot.worker, task, msg);
        return;
      }
      this.workers.settle(slot, msg.id);
      if (msg.op === 'failed')
        task.reject(task.storeError ?? remoteWorkerError(msg.error, 'a decode-and-merge thread'));
      else {
        try {
          task.resolve(
            unpackTable(msg.table, keyFirstSchema({ schema: task.table.schema, dropSequence: task.dropSequence })),
          );
        } catch (e) {
          task.reject(e);
        }
      }
    },
    died: (open, why, cause) => {
      for (const t of open) {
        t.reject(
          new DecoderWorkerError(
            `the Parquet decoder thread ${why} while it was decoding and merging ${open.length} section(s) of this read; the read failed and returned nothing — retry it (set ${DECODE_THREADS_ENV}=0 to decode on the calling thread)`,
            { cause },
          ),
        );
      }
    },
  });
  private entry: WorkerEntry | null | undefined;
  private nextId = 1;

  /** The most workers: the decode pool's thread count. */
  get threads(): number {
    return decodePool().threads;
  }

  /** Workers running (busy or idle). */
  get started(): number {
    return this.workers.started;
  }

  /** True when a section of `bytes` compressed bytes merges on a worker here. */
  takes(bytes: number): boolean {
    if (this.threads <= 0 || bytes < decodePool().minBytes * MERGE_BYTES_PER_DECODE_BYTES) return false;
    if (this.entry === undefined) this.entry = findWorkerEntry('merge-worker', here());
    return this.entry !== null;
  }

  /** The merged section of `entries` (files of one bucket, current schema), with system columns, as read.ts mergeSection returns it (its key span aside: a section here is merged whole). */
  merge(table: Table, entries: ManifestEntry[], opts: SectionOptions): Promise<arrow.Table> {
    const id = this.nextId++;
    return new Promise<arrow.Table>((resolve, reject) => {
      const msg: MergeRequest = {
        op: 'merge',
        id,
        name: table.name,
        path: table.path,
        schema: table.schema,
        entries,
        dropDeletes: opts.dropDeletes,
        dropSequence: opts.dropSequence === true,
        // Exactly a LocalStore (not a subclass or a wrapper, which may change what a read returns).
        ...(table.store.constructor === LocalStore ? { folder: (table.store as LocalStore).root } : {}),
      };
      this.workers.post(this.entry!, this.threads, id, { table, resolve, reject, dropSequence: msg.dropSequence }, msg);
    });
  }

  /** Stops every worker (pending merges fail). The pool starts new ones on its next use. */
  close(): Promise<void> {
    return this.workers.close();
  }

  /** Answers a worker's read of a byte range from the task's store. */
  private serveRead(worker: Worker, task: Task, msg: Extract<FromMergeWorker, { op: 'read' }>): void {
    const send = (reply: ToMergeWorker, transfer: ArrayBuffer[] = []) => worker.postMessage(reply, transfer);
    task.table.store.getRange(msg.key, msg.start, msg.end).then(
      (got) => {
        // The bytes move to the worker: a region of exactly the range, transferred.
        const bytes =
          got.byteOffset === 0 && got.byteLength === got.buffer.byteLength && got.buffer instanceof ArrayBuffer
            ? got
            : got.slice();
        send({ op: 'bytes', read: msg.read, bytes }, [bytes.buffer as ArrayBuffer]);
      },
      (e: unknown) => {
        task.storeError ??= e;
        send({ op: 'bytes', read: msg.read, error: serializeWorkerError(e) });
      },
    );
  }
}

/** This module's folder (merge-worker.js / .ts lies beside it, or beside the bundle). */
function here(): string {
  return typeof __dirname === 'string' ? __dirname : path.dirname(fileURLToPath(import.meta.url));
}

let shared: MergePool | null = null;

/** The process's merge pool. */
export function mergePool(): MergePool {
  if (shared === null) {
    const pool = new MergePool();
    // Its threads decode with the decode pool's settings: a restart of that pool restarts them too.
    onDecodePoolRestart(() => pool.close());
    shared = pool;
  }
  return shared;
}
