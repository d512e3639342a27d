/**
 * A data file written a piece at a time: rows go into parquet-wasm's streaming writer as they
 * come and leave as encoded row groups, so memory holds one row group being encoded and the
 * compressed bytes, never the file's decoded rows (compaction output, which may be hundreds of MB).
 */
import type * as arrow from 'apache-arrow';
import {
  Table as WasmTable,
  transformParquetStream,
  type RecordBatch as WasmBatch,
  type WriterProperties,
} from 'parquet-wasm';
import { InvalidArgumentError } from '../errors.js';
import { concatBytes } from '../store/object-store.js';
import { checksum, ChunkChecksummer, sealDataFile, type DataFileChecksums } from './data-file-checksum.js';
import { dataFileWriterProperties, type WriteDataFileOptions } from './data-file.js';
import { tableIPCInto } from './ipc-buffer.js';

/** Rows copied into wasm per step of `add` (the encoder pool slices the same way: same batches, same bytes). */
export const ADD_SLICE_ROWS = 65_536;

/**
 * The IPC bytes of the slice being copied into wasm, reused by every inline writer of the thread
 * (used only between `tableIPCInto` and the synchronous copy at the start of `addIPC`): no fresh
 * multi-MB buffer per slice (see ipc-buffer.ts).
 */
let scratch: ArrayBuffer | undefined;

interface Pull {
  controller: ReadableStreamDefaultController<WasmBatch>;
  resolve: () => void;
}

/** Where encoded bytes go as they leave the encoder (an object upload); awaited, so a slow sink holds the encoder back. */
export type DataFileByteSink = (bytes: Uint8Array) => Promise<void>;

/**
 * Writes one Parquet data file from key-sorted pieces. Without a sink, `finish` returns its
 * bytes; with one, every encoded row group goes to the sink at once and `end` returns the size.
 * The file carries its column chunk checksums (data-file-checksum.ts), and `footerCrc32` is the
 * checksum its manifest entry records; a piece for the encoder pool (`sealed` false) carries none:
 * the spliced file is sealed.
 */
export class DataFileStreamWriter {
  private readonly parts: Uint8Array[] = [];
  private readonly pulls: Pull[] = [];
  private waiting: ((p: Pull) => void) | null = null;
  private readonly pump: Promise<void>;
  private failure: unknown = null;
  private closed = false;
  private rows = 0;
  private bytes = 0;
  private sums: DataFileChecksums | undefined;

