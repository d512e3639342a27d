/**
 * In-process notifications of commits, so that the local runtime can react to a commit at once
 * (discovery right after each commit) instead of polling. On AWS the same role is played by the
 * EventBridge event the commit function publishes.
 */
import type { Snapshot } from '../snapshot/snapshot.js';

export interface CommitEvent {
  /** Warehouse URI of the table's store. */
  warehouse: string;
  /** `database.table`. */
  table: string;
  snapshot: Snapshot;
}

type Listener = (e: CommitEvent) => void;

const listeners = new Set<Listener>();

/** Calls `listener` after every commit made in this process; returns the unsubscribe function. */
export function onCommit(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** Tells every listener about a commit; a failing listener never fails the commit. */
export function publishCommit(e: CommitEvent): void {
  for (const l of listeners) {
    try {
      l(e);
    } catch {
      // A listener's failure is its own business: the commit has landed either way.
    }
  }
}
