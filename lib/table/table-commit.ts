/**
 * Every commit of a table goes through here: the one commit loop (lib/snapshot/commit.ts
 * runCommit) with the table's commit settings, the table's commit hooks around every action
 * (commit-hooks.ts: inline compaction, the Iceberg export), and the in-process commit event
 * (commit-events.ts) published once per new snapshot.
 */
import {
  runCommit,
  type CommitAction,
  type CommitLoopHooks,
  type CommitOptions,
  type CommitRequest,
  type CommitResult,
} from '../snapshot/commit.js';
import type { CommitActionName } from '../snapshot/commit-action.js';
import { publishCommit } from './commit-events.js';
import type { CommitInfo, TouchedBucket } from './commit-hooks.js';
import { commitOptionsFor } from './commit-options.js';
import type { Table } from './table.js';

/**
 * Commits `action` to `table` through the one loop, with the table's hooks; see the file comment.
 * `hooksOn`: the table the after-commit hooks see, when the action changes it (an alter: its new
 * schema and options, so the export of its own commit already follows them).
 */
export async function commitToTable(
  table: Table,
  action: CommitAction,
  overrides: Partial<CommitOptions> = {},
  hooksOn: () => Table = () => table,
): Promise<CommitResult> {
  const info = (name: string, changes: CommitRequest): CommitInfo => ({
    action: name as CommitActionName,
    kind: changes.kind,
    touched: touchedBy(changes),
  });
  const hooks: CommitLoopHooks = {
    before: (name, changes) => table.commitHooks.beforeCommit(table, info(name, changes)),
    after: async (name, snapshot, changes) => {
      // Streams learn of the commit at once, not at the next poll.
      publishCommit({ warehouse: table.store.uri, table: table.name, snapshot });
      const at = hooksOn();
      await at.commitHooks.afterCommit(at, snapshot, info(name, changes));
    },
  };
  return runCommit(table.store, table.path, action, commitOptionsFor(table, { ...overrides, hooks }));
}

/** The (partition, bucket) pairs a commit adds data or changelog files to. */
export function touchedBy(
  changes: Pick<CommitRequest, 'batches' | 'compactAfter' | 'compactChangelog'>,
): TouchedBucket[] {
  const seen = new Map<string, TouchedBucket>();
  const files = [
    ...(changes.batches ?? []).flatMap((b) => [...b.newFiles, ...b.changelogFiles]),
    ...(changes.compactAfter ?? []),
    ...(changes.compactChangelog ?? []),
  ];
  for (const c of files)
    seen.set(JSON.stringify([c.partition, c.bucket]), { partition: c.partition, bucket: c.bucket });
  return [...seen.values()];
}
