/**
 * Parquet encoding off the calling thread: a small pool of worker threads, each with its own
 * parquet-wasm instance. A data file opened on the pool is cut into its row groups; each row group
 * is a piece — its rows as the Arrow IPC slices the inline encoder would feed parquet-wasm, their
 * buffers transferred, not copied — that the least busy worker encodes as a one-row-group Parquet
 * file, while the calling thread sorts, merges and gathers the next. `finish` splices the pieces
 * into one file (parquet-splice.ts), the inline encoder's file: so the row groups of one bucket's
 * file encode side by side, and so do the files of several buckets. At most IN_FLIGHT_PIECES per
 * thread are out at a time; the slice buffers come back with each piece's answer and are reused.
 *
 * Workers start on first use and are unref'd whenever they hold no piece, so a CLI exits as soon
 * as its work is done. A worker that dies fails every piece it held, and the files they belong to,
 * with EncoderWorkerError; an encode error inside a worker comes back as the error the inline
 * encoder throws (same name and message). Where no worker entry can be found (a bundle that does
 * not ship `encode-worker.js` next to itself), the pool reports itself unavailable and callers
 * encode inline.
 */
import * as arrow from 'apache-arrow';
import { EncoderWorkerError, InvalidArgumentError } from '../errors.js';
import { DEFAULT_ROW_GROUP_SIZE, dataFileWriterProperties, type WriteDataFileOptions } from './data-file.js';
import { ADD_SLICE_ROWS } from './data-file-stream.js';
import type { DataField } from '../schema/types.js';
import type { EncoderReply, EncoderRequest, GatherRequest } from './encoder-protocol.js';
import type { FileStats } from './file-stats.js';
import type { GatherPiece } from './gather-piece.js';
import { shareTable, type PackedTable } from './arrow-transfer.js';
import { tableIPCInto } from './ipc-buffer.js';
import { sealDataFile } from './data-file-checksum.js';
import { spliceParquetFiles } from './parquet-splice.js';
import { defaultPoolThreads, findWorkerEntry, remoteWorkerError, type WorkerEntry } from './worker-entry.js';
import { WorkerSlots } from './worker-slots.js';

/** Environment variable that sets the pool's thread count; 0 encodes on the calling thread. */
const ENCODE_THREADS_ENV = 'VARVE_ENCODE_THREADS';
/** Environment variable that sets PARALLEL_FLUSH_BYTES's value for the process (bytes). */
const ENCODE_MIN_FLUSH_BYTES_ENV = 'VARVE_ENCODE_MIN_FLUSH_BYTES';
/**
 * Buffered bytes from which a flush encodes on the pool's threads; below it a flush encodes
 * inline, one bucket at a time, so a small commit starts no thread.
 */
const PARALLEL_FLUSH_BYTES = 8 * 1024 * 1024;
/**
 * Pieces (row groups) per thread posted but not yet encoded: enough for a worker never to wait for
 * the calling thread, few enough that memory holds a couple of row groups per thread, not the buffer.
 */
const IN_FLIGHT_PIECES = 2;

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
  return defaultPoolThreads(ENCODE_THREADS_ENV, env);
}

/** PARALLEL_FLUSH_BYTES, or `VARVE_ENCODE_MIN_FLUSH_BYTES` when set. */
function defaultMinFlushBytes(env: NodeJS.ProcessEnv = process.env): number {
  const set = env[ENCODE_MIN_FLUSH_BYTES_ENV];
  if (set === undefined || set.trim() === '') return PARALLEL_FLUSH_BYTES;
  const n = Number(set);
  if (!Number.isInteger(n) || n < 0)
    throw new InvalidArgumentError(`${ENCODE_MIN_FLUSH_BYTES_ENV} must be a whole number of bytes, got "${set}"`);
  return n;
}

interface PendingPiece {
  resolve: (reply: Encoded) => void;
  reject: (e: Error) => void;
}

