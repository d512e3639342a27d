/**
 * A store seen by another process: the same objects behind an object of its own. Writers that
 * share a store object share its group committer (lib/table/shared-committer.ts) and never race
 * each other; through separate views they race as separate processes do.
 */
import type { MemoryStore } from '../../lib/store/memory-store.js';
import type { ObjectStore } from '../../lib/store/object-store.js';

/** `store` behind an object of its own (same objects, another identity). */
export function processView(store: MemoryStore): ObjectStore {
  return {
    uri: store.uri,
    get: (k) => store.get(k),
    getRange: (k, a, b) => store.getRange(k, a, b),
    head: (k) => store.head(k),
    put: (k, b) => store.put(k, b),
    putIfAbsent: (k, b) => store.putIfAbsent(k, b),
    putIfMatch: (k, b, e) => store.putIfMatch(k, b, e),
    deleteIfMatch: (k, e) => store.deleteIfMatch(k, e),
    delete: (k) => store.delete(k),
    list: (p, o) => store.list(p, o),
  };
}
