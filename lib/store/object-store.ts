/**
 * The one storage interface of varve. Keys are relative, '/'-separated paths under the store's
 * root (e.g. `db.db/orders/snapshot/snapshot-3`). Nothing above lib/store knows which store it
 * talks to: a local folder, S3, or memory.
 */
import { InvalidArgumentError, ObjectNotFoundError } from '../errors.js';

/** Listing entry. `lastModified` is epoch milliseconds. */
export interface ObjectInfo {
  key: string;
  size: number;
  lastModified: number;
}

/** An object's bytes and its opaque etag (pass it back unchanged to `putIfMatch`). */
export interface StoredObject {
  body: Uint8Array;
  etag: string;
  lastModified: number;
}

/** Options of {@link ObjectStore.list}. */
export interface ListOptions {
  /** Only keys that sort after this one (in key order). */
  startAfter?: string;
}

export interface ObjectStore {
  /** Human-readable location of the root, e.g. `file:///tmp/wh` or `s3://bucket/prefix`. */
  readonly uri: string;

  /** Reads a whole object. Throws `ObjectNotFoundError` when the key does not exist. */
  get(key: string): Promise<StoredObject>;

  /** Reads bytes [start, end) of an object (for Parquet footers). Throws `ObjectNotFoundError`. */
  getRange(key: string, start: number, end: number): Promise<Uint8Array>;

  /**
   * Opens an object for many ranged reads through one handle (a local file: one open and one stat
   * for all of them, not one per range). Every read sees the version that was opened: an object
   * put over the key meanwhile is not seen (the replaced file stays readable until closed), so a
   * reader never mixes two versions. Throws `ObjectNotFoundError` when the key does not exist.
   * Optional: callers go through {@link openRanges}, which falls back to one `getRange` per read.
   */
  openRanges?(key: string): Promise<RangeReader>;

  /** Size, etag and mtime of an object, or undefined when it does not exist. */
  head(key: string): Promise<(ObjectInfo & { etag: string }) | undefined>;

  /** Writes an object unconditionally (last writer wins). Returns the new etag. */
  put(key: string, body: Uint8Array): Promise<{ etag: string }>;

  /**
   * Creates an object only if the key does not exist, atomically; a reader never sees a partial
   * object. Returns the etag, or `undefined` when the key already existed (the race was lost).
   * Throws `ConditionalRequestConflictError` (retryable) when the store reports a concurrent
   * conditional request (S3 409).
   */
  putIfAbsent(key: string, body: Uint8Array): Promise<{ etag: string } | undefined>;

  /**
   * Replaces an object only if its current etag equals `etag` (compare-and-swap). Returns the new
   * etag, or `undefined` when the etag no longer matches. Throws `ObjectNotFoundError` when the key
   * does not exist, `ConditionalRequestConflictError` on S3 409.
   */
  putIfMatch(key: string, body: Uint8Array, etag: string): Promise<{ etag: string } | undefined>;

  /**
   * Lists every object whose key starts with `prefix`, in key order, paging internally; with
   * `startAfter`, only the keys after it (S3's StartAfter: a resumed listing does not page through
   * what an earlier one covered). Stop iterating to stop paging.
   */
  list(prefix: string, opts?: ListOptions): AsyncIterable<ObjectInfo>;

  /** Deletes an object; deleting a missing key is not an error. */
  delete(key: string): Promise<void>;

  /**
   * Starts writing an object a part at a time (a large data file), so its bytes need not be held
   * whole: nothing is visible under `key` until `complete`, which publishes it like `put`
   * (unconditional, for keys that no one else writes). Optional: `openUpload` falls back to
   * collecting the parts and one `put` for a store without it.
   */
  upload?(key: string): ObjectUpload;

  /**
   * Deletes an object only if its current etag equals `etag` (S3 DeleteObject with If-Match), so
   * that a version written since it was read is never removed. Returns false when the etag no
   * longer matches or the object is gone. Optional for wrappers: callers go through
   * {@link deleteIfMatch}, which falls back to a re-check then delete (not atomic) without it.
   */
  deleteIfMatch?(key: string, etag: string): Promise<boolean>;

  /**
   * Calls `onChange` soon after an object directly under the folder `prefix` (ending in `/`) is
   * created, replaced or deleted — possibly more than once, possibly for nothing — until the
   * returned function is called. Optional: a store that cannot notify (S3) leaves it out, and
   * callers keep polling. A notification is a hint to look, never the change itself.
   */
  watch?(prefix: string, onChange: () => void): () => void;
}

