/**
 * The scheduled expiry Lambda of a table: removes consumers idle past `consumer.expiration-time`
 * (so they no longer hold snapshots back), expires snapshots by the retention options (never one
 * a live consumer still needs), then deletes orphan files older than `orphan-files.older-than`
 * (1 day by default: a commit in flight may be about to reference a younger one). Each step is
 * lib/maintenance's; a failed step is retried by the next scheduled run.
 *
 * Orphan cleanup never lists the whole table on the frequent schedule: a run finds candidates in
 * the pending journal only (`journal` mode, one LIST of `pending/` when every commit landed). The
 * daily safety-net rule invokes the same function with `{ "orphanScan": true }`: that run lists one
 * bounded slice (`orphan-files.scan.max-keys`) of the table after the marker the previous scan
 * left, so the full scan resumes across days instead of growing with the table
 * (lib/maintenance/remove-orphans.ts).
 */
import type { Context, ScheduledEvent } from 'aws-lambda';
import { expireConsumers } from '../lib/maintenance/expire-consumers.js';
import { expireSnapshots, type ExpireSnapshotsResult } from '../lib/maintenance/expire-snapshots.js';
import { removeOrphanFiles } from '../lib/maintenance/remove-orphans.js';
import type { Env } from './shared/env.js';
import { instrumented, log } from './shared/observability.js';
import { openTable } from './shared/tables.js';

/** What one scheduled run did. */
export interface ExpireResult {
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
}

/** The input of the daily safety-net rule (infra/table.ts); a plain scheduled event runs the journal path. */
export interface OrphanScanEvent {
  orphanScan: true;
}

/** True when `event` asks for the bounded orphan scan. */
export function isOrphanScanEvent(event: unknown): event is OrphanScanEvent {
  return typeof event === 'object' && event !== null && (event as { orphanScan?: unknown }).orphanScan === true;
}

/** Another expiry (a CLI run) or a new consumer changed the table under the run: once more is enough. */
const EXPIRE_ATTEMPTS = 2;

/** The expiry handler for the environment `env`. */
export function createExpireHandler(env: Env = process.env) {
  return async (event: ScheduledEvent | OrphanScanEvent, _context?: Context): Promise<ExpireResult> => {
    const table = await openTable(env, 'expire');
    const consumers = await expireConsumers(table);
    let snapshots: ExpireSnapshotsResult | undefined;
    const expired: number[] = [];
    let deletedFiles = 0;
    for (let attempt = 1; attempt <= EXPIRE_ATTEMPTS; attempt++) {
      snapshots = await expireSnapshots(table, { expireConsumers: false });
      expired.push(...snapshots.expired);
      deletedFiles += snapshots.deletedFiles;
      if (!snapshots.raced) break;
    }
    const orphans = await removeOrphanFiles(table, { mode: isOrphanScanEvent(event) ? 'scan' : 'journal' });
    const result: ExpireResult = {
      expiredConsumers: consumers.expired,
      expiredSnapshots: expired,
      earliest: snapshots?.earliest,
      heldByConsumer: snapshots?.heldByConsumer,
      deletedFiles,
      orphansDeleted: orphans.deleted,
      orphanMode: orphans.mode === 'scan' ? 'scan' : 'journal',
      orphanKeysListed: orphans.listed,
      ...(orphans.mode === 'scan' ? { orphanScanComplete: orphans.cycleComplete } : {}),
    };
    log().info('expiry', { table: table.name, ...result, consumersNeverExpire: consumers.neverExpire && consumers.remaining.length > 0 });
    return result;
  };
}

/** Lambda entry of the expiry function. */
export const handler = instrumented(createExpireHandler());
