/**
 * A least-recently-used map bounded by a total size the caller measures (entries, bytes): a read
 * refreshes an entry, and adding one evicts the least recently used until the total fits. Used by
 * the manifest cache (manifest-file.ts, sized in entries) and the deletion-vector lookup's cache of
 * decoded columns and vectors (table/deletion-lookup.ts, sized in bytes).
 */
export class SizedLru<K, V> {
  private readonly entries = new Map<K, { value: V; size: number }>();
  /** The total size of the entries held. */
  size = 0;

  has(key: K): boolean {
    return this.entries.has(key);
  }

  /** The value of `key`, now the most recently used; undefined when not held. */
  get(key: K): V | undefined {
    const e = this.entries.get(key);
    if (e === undefined) return undefined;
    this.entries.delete(key);
    this.entries.set(key, e);
    return e.value;
  }

  /** Holds `value` (in place of an earlier one) unless it alone is over `limit`; evicts the least recently used until the total fits `limit`. */
  set(key: K, value: V, size: number, limit: number): void {
    const old = this.entries.get(key);
    if (old !== undefined) {
      this.entries.delete(key);
      this.size -= old.size;
    }
    if (size <= limit) {
      this.entries.set(key, { value, size });
      this.size += size;
    }
    for (const [k, e] of this.entries) {
      if (this.size <= limit) break;
      this.entries.delete(k);
      this.size -= e.size;
    }
  }
}
