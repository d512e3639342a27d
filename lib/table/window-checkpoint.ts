/**
 * A checkpoint of the deduplication window (RecentBatches), carried by the snapshots the group
 * commit writes (snapshot property `varve.window`), so that a cold container learns the window
 * from the snapshot it reads anyway (the latest) instead of reading every snapshot of the window.
 *
 * A checkpoint in snapshot P states, for the ids `varve.batches` and `varve.sources` of the
 * snapshots below P:
 * - (a) every snapshot with an id in [from, to] that holds ids is listed, with all of them;
 * - (b) every snapshot with an id <= to, committed after `after` (its `timeMillis` > after), that
 *   holds ids is listed.
 * `to` (< P) is the last snapshot the committer had read, not always P - 1: another process may
 * have committed in between. The committer writes only what it knows (it read or was told every
 * snapshot it lists), so a checkpoint is as exact as the scan it replaces. Bounded in bytes
 * (WINDOW_CHECKPOINT_MAX_BYTES): the newest snapshots are kept and `after` is raised to the time
 * of the newest one left out, so that a reader whose window reaches further goes on reading below
 * `from` (where older snapshots carry their own checkpoints). A commit that holds no ids of its
 * own (a compaction, an alter, a write without sources) carries its base's checkpoint with the
 * base added (carriedWindowCheckpoint), so that a cold container whose latest snapshot is a
 * compaction still reads only that one. Snapshots of older writers carry none: a reader reads
 * them one by one, as before.
 */
import * as v from 'valibot';
import { parseJsonProperty } from '../json.js';
import type { Snapshot } from '../snapshot/snapshot.js';

/** Snapshot property holding a {@link WindowCheckpoint} as JSON. */
export const WINDOW_PROPERTY = 'varve.window';
/**
 * At most this many bytes of JSON per checkpoint: every reader of the snapshot reads them, so a
 * busy table's window (hundreds of ids per second) is split over the snapshots, one GET per 32 KiB
 * instead of one per snapshot.
 */
const WINDOW_CHECKPOINT_MAX_BYTES = 32 * 1024;

/** One snapshot of the window: its id, its `timeMillis` and the batch and source ids it holds. */
export type WindowEntry = [snapshot: number, time: number, ids: string[]];

/** What a checkpoint states (see the file comment). */
export interface WindowCheckpoint {
  from: number;
  to: number;
  /** Epoch ms; -Infinity: every snapshot up to `to` (JSON null). */
  after: number;
  /** Newest first. */
  snapshots: WindowEntry[];
}

const CheckpointSchema = v.object({
  v: v.literal(1),
  from: v.pipe(v.number(), v.integer()),
  to: v.pipe(v.number(), v.integer()),
  after: v.nullable(v.number()),
  snapshots: v.array(v.tuple([v.pipe(v.number(), v.integer()), v.number(), v.array(v.string())])),
});

/** A snapshot's list of batch or source ids (`varve.batches`, `varve.sources`). */
const IdListSchema = v.array(v.string());

/**
 * The checkpoint snapshot `snapshotId` carries, if any. One that is not well formed (not written by
 * varve) is ignored: the reader then reads the snapshots below one by one, as without checkpoints.
 */
export function parseWindowCheckpoint(
  snapshotId: number,
  properties: Record<string, string> | undefined,
): WindowCheckpoint | undefined {
  const parsed = parseJsonProperty(properties?.[WINDOW_PROPERTY], CheckpointSchema);
  if (parsed === undefined) return undefined;
  // A checkpoint speaks of the snapshots below its own, listed in [from, to].
  if (parsed.to >= snapshotId || parsed.from < 1 || parsed.from > parsed.to + 1) return undefined;
  if (parsed.snapshots.some(([id]) => id < parsed.from || id > parsed.to)) return undefined;
  return {
    from: parsed.from,
    to: parsed.to,
    after: parsed.after ?? Number.NEGATIVE_INFINITY,
    snapshots: parsed.snapshots,
  };
}

/**
 * The property value of a checkpoint stating that the snapshots up to `to` committed after `after`
 * hold the ids of `known` (every snapshot in it, newest first, whose time is > after, holds ids
 * only as listed: the caller knows them all), cut to WINDOW_CHECKPOINT_MAX_BYTES.
 */
export function encodeWindowCheckpoint(to: number, after: number, known: readonly WindowEntry[]): string {
  const kept: WindowEntry[] = [];
  let bytes = 100; // the envelope
  let bound = after;
  for (const entry of known) {
    const size = Buffer.byteLength(JSON.stringify(entry)) + 1;
    if (bytes + size > WINDOW_CHECKPOINT_MAX_BYTES) {
      // Left out with every older one: (b) holds only after this snapshot's time (times never
      // decrease with the id), and (a) only from the oldest snapshot kept.
      bound = Math.max(after, entry[1]);
      break;
    }
    kept.push(entry);
    bytes += size;
  }
  const from = kept.length > 0 ? kept[kept.length - 1][0] : to + 1;
  return JSON.stringify({ v: 1, from, to, after: Number.isFinite(bound) ? bound : null, snapshots: kept });
}

/**
 * The checkpoint a commit holding no ids of its own carries on its base `base`: the base's own
 * checkpoint, with the base's ids (its properties `idProperties`, JSON lists) added. Exact as the
 * base's: the base's checkpoint states (a) and (b) for the snapshots up to `base - 1`, and the
 * base is listed with every id it holds. Undefined when the base carries none, or one that stops
 * below `base - 1` (of a snapshot in between, this committer knows nothing).
 */
export function carriedWindowCheckpoint(base: Snapshot, idProperties: readonly string[]): string | undefined {
  const c = parseWindowCheckpoint(base.id, base.properties);
  if (c === undefined || c.to !== base.id - 1) return undefined;
  const ids: string[] = [];
  for (const property of idProperties) {
    const list = base.properties?.[property];
    if (list === undefined) continue;
    const parsed = parseJsonProperty(list, IdListSchema);
    if (parsed === undefined) return undefined; // not written by varve's writers: no checkpoint rather than a wrong one
    ids.push(...parsed);
  }
  const own: WindowEntry[] = ids.length > 0 ? [[base.id, base.timeMillis, ids]] : [];
  return encodeWindowCheckpoint(base.id, c.after, [...own, ...c.snapshots]);
}
