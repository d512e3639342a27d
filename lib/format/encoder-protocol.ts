/** The messages between the encoder pool (lib/format/encoder-pool.ts) and its worker threads (encode-worker.ts). */
import type { DataField } from '../schema/types.js';
import type { PackedTable } from './arrow-transfer.js';
import type { WriteDataFileOptions } from './data-file.js';
import type { FileStats } from './file-stats.js';

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
export type EncoderRequest =
  | { op: 'piece'; piece: number; schema: Uint8Array; opts: WriteDataFileOptions; slices: Uint8Array[] }
  | ({ op: 'gather'; piece: number; schema: Uint8Array; opts: WriteDataFileOptions } & GatherRequest);

/**
 * A piece the worker gathers before it encodes it (gather-piece.ts): `sources` are the buffered
 * tables' columns (the table's own, without the system columns; one batch each) in shared memory
 * (arrow-transfer.ts shareTable), which every piece of the file reads; the piece's rows are named
 * by `source`/`row` with their sequence numbers and kinds. The worker returns the piece's
 * FileStats (`keyFields`) with its bytes.
 */
export interface GatherRequest {
  sources: PackedTable[];
  source: Uint16Array | null;
  row: Uint32Array;
  sequence: BigInt64Array;
  kind: Int8Array;
  keyFields: DataField[];
}

/** Worker → calling thread. `slices` gives the request's slice buffers back for reuse. */
export type EncoderReply =
  | { op: 'encoded'; piece: number; bytes: Uint8Array; slices: ArrayBuffer[]; stats?: FileStats }
  | { op: 'failed'; piece: number; error: SerializedError };
