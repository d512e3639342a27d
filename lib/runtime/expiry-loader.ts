/**
 * Snapshot expiry for the runtime, loaded when lib/maintenance/expire-snapshots is part of the
 * build: the runtime runs without it (nothing expires) rather than failing to start.
 */
import type { Table } from '../table/table';

/** `expireSnapshots(table, opts)` of lib/maintenance/expire-snapshots. */
export type ExpireFn = (table: Table, opts?: Record<string, unknown>) => Promise<unknown>;

/** The expiry action, or null when this build has none. */
export async function loadExpiry(): Promise<ExpireFn | null> {
  // A computed specifier: the module is optional, and bundlers must not insist on it.
  const specifier = '../maintenance/expire-snapshots';
  try {
    const mod = (await import(/* @vite-ignore */ specifier)) as { expireSnapshots?: ExpireFn };
    return typeof mod.expireSnapshots === 'function' ? mod.expireSnapshots : null;
  } catch {
    return null;
  }
}