  private constructor(
    props: WriterProperties,
    private readonly sink: DataFileByteSink | undefined,
    private readonly sealed: boolean,
  ) {
    // highWaterMark 0: the encoder asks for a batch only when it wants one, and every batch is
    // handed over by `add` at that moment, so nothing queues up in front of it. The encoder asks
    // for the first batch (for the schema) before it returns its output stream.
    const input = new ReadableStream<WasmBatch>(
      {
        pull: (controller) =>
          new Promise<void>((resolve) => {
            const p = { controller, resolve };
            const w = this.waiting;
            if (w) {
              this.waiting = null;
              w(p);
            } else this.pulls.push(p);
          }),
      },
      { highWaterMark: 0 },
    );
    // transformParquetStream takes ownership of the properties handle.
    this.pump = transformParquetStream(input, props)
      .then(async (output) => {
        const reader = (output as ReadableStream<Uint8Array>).getReader();
        const sink = this.sink;
        // Streamed, the last piece is held back until the end: it holds the footer, which gets the chunk checksums.
        const sums = sink && this.sealed ? new ChunkChecksummer() : undefined;
        let held: Uint8Array | undefined;
        let fileCrc: number | undefined;
        const send = async (bytes: Uint8Array) => {
          fileCrc = checksum(bytes, fileCrc);
          await sink!(bytes);
        };
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          this.bytes += value.byteLength;
          if (!sink) {
            this.parts.push(value);
            continue;
          }
          sums?.push(value);
          const out = sums ? held : value;
          held = sums ? value : undefined;
          if (out === undefined) continue;
          try {
            await send(out);
          } catch (e) {
            // A failed sink ends the encoder: cancelling its output drops the wasm future (and the
            // row group it holds), which otherwise waits for its next batch forever.
            await reader.cancel(e).catch(() => undefined);
            throw e;
          }
        }
        if (sink && sums && held !== undefined) {
          const { head, footer, footerCrc32 } = sums.seal(held);
          this.bytes += footer.length - (held.length - head.length);
          if (head.length > 0) await send(head);
          await send(footer);
          this.sums = { footerCrc32, fileCrc32: fileCrc! };
        }
      })
      .catch((e) => {
        this.failure = e;
        this.parts.length = 0;
        // Requests for batches the encoder will never read: settle them.
        for (const p of this.pulls.splice(0)) {
          try {
            p.controller.close();
          } catch {
            // the input stream was cancelled with the encoder
          }
          p.resolve();
        }
      });
  }

  /** A writer for files of `schema` (the data file layout, checked here). */
  static async open(
    schema: arrow.Schema,
    opts: WriteDataFileOptions,
    sink?: DataFileByteSink,
    sealed = true,
  ): Promise<DataFileStreamWriter> {
    return new DataFileStreamWriter(dataFileWriterProperties(schema, opts), sink, sealed);
  }

  /** The checksums of the finished file its manifest entry records; undefined before the end, or for an unsealed piece. */
  get checksums(): DataFileChecksums | undefined {
    return this.sums;
  }

  /** Rows written so far. */
  get rowCount(): number {
    return this.rows;
  }

  /** Appends rows (every piece of one file has the same schema; in key order after everything added before). */
  async add(rows: arrow.Table): Promise<void> {
    if (this.closed) throw new InvalidArgumentError('the data file is finished; open a new writer');
    // A slice at a time: wasm linear memory never shrinks, so a large piece copied in whole
    // would raise the process's memory for good.
    for (let at = 0; at < rows.numRows; at += ADD_SLICE_ROWS) {
      const slice = rows.slice(at, Math.min(rows.numRows, at + ADD_SLICE_ROWS));
      // Into the one scratch buffer: addIPC copies it into wasm before it first awaits.
      const ipc = tableIPCInto(slice, scratch);
      scratch = ipc.buffer as ArrayBuffer;
      await this.addIPC(ipc, slice.numRows);
    }
  }

  /** Appends `rows` rows given as Arrow IPC stream bytes (what `add` makes of each slice; an encoder worker receives these). */
  async addIPC(ipc: Uint8Array, rows: number): Promise<void> {
    if (this.closed) throw new InvalidArgumentError('the data file is finished; open a new writer');
    const wasm = WasmTable.fromIPCStream(ipc);
    let batches: WasmBatch[];
    try {
      batches = wasm.recordBatches();
    } finally {
      wasm.free();
    }
    for (const b of batches) {
      const pull = await this.nextPull();
      pull.controller.enqueue(b);
      pull.resolve();
    }
    this.rows += rows;
  }

  /** Ends the file and returns its bytes (footer included); a writer without a sink. */
  async finish(): Promise<Uint8Array> {
    if (this.sink) throw new InvalidArgumentError('this data file streams to a sink: end it with end()');
    await this.close();
    const out = concatBytes(this.parts, this.bytes);
    this.parts.length = 0;
    if (!this.sealed) return out;
    const file = sealDataFile(out);
    this.sums = { footerCrc32: file.footerCrc32, fileCrc32: file.fileCrc32 };
    return file.bytes;
  }

  /** Ends the file (its last bytes, the footer, go to the sink) and returns its size in bytes. */
  async end(): Promise<number> {
    if (!this.sink) throw new InvalidArgumentError('this data file has no sink: end it with finish()');
    await this.close();
    return this.bytes;
  }

  private async close(): Promise<void> {
    if (this.closed) throw new InvalidArgumentError('the data file is finished already');
    this.closed = true;
    const pull = await this.nextPull();
    pull.controller.close();
    pull.resolve();
    await this.pump;
    if (this.failure !== null) throw this.failure;
  }

  /** Ends the file and drops its bytes (a task that will not use it). */
  async discard(): Promise<void> {
    if (this.closed) return;
    // Closing the input ends the encoder cleanly; an error pushed into wasm could trap it.
    await this.close().catch(() => undefined);
    this.parts.length = 0;
  }

  /** The encoder's next request for a batch; fails if the encoder failed. */
  private async nextPull(): Promise<Pull> {
    if (this.failure !== null) throw this.failure;
    const queued = this.pulls.shift();
    if (queued) return queued;
    const pull = new Promise<Pull>((resolve) => (this.waiting = resolve));
    const failed = this.pump.then(() => {
      throw this.failure ?? new InvalidArgumentError('the Parquet encoder stopped before the file was finished');
    });
    return Promise.race([pull, failed]);
  }
}