/** A pool of Parquet encoder threads (see the file comment). */
export class EncoderPool {
  private readonly workers: WorkerSlots<PendingPiece, EncoderReply> = new WorkerSlots<PendingPiece, EncoderReply>({
    onMessage: (slot, msg) => {
      const p = this.workers.settle(slot, msg.piece);
      if (p === undefined) return;
      this.answered(1);
      if (msg.op === 'encoded') {
        // Slice buffers come back for reuse: a few, not one per slice ever sent.
        for (const b of msg.slices)
          if (this.openFiles > 0 && this.spare.length < IN_FLIGHT_PIECES * Math.max(1, this.maxThreads))
            this.spare.push(b);
        p.resolve({ bytes: msg.bytes, stats: msg.stats });
      } else p.reject(remoteWorkerError(msg.error, 'a Parquet encoder thread'));
    },
    died: (open, why, cause) => {
      this.answered(open.length);
      for (const p of open) {
        p.reject(
          new EncoderWorkerError(
            `the Parquet encoder thread ${why} while it was encoding ${open.length} piece(s) of this write's data files; those files are lost and nothing of the write was committed — retry the write (set ${ENCODE_THREADS_ENV}=0 to encode on the calling thread)`,
            { cause },
          ),
        );
      }
    },
  });
  private entry: WorkerEntry | null | undefined;
  private nextPiece = 1;
  private posted = 0;
  private readonly waiting: (() => void)[] = [];
  /**
   * Slice buffers back from the workers, reused for the next slices (see ipc-buffer.ts): at most
   * as many as pieces may be in flight, and dropped when no file is open (an idle writer keeps none).
   */
  private readonly spare: ArrayBuffer[] = [];
  private openFiles = 0;

  constructor(
    private maxThreads: number,
    /** A flush uses the pool from this many buffered bytes (see PARALLEL_FLUSH_BYTES). */
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
    if (this.entry === undefined) this.entry = findWorkerEntry('encode-worker');
    return this.entry !== null;
  }

  /** Workers running (busy or idle). */
  get started(): number {
    return this.workers.started;
  }

  /**
   * Opens a data file of `schema` whose row groups the pool's workers encode side by side (each
   * row group on whichever worker is free), spliced into one file at `finish`. Schema and options
   * are checked here, so their errors are the inline encoder's, thrown at once.
   */
  open(schema: arrow.Schema, opts: WriteDataFileOptions): DataFileEncoder {
    dataFileWriterProperties(schema, opts).free();
    if (!this.available)
      throw new InvalidArgumentError(
        'the encoder pool has no worker threads here; encode inline (DataFileStreamWriter)',
      );
    this.openFiles++;
    return new PooledFile(this, schema, opts, () => {
      if (--this.openFiles === 0) this.spare.length = 0;
    });
  }

  /** Slice buffers held for reuse, in bytes (none while no file is open). */
  get spareBytes(): number {
    return this.spare.reduce((s, b) => s + b.byteLength, 0);
  }

  /** Stops every worker (files still open fail). The pool starts new ones on its next use. */
  close(): Promise<void> {
    return this.workers.close();
  }

  /** A buffer for the next slice's IPC bytes, from those the workers gave back (undefined: none spare). */
  spareBuffer(): ArrayBuffer | undefined {
    return this.spare.pop();
  }

  /** Waits until fewer than IN_FLIGHT_PIECES per thread are posted and unanswered. */
  async room(): Promise<void> {
    while (this.posted >= IN_FLIGHT_PIECES * Math.max(1, this.maxThreads))
      await new Promise<void>((r) => this.waiting.push(r));
  }

  /**
   * Posts one piece (a row group's slices, whose buffers move to the worker) to the worker with
   * the fewest pieces waiting; resolves with the piece encoded as a one-row-group Parquet file.
   */
  encode(schema: Uint8Array, opts: WriteDataFileOptions, slices: Uint8Array[]): Promise<Uint8Array> {
    const transfer = [...new Set(slices.map((b) => b.buffer as ArrayBuffer))];
    return this.post((piece) => ({ op: 'piece', piece, schema, opts, slices }), transfer).then((r) => r.bytes);
  }

  /**
   * Opens a data file whose rows the workers gather themselves from buffered tables shared with
   * them (a flush's merged output as a gather plan: GatherPiece per row group), encode and
   * return with their FileStats: this thread only sorts, merges and posts row numbers. The file's
   * bytes are those of the same rows added to `open`'s file (or the inline encoder) piece by
   * piece, provided each piece is one row group (`rowGroupSize` rows, the last one fewer).
   */
  openGathered(
    schema: arrow.Schema,
    opts: WriteDataFileOptions,
    sources: arrow.Table[],
    keyFields: DataField[],
  ): GatheredFile {
    dataFileWriterProperties(schema, opts).free();
    if (!this.available)
      throw new InvalidArgumentError(
        'the encoder pool has no worker threads here; encode inline (DataFileStreamWriter)',
      );
    return new GatheredFile(this, schema, opts, sources, keyFields);
  }

