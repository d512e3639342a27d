/**
 * An ObjectStore wrapper that counts requests per operation and per kind of object (snapshot,
 * hint, manifest, data file, …), to report how many object-store requests an operation costs.
 */
import { deleteIfMatch, type ObjectInfo, type ObjectStore, type StoredObject } from '../../lib/store/object-store.js';

/** The store operations, as counted. */
export type CountedOp =
  | 'get'
  | 'getRange'
  | 'head'
  | 'put'
  | 'putIfAbsent'
  | 'putIfMatch'
  | 'list'
  | 'delete'
  | 'deleteIfMatch';

/** Which part of a table an object key belongs to. */
export function keyKind(key: string): string {
  if (/\/snapshot\/(LATEST|EARLIEST)$/.test(key)) return 'hint';
  if (/\/snapshot\//.test(key)) return 'snapshot';
  if (/\/manifest\/manifest-list-/.test(key)) return 'manifest-list';
  if (/\/manifest\//.test(key)) return 'manifest';
  if (/\/bucket-\d+\//.test(key)) return 'data';
  if (/\/schema\//.test(key)) return 'schema';
  if (/\/consumer\//.test(key)) return 'consumer';
  if (/\/commit\/identifier-/.test(key)) return 'identifier-index';
  return 'other';
}

/** Counts every request made through it; `reset()` starts a new count. */
export class CountingStore implements ObjectStore {
  readonly counts = new Map<string, number>();
  total = 0;

  constructor(readonly inner: ObjectStore) {}

  get uri(): string {
    return this.inner.uri;
  }

  private count(op: CountedOp, key: string): void {
    const id = `${op} ${keyKind(key)}`;
    this.counts.set(id, (this.counts.get(id) ?? 0) + 1);
    this.total++;
  }

  /** Forgets every count. */
  reset(): void {
    this.counts.clear();
    this.total = 0;
  }

  /** Counts as a plain object, `op kind` → requests, sorted. */
  snapshot(): Record<string, number> {
    return Object.fromEntries([...this.counts.entries()].sort(([a], [b]) => a.localeCompare(b)));
  }

  get(key: string): Promise<StoredObject> {
    this.count('get', key);
    return this.inner.get(key);
  }

  getRange(key: string, start: number, end: number): Promise<Uint8Array> {
    this.count('getRange', key);
    return this.inner.getRange(key, start, end);
  }

  head(key: string): Promise<(ObjectInfo & { etag: string }) | undefined> {
    this.count('head', key);
    return this.inner.head(key);
  }

  put(key: string, body: Uint8Array): Promise<{ etag: string }> {
    this.count('put', key);
    return this.inner.put(key, body);
  }

  putIfAbsent(key: string, body: Uint8Array): Promise<{ etag: string } | undefined> {
    this.count('putIfAbsent', key);
    return this.inner.putIfAbsent(key, body);
  }

  putIfMatch(key: string, body: Uint8Array, etag: string): Promise<{ etag: string } | undefined> {
    this.count('putIfMatch', key);
    return this.inner.putIfMatch(key, body, etag);
  }

  list(prefix: string): AsyncIterable<ObjectInfo> {
    // One listing may page; counted once per call (a page is 1000 keys on S3).
    this.count('list', prefix);
    return this.inner.list(prefix);
  }

  deleteIfMatch(key: string, etag: string): Promise<boolean> {
    this.count('deleteIfMatch', key);
    return deleteIfMatch(this.inner, key, etag);
  }

  delete(key: string): Promise<void> {
    this.count('delete', key);
    return this.inner.delete(key);
  }
}
