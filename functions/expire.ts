/**
 * The scheduled expiry Lambda of a table: one run of lib/maintenance/scheduled-expiry.ts (idle
 * consumers, snapshots by the retention options, orphans). The 15-minute rule runs the orphan step
 * on the pending journal only; the daily safety-net rule invokes the same function with
 * `{ "orphanScan": true }` for one bounded, resumable slice of the table-wide scan.
 */
import type { Context, ScheduledEvent } from 'aws-lambda';
import { runScheduledExpiry, type ScheduledExpiryResult } from '../lib/maintenance/scheduled-expiry.js';
import type { Env } from '../lib/aws/env.js';
import { instrumented, log } from './shared/observability.js';
import { openTable } from '../lib/aws/tables.js';

/** What one scheduled run did. */
export type ExpireResult = Omit<ScheduledExpiryResult, 'consumersNeverExpire'>;

/** The input of the daily safety-net rule (infra/table.ts); a plain scheduled event runs the journal path. */
export interface OrphanScanEvent {
  orphanScan: true;
}

/** True when `event` asks for the bounded orphan scan. */
export function isOrphanScanEvent(event: unknown): event is OrphanScanEvent {
  return typeof event === 'object' && event !== null && (event as { orphanScan?: unknown }).orphanScan === true;
}

/** The expiry handler for the environment `env`. */
export function createExpireHandler(env: Env = process.env) {
  return async (event: ScheduledEvent | OrphanScanEvent, _context?: Context): Promise<ExpireResult> => {
    const table = await openTable(env, 'expire');
    const { consumersNeverExpire, ...result } = await runScheduledExpiry(table, {
      orphanScan: isOrphanScanEvent(event),
    });
    log().info('expiry', { table: table.name, ...result, consumersNeverExpire });
    return result;
  };
}

/** Lambda entry of the expiry function. */
export const handler = instrumented(createExpireHandler());