  /** Posts a request to the worker with the fewest pieces waiting; resolves with its answer. */
  post(request: (piece: number) => EncoderRequest, transfer: ArrayBuffer[]): Promise<Encoded> {
    if (!this.available)
      return Promise.reject(
        new InvalidArgumentError('the encoder pool has no worker threads here; encode inline (DataFileStreamWriter)'),
      );
    const piece = this.nextPiece++;
    return new Promise<Encoded>((resolve, reject) => {
      this.posted++;
      this.workers.post(this.entry!, this.maxThreads, piece, { resolve, reject }, request(piece), transfer);
    });
  }

  /** `n` pieces were answered (or failed with their worker): room for as many more. */
  private answered(n: number): void {
    for (let i = 0; i < n; i++) {
      this.posted--;
      this.waiting.shift()?.();
    }
  }
}

/**
 * A data file encoded by the pool a row group at a time: rows are cut into the slices the inline
 * encoder would feed parquet-wasm (ADD_SLICE_ROWS from the start of each `add`, and at every row
 * group boundary, where parquet-rs splits a batch), so each row group's pages are the inline
 * encoder's byte for byte; a full row group goes to a worker as one piece while this thread
 * prepares the next, and `finish` splices the pieces (parquet-splice.ts).
 */
class PooledFile implements DataFileEncoder {
  private readonly schemaIPC: Uint8Array;
  private readonly rowGroupSize: number;
  private slices: Uint8Array[] = [];
  private sliceRows = 0;
  private readonly pieces = new FilePieces<Uint8Array>();
  private done = false;

  constructor(
    private readonly pool: EncoderPool,
    schema: arrow.Schema,
    private readonly opts: WriteDataFileOptions,
    /** Called once, when the file is finished or discarded. */
    private readonly closed: () => void,
  ) {
    this.rowGroupSize = opts.rowGroupSize ?? DEFAULT_ROW_GROUP_SIZE;
    this.schemaIPC = arrow.tableToIPC(emptyTable(schema), 'stream');
  }

  async add(rows: arrow.Table): Promise<void> {
    if (this.done) throw new InvalidArgumentError('the data file is finished; open a new writer');
    for (let at = 0; at < rows.numRows; at += ADD_SLICE_ROWS) {
      const end = Math.min(rows.numRows, at + ADD_SLICE_ROWS);
      for (let from = at; from < end; ) {
        const to = Math.min(end, from + (this.rowGroupSize - this.sliceRows));
        this.pieces.check();
        this.slices.push(tableIPCInto(rows.slice(from, to), this.pool.spareBuffer()));
        this.sliceRows += to - from;
        from = to;
        if (this.sliceRows === this.rowGroupSize) await this.post();
      }
    }
  }

  /** Sends the rows gathered so far as the next piece, once the pool has room. */
  private async post(): Promise<void> {
    await this.pool.room();
    this.pieces.check();
    this.pieces.push(this.pool.encode(this.schemaIPC, this.opts, this.slices));
    this.slices = [];
    this.sliceRows = 0;
  }

  async finish(): Promise<Uint8Array> {
    if (this.done) throw new InvalidArgumentError('the data file is finished already');
    this.done = true;
    try {
      return await this.end();
    } finally {
      this.closed();
    }
  }

  private async end(): Promise<Uint8Array> {
    // The last, short row group (or, for a file with no rows, the empty piece the inline encoder
    // would be asked to finish: it fails the same way).
    if (this.sliceRows > 0 || this.pieces.count === 0) await this.post().catch(() => undefined);
    return sealDataFile(spliceParquetFiles(await this.pieces.all())).bytes;
  }

  async discard(): Promise<void> {
    if (this.done) return;
    this.done = true;
    this.slices = [];
    await this.pieces.settled();
    this.closed();
  }
}

/** A piece's answer: its one-row-group Parquet file, and for a gathered piece its statistics. */
interface Encoded {
  bytes: Uint8Array;
  stats?: FileStats;
}

/**
 * A data file whose row groups the workers gather and encode (EncoderPool.openGathered): the
 * buffered tables' columns go to the workers once, in shared memory (shareTable: no copy when the
 * flush gathered them into shared memory already, one copy otherwise); each `add` posts one
 * row group's row numbers, sequence numbers and kinds (their buffers transferred).
 */
export class GatheredFile {
  private readonly schemaIPC: Uint8Array;
  private readonly sources: PackedTable[];
  private readonly pieces = new FilePieces<Encoded>();
  private done = false;

