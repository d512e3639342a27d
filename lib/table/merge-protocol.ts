/** The messages between the merge pool (merge-pool.ts) and its worker threads (merge-worker.ts). */
import type { PackedTable } from '../format/arrow-transfer.js';
import type { SerializedError } from '../format/encoder-protocol.js';
import type { ManifestEntry } from '../manifest/types.js';
import type { TableSchema } from '../schema/types.js';

/** Calling thread → worker: merge one section (the files of one bucket whose key ranges overlap). */
export interface MergeRequest {
  op: 'merge';
  id: number;
  name: string;
  path: string;
  schema: TableSchema;
  entries: ManifestEntry[];
  dropDeletes: boolean;
  /** Leave `_SEQUENCE_NUMBER` out of the merged section (read.ts SectionOptions). */
  dropSequence: boolean;
  /**
   * The table's store is a LocalStore over this folder: the worker reads the files itself (one
   * handle per file, as the inline read), asking the calling thread only for a range it failed to read.
   */
  folder?: string;
}

/** Calling thread → worker: the bytes of a range read the worker asked for, or the store's error. */
export type BytesReply =
  | { op: 'bytes'; read: number; bytes: Uint8Array }
  | { op: 'bytes'; read: number; error: SerializedError };

export type ToMergeWorker = MergeRequest | BytesReply;

/** Worker → calling thread: read bytes [start, end) of `key` from the table's store for task `id`. */
export interface ReadRequest {
  op: 'read';
  id: number;
  read: number;
  key: string;
  start: number;
  end: number;
}

/** Worker → calling thread: the merged section (buffers transferred), or the error. */
export type MergeReply =
  | { op: 'merged'; id: number; table: PackedTable }
  | { op: 'failed'; id: number; error: SerializedError };

export type FromMergeWorker = ReadRequest | MergeReply;