/** Ranged reads of one object (see {@link ObjectStore.openRanges}); `close` it when done, also after an error. */
export interface RangeReader {
  /** The object's size in bytes. */
  readonly size: number;
  /** Bytes [start, end) of the object, clamped to its size as `getRange`; throws once closed. */
  read(start: number, end: number): Promise<Uint8Array>;
  /** Releases the handle (after the reads in flight); safe more than once, never throws. */
  close(): Promise<void>;
}

/**
 * Opens `key` of `store` for ranged reads: through the store's own handle when it has one (a local
 * file), else each read is a `getRange` of the object as it is then (S3, wrappers: with immutable
 * data files the same bytes). `size`, when the caller knows it (a manifest entry), saves the
 * fallback its head; the store's own handle reports the size it opened.
 */
export async function openRanges(store: ObjectStore, key: string, size?: number): Promise<RangeReader> {
  if (store.openRanges) return store.openRanges(key);
  let objectSize = size;
  if (objectSize === undefined) {
    const head = await store.head(key);
    if (head === undefined) throw new ObjectNotFoundError(key);
    objectSize = head.size;
  }
  let closed = false;
  return {
    size: objectSize,
    read: async (start, end) => {
      if (closed) throw closedReaderError(key);
      return store.getRange(key, start, end);
    },
    close: async () => {
      closed = true;
    },
  };
}

/** The error of a read through a closed RangeReader of `key`. */
export function closedReaderError(key: string): InvalidArgumentError {
  return new InvalidArgumentError(`the range reader of ${key} is closed; open the object again to read it`);
}

/** An object being written a part at a time (see {@link ObjectStore.upload}). */
export interface ObjectUpload {
  /** Appends bytes after everything written before. The caller may reuse nothing: the bytes are the upload's now. */
  write(bytes: Uint8Array): Promise<void>;
  /** Publishes the object; returns its etag and size. After a failure here the object may or may not exist. */
  complete(): Promise<{ etag: string; size: number }>;
  /** Drops what was written and leaves `key` untouched; safe after a failure and more than once. */
  abort(): Promise<void>;
}

/** A part-at-a-time upload to `store`: its own when it has one, else parts collected and one `put` at the end. */
export function openUpload(store: ObjectStore, key: string): ObjectUpload {
  if (store.upload) return store.upload(key);
  let parts: Uint8Array[] = [];
  let size = 0;
  return {
    write: async (bytes) => {
      parts.push(bytes);
      size += bytes.byteLength;
    },
    complete: async () => {
      const body = concatBytes(parts, size);
      parts = [];
      const { etag } = await store.put(key, body);
      return { etag, size };
    },
    abort: async () => {
      parts = [];
    },
  };
}

/** The bytes of `parts` end to end (`size`: their total length). */
export function concatBytes(parts: Uint8Array[], size: number): Uint8Array {
  if (parts.length === 1) return parts[0];
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

/**
 * Deletes `key` only if its etag is still `etag`: atomically when the store supports it (every
 * store of lib/store does), else by a head, a compare and a delete (a write between the two is lost).
 */
export async function deleteIfMatch(store: ObjectStore, key: string, etag: string): Promise<boolean> {
  if (store.deleteIfMatch) return store.deleteIfMatch(key, etag);
  if ((await store.head(key))?.etag !== etag) return false;
  await store.delete(key);
  return true;
}

/** Collects `store.list(prefix)` into an array. */
export async function listAll(store: ObjectStore, prefix: string): Promise<ObjectInfo[]> {
  const out: ObjectInfo[] = [];
  for await (const o of store.list(prefix)) out.push(o);
  return out;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** UTF-8 bytes of a string. */
export function utf8(text: string): Uint8Array {
  return encoder.encode(text);
}

/** A string from UTF-8 bytes. */
export function fromUtf8(bytes: Uint8Array): string {
  return decoder.decode(bytes);
}

/**
 * The absolute URI of object `key` (`s3://bucket/prefix/key`, `file:///root/key`): how Iceberg
 * metadata, and the `referenced-data-file` of a deletion vector, name a file.
 */
export function objectUri(store: ObjectStore, key: string): string {
  return `${store.uri.replace(/\/+$/, '')}/${key}`;
}
