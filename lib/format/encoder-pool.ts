/**
 * Parquet encoding off the calling thread: a small pool of worker threads, each with its own
 * parquet-wasm instance, encodes data files whose rows the calling thread streams to it as Arrow
 * IPC slices (buffers transferred, not copied). While a worker encodes one piece the calling
 * thread sorts, merges and gathers the next, and the files of several buckets encode side by side.
 *
 * Workers start on first use and are unref'd whenever they hold no open file, so a CLI exits as
 * soon as its work is done. A worker that dies fails every file it held with EncoderWorkerError;
 * an encode error inside a worker comes back as the error the inline encoder throws (same name
 * and message). Where no worker entry can be found (a bundle that does not ship
 * `encode-worker.js` next to itself), the pool reports itself unavailable and callers encode
 * inline.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import * as arrow from 'apache-arrow';
import { CorruptMetadataError, EncoderWorkerError, InvalidArgumentError, SchemaMismatchError } from '../errors.js';
import { dataFileWriterProperties, type WriteDataFileOptions } from './data-file.js';
import { ADD_SLICE_ROWS } from './data-file-stream.js';
import type { EncoderReply, EncoderRequest, SerializedError } from './encoder-protocol.js';

/** Environment variable that sets the pool's thread count; 0 encodes on the calling thread. */
export const ENCODE_THREADS_ENV = 'VARVE_ENCODE_THREADS';
/** Environment variable that sets PARALLEL_FLUSH_BYTES's value for the process (bytes). */
export const ENCODE_MIN_FLUSH_BYTES_ENV = 'VARVE_ENCODE_MIN_FLUSH_BYTES';
/**
 * Buffered bytes from which a flush of several buckets encodes on the pool's threads, side by side;
 * below it (and for a single bucket) a flush encodes inline, one bucket at a time, so a small
 * commit starts no thread and a one-bucket write's memory stays one encoder's.
 */
export const PARALLEL_FLUSH_BYTES = 8 * 1024 * 1024;
/** The default never starts more workers than this, whatever the core count. */
const MAX_DEFAULT_THREADS = 4;
/** Lambda gives a function one vCPU per 1,769 MB of memory, whatever core count the OS reports. */
const LAMBDA_MB_PER_VCPU = 1769;
/**
 * Slices per file sent but not yet encoded: enough for the worker never to wait for the calling
 * thread, few enough that memory holds a couple of slices per file, not the buffer.
 */
const IN_FLIGHT_SLICES = 2;

/** A data file being encoded a piece at a time (inline by DataFileStreamWriter, or by a worker). */
export interface DataFileEncoder {
  /** Appends key-sorted rows after everything added before. */
  add(rows: arrow.Table): Promise<void>;
  /** Ends the file and returns its bytes. */
  finish(): Promise<Uint8Array>;
  /** Ends the file and drops it. */
  discard(): Promise<void>;
}

/**
 * The default thread count: `VARVE_ENCODE_THREADS` when set; else the available cores (at most 4;
 * on Lambda the vCPUs its memory size buys), and 0 — encode inline — with fewer than two.
 */
export function defaultEncodeThreads(env: NodeJS.ProcessEnv = process.env): number {
  const set = env[ENCODE_THREADS_ENV];
  if (set !== undefined && set.trim() !== '') {
    const n = Number(set);
    if (!Number.isInteger(n) || n < 0 || n > 64) {
      throw new InvalidArgumentError(`${ENCODE_THREADS_ENV} must be a whole number from 0 to 64 (0 encodes on the calling thread), got "${set}"`);
    }
    return n;
  }
  let cpus = os.availableParallelism();
  const lambdaMB = Number(env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE);
  if (lambdaMB > 0) cpus = Math.min(cpus, Math.floor(lambdaMB / LAMBDA_MB_PER_VCPU));
  return cpus >= 2 ? Math.min(cpus, MAX_DEFAULT_THREADS) : 0;
}

/** PARALLEL_FLUSH_BYTES, or `VARVE_ENCODE_MIN_FLUSH_BYTES` when set. */
export function defaultMinFlushBytes(env: NodeJS.ProcessEnv = process.env): number {
  const set = env[ENCODE_MIN_FLUSH_BYTES_ENV];
  if (set === undefined || set.trim() === '') return PARALLEL_FLUSH_BYTES;
  const n = Number(set);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`${ENCODE_MIN_FLUSH_BYTES_ENV} must be a whole number of bytes, got "${set}"`);
  return n;
}

/** How a worker is started: a compiled entry file, or the TypeScript source through tsx (a clone, tests). */
type WorkerEntry = { file: string } | { eval: string };

/**
 * The worker entry next to this module: `encode-worker.js` (tsc's dist/, or a bundle's folder,
 * where the build emits it beside the bundle), else `encode-worker.ts` run through tsx's loader
 * (the sources in a clone); null when neither is there.
 */
