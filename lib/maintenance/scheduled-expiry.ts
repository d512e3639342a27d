/**
 * One scheduled expiry run of a table (the expiry Lambda's and any scheduler's): removes consumers
 * idle past `consumer.expiration-time` (so they no longer hold snapshots back), expires snapshots
 * by the retention options (never one a live consumer still needs), then deletes orphan files
 * older than `orphan-files.older-than`. A failed step is retried by the next scheduled run.
 *
 * Orphan cleanup never lists the whole table on the frequent schedule: a run finds candidates in
 * the pending journal only (`journal` mode, one LIST of `pending/` when every commit landed); the
 * daily safety-net run (`orphanScan`) lists one bounded slice (`orphan-files.scan.max-keys`) of the
 * table after the marker the previous scan left, so the full scan resumes across days instead of
 * growing with the table (remove-orphans.ts).
 */
import { RetryBudget, TryAgain } from '../retry-budget.js';
import type { Table } from '../table/table.js';
import { expireConsumers } from './expire-consumers.js';
import { expireSnapshots, type ExpireSnapshotsResult } from './expire-snapshots.js';
import { removeOrphanFiles } from './remove-orphans.js';

/** What one scheduled run did. */
export interface ScheduledExpiryResult {
  expiredConsumers: string[];
  expiredSnapshots: number[];
  /** The oldest snapshot left, and the consumer holding expiry back, if one does. */
  earliest?: number;
  heldByConsumer?: { id: string; nextSnapshot: number };
  deletedFiles: number;
  orphansDeleted: number;
  /** How this run looked for orphans: the pending journal, or a slice of the resumable scan. */
  orphanMode: 'journal' | 'scan';
  /** Keys the orphan step looked at. */
  orphanKeysListed: number;
  /** `scan`: the listing reached the end of the table (else the next scan resumes after its last key). */
  orphanScanComplete?: boolean;
  /** Consumers are kept forever (no `consumer.expiration-time`) and some exist. */
  consumersNeverExpire: boolean;
}

/** Another expiry (a CLI run) or a new consumer changed the table under the run: once more is enough. */
const EXPIRE_RETRIES = 1;

/** Runs consumer expiry, snapshot expiry and the orphan step (`scan` slice or `journal`) once. */
export async function runScheduledExpiry(table: Table, opts: { orphanScan: boolean }): Promise<ScheduledExpiryResult> {
  const consumers = await expireConsumers(table);
  let snapshots: ExpireSnapshotsResult | undefined;
  const expired: number[] = [];
  let deletedFiles = 0;
  // A run that raced the last time is not retried again: the next scheduled run takes over.
  const budget = new RetryBudget({
    what: `expiring snapshots of ${table.name}`,
    maxRetries: EXPIRE_RETRIES,
    minWaitMs: 0,
    maxWaitMs: 0,
  });
  await budget.run(async (retries) => {
    snapshots = await expireSnapshots(table, { expireConsumers: false });
    expired.push(...snapshots.expired);
    deletedFiles += snapshots.deletedFiles;
    return snapshots.raced && retries < EXPIRE_RETRIES
      ? new TryAgain('another expiry or a new consumer changed the table meanwhile')
      : undefined;
  });
  const orphans = await removeOrphanFiles(table, { mode: opts.orphanScan ? 'scan' : 'journal' });
  return {
    expiredConsumers: consumers.expired,
    expiredSnapshots: expired,
    earliest: snapshots?.earliest,
    heldByConsumer: snapshots?.heldByConsumer,
    deletedFiles,
    orphansDeleted: orphans.deleted,
    orphanMode: orphans.mode === 'scan' ? 'scan' : 'journal',
    orphanKeysListed: orphans.listed,
    ...(orphans.mode === 'scan' ? { orphanScanComplete: orphans.cycleComplete } : {}),
    consumersNeverExpire: consumers.neverExpire && consumers.remaining.length > 0,
  };
}
