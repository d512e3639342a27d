/**
 * The scheduled expiry Lambda of a table: removes consumers idle past `consumer.expiration-time`
 * (so they no longer hold snapshots back), expires snapshots by the retention options (never one
 * a live consumer still needs), then deletes orphan files older than `orphan-files.older-than`
 * (1 day by default: a commit in flight may be about to reference a younger one). Each step is
 * lib/maintenance's; a failed step is retried by the next scheduled run.
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
}

/** Another expiry (a CLI run) or a new consumer changed the table under the run: once more is enough. */
const EXPIRE_ATTEMPTS = 2;

/** The expiry handler for the environment `env`. */
export function createExpireHandler(env: Env = process.env) {
  return async (_event: ScheduledEvent, _context?: Context): Promise<ExpireResult> => {
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
    const orphans = await removeOrphanFiles(table);
    const result: ExpireResult = {
      expiredConsumers: consumers.expired,
      expiredSnapshots: expired,
      earliest: snapshots?.earliest,
      heldByConsumer: snapshots?.heldByConsumer,
      deletedFiles,
      orphansDeleted: orphans.deleted,
    };
    log().info('expiry', { table: table.name, ...result, consumersNeverExpire: consumers.neverExpire && consumers.remaining.length > 0 });
    return result;
  };
}

/** Lambda entry of the expiry function. */
export const handler = instrumented(createExpireHandler());
