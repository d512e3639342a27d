/**
 * `Snapshot Committed` events on EventBridge: put after every commit a function makes, so that
 * each consumer's discovery runs at once instead of waiting for its one-minute schedule (DESIGN.md,
 * "Streaming on AWS"). The schedule stays the backstop for an event that is lost.
 */
import { PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { VarveError } from '../errors.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import { eventBridgeClient } from './clients.js';
import { SNAPSHOT_COMMITTED, VARVE_EVENT_SOURCE } from '../aws-contract.js';
import { log } from './telemetry.js';

/** The detail-type of the event put after each commit (declared in lib/aws-contract.ts). */
export { SNAPSHOT_COMMITTED };

/** The detail of a `Snapshot Committed` event. */
export interface SnapshotCommittedDetail {
  /** `database.table`. */
  table: string;
  snapshotId: number;
  commitKind: Snapshot['commitKind'];
  /** The snapshot carries changelog files: a COMPACT snapshot without them gives no consumer anything. */
  changelog: boolean;
}

/** Puts one `Snapshot Committed` event on `busName`; throws when EventBridge refuses it. */
async function putSnapshotCommitted(busName: string, table: string, snapshot: Snapshot): Promise<void> {
  const detail: SnapshotCommittedDetail = {
    table,
    snapshotId: snapshot.id,
    commitKind: snapshot.commitKind,
    changelog: snapshot.changelogManifestList !== undefined,
  };
  const r = await eventBridgeClient().send(
    new PutEventsCommand({
      Entries: [
        {
          EventBusName: busName,
          Source: VARVE_EVENT_SOURCE,
          DetailType: SNAPSHOT_COMMITTED,
          Detail: JSON.stringify(detail),
        },
      ],
    }),
  );
  if (r.FailedEntryCount) {
    const e = r.Entries?.find((x) => x.ErrorCode);
    throw new VarveError(
      `EventBridge refused the Snapshot Committed event of ${table} snapshot ${snapshot.id}: ${e?.ErrorCode} ${e?.ErrorMessage}`,
      {
        kind: 'unavailable',
        retryable: true,
      },
    );
  }
}

/**
 * Puts the event, best effort: the commit has landed either way, and discovery's schedule finds
 * the snapshot when the event is lost.
 */
export async function announceSnapshotCommitted(busName: string, table: string, snapshot: Snapshot): Promise<void> {
  try {
    await putSnapshotCommitted(busName, table, snapshot);
  } catch (e) {
    log().warn('the Snapshot Committed event was not put; discovery will find the snapshot on its schedule', {
      table,
      snapshotId: snapshot.id,
      error: e as Error,
    });
  }
}
