/**
 * Discovery until caught up: each discovery run plans a bounded number of snapshots, so a
 * scheduled or event-driven discovery goes on run after run until the consumer has planned
 * everything committed, another discovery took over, or its time is up.
 */
import type { Table } from '../table/table.js';
import { discover, type DiscoveryOptions, type DiscoveryResult } from './discovery.js';
import type { SplitQueue } from './split-queue.js';

/** Discovery runs for `consumerId` while `mayGoOn(runsSoFar)` allows; returns every run (at least one). */
export async function discoverUntilCaughtUp(
  table: Table,
  queue: SplitQueue,
  consumerId: string,
  mayGoOn: (runs: number) => boolean,
  opts: DiscoveryOptions = {},
): Promise<DiscoveryResult[]> {
  const runs: DiscoveryResult[] = [];
  for (;;) {
    const result = await discover(table, queue, consumerId, opts);
    runs.push(result);
    if (result.caughtUp || result.lostRace || !mayGoOn(runs.length)) return runs;
  }
}