  constructor(
    private readonly pool: EncoderPool,
    schema: arrow.Schema,
    private readonly opts: WriteDataFileOptions,
    sources: arrow.Table[],
    private readonly keyFields: DataField[],
  ) {
    this.schemaIPC = arrow.tableToIPC(emptyTable(schema), 'stream');
    // Only the table's columns: the workers take sequence numbers and kinds from each piece.
    const columns = Array.from({ length: schema.fields.length - 2 }, (_, c) => c);
    this.sources = sources.map((t) => shareTable(t.selectAt(columns)));
  }

  /** Rows per piece: every piece but the last must hold exactly this many (one row group each). */
  get rowGroupSize(): number {
    return this.opts.rowGroupSize ?? DEFAULT_ROW_GROUP_SIZE;
  }

  /** Posts the next row group (its arrays move to the worker), once the pool has room. */
  async add(piece: GatherPiece): Promise<void> {
    if (this.done) throw new InvalidArgumentError('the data file is finished; open a new writer');
    if (piece.row.length === 0) return;
    await this.pool.room();
    this.pieces.check();
    const body: GatherRequest = {
      sources: this.sources,
      source: piece.source,
      row: piece.row,
      sequence: piece.sequence,
      kind: piece.kind,
      keyFields: this.keyFields,
    };
    const transfer = [
      piece.row.buffer,
      piece.sequence.buffer,
      piece.kind.buffer,
      ...(piece.source ? [piece.source.buffer] : []),
    ] as ArrayBuffer[];
    this.pieces.push(
      this.pool.post(
        (n) => ({ op: 'gather', piece: n, schema: this.schemaIPC, opts: this.opts, ...body }),
        [...new Set(transfer)],
      ),
    );
  }

  /** Ends the file: its bytes (the pieces spliced) and each piece's statistics, in order. */
  async finish(): Promise<{ bytes: Uint8Array; stats: FileStats[] }> {
    if (this.done) throw new InvalidArgumentError('the data file is finished already');
    this.done = true;
    if (this.pieces.count === 0)
      throw new InvalidArgumentError('a gathered data file needs at least one row; write an empty file inline');
    const done = await this.pieces.all();
    return {
      bytes: sealDataFile(spliceParquetFiles(done.map((d) => d.bytes))).bytes,
      stats: done.map((d) => d.stats!),
    };
  }

  async discard(): Promise<void> {
    if (this.done) return;
    this.done = true;
    await this.pieces.settled();
  }
}

/** The pieces of one file posted to the pool, in order: the first to fail fails the file. */
class FilePieces<T> {
  private readonly list: Promise<T>[] = [];
  private failure: Error | null = null;

  get count(): number {
    return this.list.length;
  }

  push(piece: Promise<T>): void {
    // A failed piece fails the file: the next add throws, finish rejects with it.
    piece.catch((e: Error) => {
      if (this.failure === null) this.failure = e;
    });
    this.list.push(piece);
  }

  /** Throws the first failure so far. */
  check(): void {
    if (this.failure !== null) throw this.failure;
  }

  /** Every piece's answer, in order, once all are in; the first failure if any failed. */
  async all(): Promise<T[]> {
    const settled = await Promise.allSettled(this.list);
    const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw this.failure ?? failed.reason;
    return settled.map((r) => (r as PromiseFulfilledResult<T>).value);
  }

  /** Waits for every piece, answered or failed (a discarded file). */
  async settled(): Promise<void> {
    await Promise.allSettled(this.list);
  }
}

/** A zero-row table of `schema` (its IPC stream carries the schema to the workers). */
function emptyTable(schema: arrow.Schema): arrow.Table {
  return new arrow.Table(schema, [
    new arrow.RecordBatch(
      schema,
      arrow.makeData({
        type: new arrow.Struct(schema.fields),
        length: 0,
        nullCount: 0,
        children: schema.fields.map((f) => arrow.makeData({ type: f.type, length: 0 })),
      }),
    ),
  ]);
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
export async function configureEncoderPool(
  opts: { threads?: number; minFlushBytes?: number; restart?: boolean } = {},
): Promise<void> {
  const threads = opts.threads ?? defaultEncodeThreads();
  if (!Number.isInteger(threads) || threads < 0 || threads > 64)
    throw new InvalidArgumentError(`encoder threads must be a whole number from 0 to 64, got ${threads}`);
  if (opts.restart) await shared?.close();
  if (shared === null) shared = new EncoderPool(threads);
  else shared.setThreads(threads);
  shared.minFlushBytes = opts.minFlushBytes ?? defaultMinFlushBytes();
}
