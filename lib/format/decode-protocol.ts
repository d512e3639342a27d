/** The messages between the decode pool (lib/format/decode-pool.ts) and its worker threads (decode-worker.ts). */
import type { SerializedError } from './encoder-protocol.js';

/** Calling thread → worker: decode `columns` of the one-row-group Parquet file `blob` (rowGroupFile). */
export interface DecodeRequest {
  id: number;
  blob: Blob;
  columns: string[];
  rows: number;
}

/** Worker → calling thread: the Arrow IPC stream of the row group (buffer transferred), or the error. */
export type DecodeReply = { id: number; ipc: Uint8Array } | { id: number; error: SerializedError };