function findWorkerEntry(): WorkerEntry | null {
  // In a CommonJS bundle (Lambda) import.meta is empty and __dirname is the bundle's folder; the
  // ESM CLI bundle defines __dirname too; tsc's ESM output has import.meta.url only.
  const here = typeof __dirname === 'string' ? __dirname : path.dirname(fileURLToPath(import.meta.url));
  const js = path.join(here, 'encode-worker.js');
  if (existsSync(js)) return { file: js };
  const ts = path.join(here, 'encode-worker.ts');
  if (!existsSync(ts)) return null;
  let api: string;
  try {
    api = path.join(path.dirname(createRequire(path.join(here, 'noop.js')).resolve('tsx/package.json')), 'dist/esm/api/index.mjs');
  } catch {
    return null;
  }
  if (!existsSync(api)) return null;
  const load = `import(${JSON.stringify(pathToFileURL(api).href)}).then((m) => { m.register(); return import(${JSON.stringify(pathToFileURL(ts).href)}); })`;
  return { eval: load };
}

interface Slot {
  worker: Worker;
  /** Files open on this worker, by pool file number. */
  files: Map<number, RemoteFile>;
}

/** A pool of Parquet encoder threads (see the file comment). */
export class EncoderPool {
  private readonly slots: Slot[] = [];
  private entry: WorkerEntry | null | undefined;
  private nextFile = 1;

  constructor(
    private maxThreads: number,
    /** A flush of several buckets uses the pool from this many buffered bytes (see PARALLEL_FLUSH_BYTES). */
    public minFlushBytes = defaultMinFlushBytes(),
  ) {}

  /** The most workers this pool runs (0: none; callers encode inline). */
  get threads(): number {
    return this.maxThreads;
  }

  /**
   * Changes the thread count. Workers beyond it stay idle (unref'd, their wasm warm) until the
   * count rises again or `close`; none is used while the count is 0.
   */
  setThreads(threads: number): void {
    this.maxThreads = threads;
  }

  /** True when files can be encoded by workers here (threads > 0 and a worker entry exists). */
  get available(): boolean {
    if (this.maxThreads <= 0) return false;
    if (this.entry === undefined) this.entry = findWorkerEntry();
    return this.entry !== null;
  }

  /** Workers running (busy or idle). */
  get started(): number {
    return this.slots.length;
  }

  /**
   * Opens a data file of `schema` encoded by a worker: the idle one, a new one while below
   * `threads`, else the one with the fewest open files. Schema and options are checked here, so
   * their errors are the inline encoder's, thrown at once.
   */
  open(schema: arrow.Schema, opts: WriteDataFileOptions): DataFileEncoder {
    dataFileWriterProperties(schema, opts).free();
    if (!this.available) throw new InvalidArgumentError('the encoder pool has no worker threads here; encode inline (DataFileStreamWriter)');
    const slot = this.pick();
    const file = new RemoteFile(this.nextFile++, slot, () => this.release(slot, file));
    if (slot.files.size === 0) slot.worker.ref();
    slot.files.set(file.id, file);
    const empty = new arrow.Table(schema, [new arrow.RecordBatch(schema, arrow.makeData({ type: new arrow.Struct(schema.fields), length: 0, nullCount: 0, children: schema.fields.map((f) => arrow.makeData({ type: f.type, length: 0 })) }))]);
    file.post({ op: 'open', file: file.id, schema: arrow.tableToIPC(empty, 'stream'), opts });
    return file;
  }

  /** Stops every worker (files still open fail). The pool starts new ones on its next use. */
  async close(): Promise<void> {
    const slots = this.slots.splice(0);
    await Promise.all(slots.map((s) => s.worker.terminate()));
  }

  private pick(): Slot {
    const usable = this.slots.slice(0, this.maxThreads);
    let best: Slot | undefined;
    for (const s of usable) if (!best || s.files.size < best.files.size) best = s;
    if (best && (best.files.size === 0 || usable.length >= this.maxThreads)) return best;
    return this.spawn();
  }

  private spawn(): Slot {
    const entry = this.entry!;
    const worker = 'file' in entry ? new Worker(entry.file) : new Worker(entry.eval, { eval: true });
    const slot: Slot = { worker, files: new Map() };
    this.slots.push(slot);
    worker.unref();
    worker.on('message', (msg: EncoderReply) => slot.files.get(msg.file)?.receive(msg));
    const die = (why: string, cause?: unknown) => {
      const i = this.slots.indexOf(slot);
      if (i >= 0) this.slots.splice(i, 1);
      const open = [...slot.files.values()];
      slot.files.clear();
      for (const f of open) {
        f.fail(new EncoderWorkerError(`the Parquet encoder thread ${why} while it was encoding ${open.length} data file(s) of this write; those files are lost and nothing of the write was committed — retry the write (set ${ENCODE_THREADS_ENV}=0 to encode on the calling thread)`, { cause }));
      }
    };
    worker.on('error', (e) => die(`failed (${e.message})`, e));
    worker.on('exit', (code) => die(`exited with code ${code}`));
    return slot;
  }

  private release(slot: Slot, file: RemoteFile): void {
    if (slot.files.delete(file.id) && slot.files.size === 0) slot.worker.unref();
  }
}

