/** The messages between the encoder pool (lib/format/encoder-pool.ts) and its worker threads (encode-worker.ts). */
import type { WriteDataFileOptions } from './data-file.js';

/** An error as it crosses the thread boundary (a structured clone keeps neither class nor fields). */
export interface SerializedError {
  name: string;
  message: string;
  stack?: string;
}

/**
 * Calling thread → worker: encode one piece of a data file — its rows as Arrow IPC slices (the
 * batches the inline encoder would feed parquet-wasm) — as a Parquet file of its own. `piece`
 * numbers it within the pool; `schema` is a zero-row IPC stream of the file's schema.
 */
export type EncoderRequest = { op: 'piece'; piece: number; schema: Uint8Array; opts: WriteDataFileOptions; slices: Uint8Array[] };

/** Worker → calling thread. `slices` gives the request's slice buffers back for reuse. */
export type EncoderReply =
  | { op: 'encoded'; piece: number; bytes: Uint8Array; slices: ArrayBuffer[] }
  | { op: 'failed'; piece: number; error: SerializedError };
