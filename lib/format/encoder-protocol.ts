/** The messages between the encoder pool (lib/format/encoder-pool.ts) and its worker threads (encode-worker.ts). */
import type { WriteDataFileOptions } from './data-file.js';

/** An error as it crosses the thread boundary (a structured clone keeps neither class nor fields). */
export interface SerializedError {
  name: string;
  message: string;
  stack?: string;
}

/** Calling thread → worker. `file` numbers the data file within the pool. */
export type EncoderRequest =
  | { op: 'open'; file: number; schema: Uint8Array; opts: WriteDataFileOptions }
  | { op: 'add'; file: number; ipc: Uint8Array; rows: number }
  | { op: 'finish'; file: number }
  | { op: 'discard'; file: number };

/** Worker → calling thread. */
export type EncoderReply =
  | { op: 'added'; file: number }
  | { op: 'finished'; file: number; bytes: Uint8Array }
  | { op: 'failed'; file: number; error: SerializedError }
  | { op: 'discarded'; file: number };
