/**
 * The pending area of a table (`pending/pending-<hash>.json`): a writer that hands its batch to the
 * group commit (the commit queue) first registers the batch's files here. Until the batch is
 * committed its files are referenced by no snapshot, and its message may wait in the commit queue
 * or its dead-letter queue for days: orphan cleanup keeps every file a registration younger than
 * `orphan-files.pending-time-retained` lists (longer than the dead-letter queue's retention), and
 * the group commit releases the registrations of the batches it committed.
 */
import { createHash } from 'node:crypto';
import * as v from 'valibot';
import { runLimited } from '../concurrency.js';
import { ObjectNotFoundError } from '../errors.js';
import type { CommitBatch } from '../snapshot/commit.js';
import { jsonTime, type JsonSchema } from '../json.js';
import { parseJsonObject } from '../store/json-file.js';
import { listAll, utf8 } from '../store/object-store.js';
import { batchFileKeys } from './append-commit.js';
import type { Table } from './table.js';

/** The folder of the pending area under a table. */
export const PENDING_DIR = 'pending';

/** A registration: the batch's identifier and its files' keys. */
export interface PendingBatch {
  commitIdentifier: string;
  files: string[];
  /** The sources whose rows the batch holds: queued, so a redelivered source is not written again. */
  sources?: string[];
  /**
   * The batch's commit message as sent (encodeCommitMessage), absent in older writers'
   * registrations: a writer that stopped between this registration and the send never sent it,
   * and the redelivery of its input, which finds its sources here, sends it (ingested-sources.ts).
   */
  message?: string;
  registeredAt: number;
}

const PendingBatchSchema: JsonSchema<PendingBatch> = v.looseObject({
  commitIdentifier: v.string(),
  files: v.array(v.string()),
  sources: v.optional(v.array(v.string())),
  message: v.optional(v.string()),
  registeredAt: jsonTime,
});

/** The key of the registration of batch `commitIdentifier` (identifiers may hold any character, so it is hashed). */
export function pendingKey(table: Table, commitIdentifier: string): string {
  return `${table.path}/${PENDING_DIR}/pending-${createHash('sha256').update(commitIdentifier).digest('hex').slice(0, 40)}.json`;
}

/** Registers `batch`'s files as pending under `commitIdentifier` (before its commit message is sent). */
export async function registerPending(
  table: Table,
  commitIdentifier: string,
  batch: CommitBatch,
  opts: { sources?: readonly string[]; message?: string; now?: number } = {},
): Promise<void> {
  const entry: PendingBatch = {
    commitIdentifier,
    files: batchFileKeys(table, [batch]),
    ...(opts.sources?.length ? { sources: [...opts.sources] } : {}),
    ...(opts.message !== undefined ? { message: opts.message } : {}),
    registeredAt: opts.now ?? Date.now(),
  };
  await table.store.put(pendingKey(table, commitIdentifier), utf8(JSON.stringify(entry)));
}

/** Removes the registrations of batches that are committed now (their snapshot references the files). */
export async function releasePending(table: Table, commitIdentifiers: readonly string[]): Promise<void> {
  await runLimited(
    commitIdentifiers.map((id) => () => table.store.delete(pendingKey(table, id))),
    8,
  );
}

/** Every registration of the table, with its object's key and age. */
export async function listPending(
  table: Table,
): Promise<Array<{ key: string; lastModified: number; size: number; batch?: PendingBatch }>> {
  const objects = await listAll(table.store, `${table.path}/${PENDING_DIR}/`);
  return runLimited(
    objects.map((o) => async () => {
      try {
        return {
          key: o.key,
          lastModified: o.lastModified,
          size: o.size,
          batch: parseJsonObject(table.store, o.key, (await table.store.get(o.key)).body, PendingBatchSchema),
        };
      } catch (e) {
        // Released since the listing: it protects nothing any more.
        if (e instanceof ObjectNotFoundError) return { key: o.key, lastModified: o.lastModified, size: o.size };
        throw e;
      }
    }),
    8,
  );
}

/** The keys of `batch`'s files that do not exist. */
export async function missingFiles(table: Table, batch: CommitBatch): Promise<string[]> {
  const keys = batchFileKeys(table, [batch]);
  const present = await runLimited(
    keys.map((k) => async () => (await table.store.head(k)) !== undefined),
    16,
  );
  return keys.filter((_, i) => !present[i]);
}
