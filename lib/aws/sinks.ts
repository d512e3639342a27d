/**
 * The built-in sinks of the reader function (VARVE_SINK): another varve table (`table:<db.table>`,
 * written the way ingest writes: direct commit or the target's commit queue) and an EventBridge
 * bus (`eventbridge:<bus>`, one `Row Changed` event per change). Users plug their own sink with
 * `createStreamHandler(async changes => …)` from functions/shared/stream-handler.ts instead.
 */
import { PutEventsCommand, type PutEventsRequestEntry } from '@aws-sdk/client-eventbridge';
import { InvalidArgumentError, VarveError } from '../errors.js';
import { toDisplayValue } from '../schema/values.js';
import type { ChangeBatch, StreamSink } from '../stream/delivery.js';
import { changesOf, rowsForTarget } from '../stream/sinks.js';
import type { Table } from '../table/table.js';
import { eventBridgeClient } from './clients.js';
import { VARVE_EVENT_SOURCE } from '../aws-contract.js';
import { landRows } from '../table/land-rows.js';
import { landOptions } from './after-commit.js';
import type { WriterSettings } from './env.js';

/** A parsed VARVE_SINK. */
export type SinkSpec = { kind: 'table'; table: string } | { kind: 'eventbridge'; bus: string };

/** Parses VARVE_SINK; throws InvalidArgumentError saying what is accepted. */
export function parseSinkSpec(value: string | undefined): SinkSpec {
  const m = /^(table|eventbridge):(.+)$/.exec(value?.trim() ?? '');
  if (!m) {
    throw new InvalidArgumentError(
      `VARVE_SINK is ${JSON.stringify(value ?? null)}: use "table:<db.table>" or "eventbridge:<bus name>", ` +
        'or deploy your own reader built with createStreamHandler (functions/shared/stream-handler.ts)',
    );
  }
  return m[1] === 'table' ? { kind: 'table', table: m[2] } : { kind: 'eventbridge', bus: m[2] };
}

/**
 * Writes each split's changes, row kinds kept, into `target`: one commit per split whose
 * identifier is the split id, so a split delivered again commits nothing twice (in queue mode
 * the commit queue's deduplication and the group commit's batch check do the same).
 */
export function awsTableSink(target: Table, settings: WriterSettings): StreamSink {
  return {
    async write(batch) {
      if (batch.data.numRows === 0) return;
      const source = batch.table;
      const { rows, kinds } = rowsForTarget(target, batch);
      await landRows(
        target,
        rows,
        kinds,
        landOptions(target, settings, `stream:${source.name}:${batch.consumerId}`, batch.splitId),
      );
    },
  };
}

/** The detail-type of the events the EventBridge sink puts, one per change. */
const ROW_CHANGED = 'Row Changed';

/** The detail of a `Row Changed` event: values in display form (BIGINT beyond 2^53 and DECIMAL as text, BYTES as base64). */
export interface RowChangedDetail {
  table: string;
  consumer: string;
  snapshotId: number;
  /** `<consumer>/<snapshot>/<partition>/<bucket>` and the change's position in it: a redelivered split repeats both. */
  splitId: string;
  index: number;
  kind: string;
  partition: string;
  bucket: number;
  row: Record<string, unknown>;
}

/** PutEvents takes 10 entries and 256 KiB per call. */
const MAX_ENTRIES = 10;
const MAX_CALL_BYTES = 256 * 1024;

/** Puts one `Row Changed` event per change on `bus`, in order; a refused entry fails the split (it is retried whole). */
export function eventBridgeSink(bus: string): StreamSink {
  return {
    async write(batch: ChangeBatch) {
      const fields = batch.table.schema.fields;
      const entries: PutEventsRequestEntry[] = changesOf(batch).map((c, index) => {
        const row: Record<string, unknown> = {};
        for (const f of fields)
          row[f.name] =
            c.row[f.name] === null || c.row[f.name] === undefined ? null : toDisplayValue(f.type, c.row[f.name]);
        const detail: RowChangedDetail = {
          table: batch.table.name,
          consumer: batch.consumerId,
          snapshotId: batch.snapshotId,
          splitId: batch.splitId,
          index,
          kind: c.kind,
          partition: c.partition,
          bucket: c.bucket,
          row,
        };
        return {
          EventBusName: bus,
          Source: VARVE_EVENT_SOURCE,
          DetailType: ROW_CHANGED,
          Detail: JSON.stringify(detail),
        };
      });
      let call: PutEventsRequestEntry[] = [];
      let bytes = 0;
      const flush = async () => {
        if (call.length === 0) return;
        const r = await eventBridgeClient().send(new PutEventsCommand({ Entries: call }));
        if (r.FailedEntryCount) {
          const e = r.Entries?.find((x) => x.ErrorCode);
          throw new VarveError(
            `EventBridge refused ${r.FailedEntryCount} Row Changed events of split ${batch.splitId} (${e?.ErrorCode}: ${e?.ErrorMessage}); the split will be retried`,
            {
              kind: 'unavailable',
              retryable: true,
            },
          );
        }
        call = [];
        bytes = 0;
      };
      for (const entry of entries) {
        const size = Buffer.byteLength(entry.Detail!) + ROW_CHANGED.length + VARVE_EVENT_SOURCE.length;
        if (call.length === MAX_ENTRIES || (call.length > 0 && bytes + size > MAX_CALL_BYTES)) await flush();
        call.push(entry);
        bytes += size;
      }
      await flush();
    },
  };
}