/** A data file encoded by a worker: slices go out as transferred IPC bytes, at most IN_FLIGHT_SLICES ahead. */
class RemoteFile implements DataFileEncoder {
  private inFlight = 0;
  private failure: Error | null = null;
  private wake: (() => void) | null = null;
  private result: { resolve: (b: Uint8Array) => void; reject: (e: unknown) => void } | null = null;
  private done = false;

  constructor(
    readonly id: number,
    private readonly slot: Slot,
    private readonly release: () => void,
  ) {}

  post(msg: EncoderRequest, transfer: ArrayBuffer[] = []): void {
    this.slot.worker.postMessage(msg, transfer);
  }

  async add(rows: arrow.Table): Promise<void> {
    if (this.done) throw new InvalidArgumentError('the data file is finished; open a new writer');
    for (let at = 0; at < rows.numRows; at += ADD_SLICE_ROWS) {
      const slice = rows.slice(at, Math.min(rows.numRows, at + ADD_SLICE_ROWS));
      while (this.inFlight >= IN_FLIGHT_SLICES && this.failure === null) await new Promise<void>((r) => (this.wake = r));
      if (this.failure !== null) throw this.failure;
      const ipc = arrow.tableToIPC(slice, 'stream');
      this.inFlight++;
      this.post({ op: 'add', file: this.id, ipc, rows: slice.numRows }, ipc.byteOffset === 0 && ipc.byteLength === ipc.buffer.byteLength ? [ipc.buffer as ArrayBuffer] : []);
    }
  }

  finish(): Promise<Uint8Array> {
    if (this.done) return Promise.reject(new InvalidArgumentError('the data file is finished already'));
    this.done = true;
    if (this.failure !== null) {
      this.release();
      return Promise.reject(this.failure);
    }
    return new Promise<Uint8Array>((resolve, reject) => {
      this.result = { resolve, reject };
      this.post({ op: 'finish', file: this.id });
    });
  }

  async discard(): Promise<void> {
    if (this.done) return;
    this.done = true;
    if (this.failure !== null) {
      this.release();
      return;
    }
    await new Promise<void>((resolve) => {
      this.result = { resolve: () => resolve(), reject: () => resolve() };
      this.post({ op: 'discard', file: this.id });
    });
  }

  receive(msg: EncoderReply): void {
    switch (msg.op) {
      case 'added':
        this.inFlight--;
        this.wakeUp();
        return;
      case 'failed':
        this.fail(remoteError(msg.error));
        return;
      case 'finished':
      case 'discarded': {
        const r = this.result;
        this.result = null;
        this.release();
        r?.resolve(msg.op === 'finished' ? msg.bytes : new Uint8Array(0));
        return;
      }
    }
  }

  /** The file failed (an encode error, or its worker died): waiting and later calls get `e`. */
  fail(e: Error): void {
    if (this.failure === null) this.failure = e;
    this.wakeUp();
    const r = this.result;
    this.result = null;
    if (r) {
      this.release();
      r.reject(this.failure);
    }
  }

  private wakeUp(): void {
    const w = this.wake;
    this.wake = null;
    w?.();
  }
}

// The WebAssembly global is missing from the project's type libs (ES2023 + node), not from Node.
const WasmRuntimeError = (globalThis as unknown as { WebAssembly: { RuntimeError: ErrorConstructor } }).WebAssembly.RuntimeError;

/** The classes a worker's error is rebuilt as, by name: what the inline encoder throws. */
const REMOTE_ERRORS: Record<string, new (message: string) => Error> = {
  InvalidArgumentError,
  SchemaMismatchError,
  CorruptMetadataError,
  RuntimeError: WasmRuntimeError,
};

/** The error a worker reported, as the class the inline encoder would have thrown (by name), with the worker's stack. */
function remoteError(s: SerializedError): Error {
  const Known = REMOTE_ERRORS[s.name];
  const e = Known !== undefined ? new Known(s.message) : Object.assign(new Error(s.message), { name: s.name });
  if (s.stack) e.stack = `${s.stack}\n    (in a Parquet encoder thread)`;
  return e;
}

let shared: EncoderPool | null = null;

/** The process's encoder pool (threads from `defaultEncodeThreads()` unless configured). */
export function encoderPool(): EncoderPool {
  if (shared === null) shared = new EncoderPool(defaultEncodeThreads());
  return shared;
}

/**
 * Sets the process's encoder thread count (0: encode on the calling thread; without `threads`, the
 * default). Running workers are kept up to the new count; `restart` stops them all first (new ones
 * read the environment afresh).
 */
export async function configureEncoderPool(opts: { threads?: number; minFlushBytes?: number; restart?: boolean } = {}): Promise<void> {
  const threads = opts.threads ?? defaultEncodeThreads();
  if (!Number.isInteger(threads) || threads < 0 || threads > 64) throw new InvalidArgumentError(`encoder threads must be a whole number from 0 to 64, got ${threads}`);
  if (opts.restart) await shared?.close();
  if (shared === null) shared = new EncoderPool(threads);
  else shared.setThreads(threads);
  shared.minFlushBytes = opts.minFlushBytes ?? defaultMinFlushBytes();
}
