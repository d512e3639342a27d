/**
 * A data file written a piece at a time: rows go into parquet-wasm's streaming writer as they
 * come and leave as encoded row groups, so memory holds one row group being encoded and the
 * compressed bytes, never the file's decoded rows (compaction output, which may be hundreds of MB).
 */
import * as arrow from 'apache-arrow';
import { Table as WasmTable, transformParquetStream, type RecordBatch as WasmBatch, type WriterProperties } from 'parquet-wasm';
import { InvalidArgumentError } from '../errors.js';
import { dataFileWriterProperties, type WriteDataFileOptions } from './data-file.js';

interface Pull {
  controller: ReadableStreamDefaultController<WasmBatch>;
  resolve: () => void;
}

/** Writes one Parquet data file from key-sorted pieces; `finish` returns its bytes. */
export class DataFileStreamWriter {
  private readonly parts: Uint8Array[] = [];
  private readonly pulls: Pull[] = [];
  private waiting: ((p: Pull) => void) | null = null;
  private readonly pump: Promise<void>;
  private failure: unknown = null;
  private closed = false;
  private rows = 0;

  private constructor(props: WriterProperties) {
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
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return;
          this.parts.push(value);
        }
      })
      .catch((e) => {
        this.failure = e;
      });
  }

  /** A writer for files of `schema` (the data file layout, checked here). */
  static async open(schema: arrow.Schema, opts: WriteDataFileOptions): Promise<DataFileStreamWriter> {
    return new DataFileStreamWriter(dataFileWriterProperties(schema, opts));
  }

  /** Rows written so far. */
  get rowCount(): number {
    return this.rows;
  }

  /** Appends rows (every piece of one file has the same schema; in key order after everything added before). */
  async add(rows: arrow.Table): Promise<void> {
    if (this.closed) throw new InvalidArgumentError('the data file is finished; open a new writer');
    if (rows.numRows === 0) return;
    const wasm = WasmTable.fromIPCStream(arrow.tableToIPC(rows, 'stream'));
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
    this.rows += rows.numRows;
  }

  /** Ends the file and returns its bytes (footer included). */
  async finish(): Promise<Uint8Array> {
    if (this.closed) throw new InvalidArgumentError('the data file is finished already');
    this.closed = true;
    const pull = await this.nextPull();
    pull.controller.close();
    pull.resolve();
    await this.pump;
    if (this.failure !== null) throw this.failure;
    let size = 0;
    for (const p of this.parts) size += p.byteLength;
    const out = new Uint8Array(size);
    let at = 0;
    for (const p of this.parts) {
      out.set(p, at);
      at += p.byteLength;
    }
    this.parts.length = 0;
    return out;
  }

  /** Ends the file and drops its bytes (a task that will not use it). */
  async discard(): Promise<void> {
    if (this.closed) return;
    // Closing the input ends the encoder cleanly; an error pushed into wasm could trap it.
    await this.finish().catch(() => undefined);
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
