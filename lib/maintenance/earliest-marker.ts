/**
 * The EARLIEST marker as expiry uses it: moved forward, never back, before anything is deleted.
 * Readers keep treating it as a hint (trusted only while its snapshot exists); expiry writes it
 * with a compare-and-swap so that two expiry runs racing cannot move it backwards.
 */
import { ConditionalRequestConflictError, ObjectNotFoundError } from '../errors.js';
import { RetryBudget, TryAgain } from '../retry-budget.js';
import { earliestHintKey } from '../snapshot/paths.js';
import { fromUtf8, utf8 } from '../store/object-store.js';
import type { Table } from '../table/table.js';

/** Compare-and-swap retries before giving up (each one means another expiry run moved the marker meanwhile). */
const CAS_RETRIES = 9;

/** The marker's value and etag as stored, or undefined when there is none (or it is not a number). */
async function readMarker(table: Table): Promise<{ id?: number; etag?: string }> {
  try {
    const { body, etag } = await table.store.get(earliestHintKey(table.path));
    const text = fromUtf8(body).trim();
    return { id: /^\d+$/.test(text) ? Number(text) : undefined, etag };
  } catch (e) {
    if (e instanceof ObjectNotFoundError) return {};
    throw e;
  }
}

/**
 * The snapshot id the marker names when that snapshot exists (the marker is valid), else
 * undefined. Unlike SnapshotManager.earliestId this never falls back to a listing.
 */
export async function validEarliestMarker(table: Table): Promise<number | undefined> {
  const { id } = await readMarker(table);
  if (id === undefined || id < 1) return undefined;
  return (await table.snapshots.exists(id)) ? id : undefined;
}

/**
 * Makes the marker name `id` unless it already names a later snapshot that exists. Throws when
 * the write fails: expiry must not delete anything before the marker has moved.
 */
export async function advanceEarliestMarker(table: Table, id: number): Promise<void> {
  const key = earliestHintKey(table.path);
  const budget = new RetryBudget({
    what: `moving the EARLIEST marker of ${table.name} to ${id}`,
    maxRetries: CAS_RETRIES,
    minWaitMs: 1,
    maxWaitMs: 100,
  });
  await budget.run(async () => {
    const current = await readMarker(table);
    // Another expiry run moved it further and that snapshot is still there: never move it back.
    if (current.id !== undefined && current.id >= id && (await table.snapshots.exists(current.id))) return;
    try {
      const body = utf8(String(id));
      const written =
        current.etag === undefined
          ? await table.store.putIfAbsent(key, body)
          : await table.store.putIfMatch(key, body, current.etag);
      if (written !== undefined) return;
      return new TryAgain(`another writer changed ${key} since it was read`);
    } catch (e) {
      // Deleted since we read it, or a concurrent conditional write (S3 409): read again.
      if (!(e instanceof ObjectNotFoundError || e instanceof ConditionalRequestConflictError)) throw e;
      return new TryAgain((e as Error).message, e);
    }
  });
}
