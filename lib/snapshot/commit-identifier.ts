/**
 * Idempotence without a window: a commit identifier given by the user deduplicates across
 * processes and commit users however many commits came in between, at O(1) metadata reads.
 *
 * Each such identifier has one index object, `commit/identifier-<sha256(identifier)>`, naming the
 * snapshot id its current holder is about to create (`attempt`), and — once expiry is about to
 * delete the snapshot holding it — `committed` (the commit itself writes the index once, before
 * its snapshot: one PUT, not two). The rule that keeps it: **before creating snapshot K, a committer holds the index
 * naming K** (won with put-if-absent, or put-if-match on the etag it last saw). A committer that
 * finds the index held by someone else settles it: it reads the index, then the latest snapshot L,
 * then snapshot `attempt`:
 *  - `committed` set, or snapshot `attempt` carries the identifier: it landed — commit nothing;
 *  - `attempt` > L (not created yet): the holder crashed or is still on its way. The settler takes
 *    the index over naming L + 1. Since the holder read its base before writing the index, and the
 *    settler read L after reading it, L + 1 = `attempt`: both race for the same snapshot id, one
 *    wins, and the loser finds the winner's snapshot with the identifier when it reloads (commit.ts
 *    reloadAfterLostRace). So a crashed attempt never blocks a retry, and a slow one never lands
 *    twice;
 *  - `attempt` ≤ L but it holds another commit: the holder lost that race (it retries under a new
 *    `attempt`, which needs the index again): take it over as above;
 *  - `attempt` ≤ L and expired, never marked committed: the attempt did not land, because
 *    expiry marks the index of every identifier a snapshot carries before it deletes that
 *    snapshot (`committed`, maintenance/expiry-journal.ts; the snapshot records which of its
 *    identifiers are indexed, INDEXED_IDENTIFIER_PROPERTY). Take the index over as above. An
 *    expiry that marks between our reads changes the etag, so the takeover fails and the index
 *    is read again. An index written before expiry marked (no `expiryMarks`) was marked by its
 *    committer after the snapshot, best effort; unmarked and expired, whether it landed cannot
 *    be known — CommitIdentifierAmbiguousError, never a guess;
 *  - `committed` names a snapshot a rollback removed (above L, or that id now holds another
 *    commit): the identifier is not in the table any more; take the index over as above.
 */
import { createHash } from 'node:crypto';
import * as v from 'valibot';
import { CommitIdentifierAmbiguousError, CorruptMetadataError, ObjectNotFoundError } from '../errors.js';
import { jsonInt, jsonTime, parseJsonFile, type JsonSchema } from '../json.js';
import { objectLocation, parseJsonObject } from '../store/json-file.js';
import { utf8, type ObjectStore } from '../store/object-store.js';
import { RetryBudget, TryAgain } from '../retry-budget.js';
import type { Snapshot } from './snapshot.js';
import type { SnapshotManager } from './snapshot-manager.js';

/** The JSON content of an identifier index object. */
export interface IdentifierIndex {
  identifier: string;
  /** The commit call (its commit uuid) holding the index. */
  holder: string;
  /** The snapshot id the holder creates next. */
  attempt: number;
  /** The snapshot that holds the commit, once known. */
  committed?: number;
  /** Epoch ms of the last change by a committer (expiry's mark keeps it: the retention counts from the commit). */
  updated: number;
  /**
   * True when the snapshot that lands this attempt records the identifier as indexed, so expiry
   * marks `committed` before deleting it: an unmarked index whose attempt expired did not land.
   * Absent on indexes of older varve versions, whose committers marked after the snapshot.
   */
  expiryMarks?: boolean;
}

/** An index object as saved; `committed` and `expiryMarks` are absent in older ones. */
export const IdentifierIndexSchema: JsonSchema<IdentifierIndex> = v.looseObject({
  identifier: v.string(),
  holder: v.string(),
  attempt: jsonInt,
  committed: v.optional(jsonInt),
  updated: jsonTime,
  expiryMarks: v.optional(v.boolean()),
});

/**
 * Snapshot property set ('true') on a commit whose own identifier is indexed (identifierIndex):
 * with the batch identifiers (BATCH_IDENTIFIERS_PROPERTY) it tells expiry which indexes to mark.
 */
export const INDEXED_IDENTIFIER_PROPERTY = 'varve.identifier-indexed';

/** Key of the index object of `identifier` (hashed: an identifier may hold any character). */
export function identifierIndexKey(tablePath: string, identifier: string): string {
  return `${tablePath}/commit/identifier-${createHash('sha256').update(identifier).digest('hex')}`;
}

/**
 * Snapshot property listing, as a JSON array, the indexed identifiers of the batches a group
 * commit folded into one snapshot (each batch claims its own index: commit.ts batchIdentifiers).
 */
export const BATCH_IDENTIFIERS_PROPERTY = 'varve.identifiers';

/** The batch identifiers a snapshot records (BATCH_IDENTIFIERS_PROPERTY). */
export function batchIdentifiersOf(s: Snapshot): string[] {
  const raw = s.properties?.[BATCH_IDENTIFIERS_PROPERTY];
  if (raw === undefined) return [];
  return parseJsonFile(raw, v.array(v.string()), `the ${BATCH_IDENTIFIERS_PROPERTY} property of snapshot ${s.id}`, {
    fix: 'the snapshot file is damaged; restore it from a backup',
  });
}

/** The identifiers snapshot `s` holds whose index objects expiry must mark before deleting it. */
export function indexedIdentifiersOf(s: Snapshot): string[] {
  const own = s.properties?.[INDEXED_IDENTIFIER_PROPERTY] === 'true' ? [s.commitIdentifier] : [];
  return [...own, ...batchIdentifiersOf(s)];
}

/**
 * Records in the index of `identifier` that it landed in snapshot `snapshotId` (`committed`),
 * before expiry deletes that snapshot; idempotent. An index already marked, or gone, is left as
 * it is. Store errors propagate: the caller must not delete the snapshot then.
 */
export async function markIdentifierLanded(
  store: ObjectStore,
  tablePath: string,
  identifier: string,
  snapshotId: number,
): Promise<void> {
  const key = identifierIndexKey(tablePath, identifier);
  const budget = new RetryBudget({
    what: `marking commit identifier ${identifier} as landed in snapshot ${snapshotId}`,
    maxRetries: MARK_RETRIES,
    minWaitMs: 0,
    maxWaitMs: 0,
    advice: 'run expiry again',
  });
  await budget.run(async () => {
    const found = await readIdentifierIndex(store, tablePath, identifier);
    if (found === undefined || found.index.committed !== undefined) return;
    // Snapshot `snapshotId` carries the identifier, so it landed there, whatever attempt the
    // index names now: recording the truth is never wrong.
    const marked: IdentifierIndex = { ...found.index, committed: snapshotId };
    try {
      if (await store.putIfMatch(key, utf8(JSON.stringify(marked)), found.etag)) return;
    } catch (e) {
      if (!(e instanceof ObjectNotFoundError)) throw e;
    }
    return new TryAgain('a commit changed the index since it was read');
  });
}

/** Times expiry reads an identifier's index again after a commit changed it, before giving up. */
const MARK_RETRIES = 19;

/** True when snapshot `s` holds the commit of `identifier` (as its own identifier or as one of its batches'). */
export function carriesIdentifier(s: Snapshot, identifier: string): boolean {
  return s.commitIdentifier === identifier || batchIdentifiersOf(s).includes(identifier);
}

/** The index object of `identifier` with its etag, or undefined. */
export async function readIdentifierIndex(
  store: ObjectStore,
  tablePath: string,
  identifier: string,
): Promise<{ index: IdentifierIndex; etag: string } | undefined> {
  const key = identifierIndexKey(tablePath, identifier);
  try {
    const obj = await store.get(key);
    const index = parseJsonObject(store, key, obj.body, IdentifierIndexSchema);
    if (index.identifier !== identifier)
      throw new CorruptMetadataError(
        `identifier index ${objectLocation(store, key)} does not describe identifier ${identifier}`,
      );
    return { index, etag: obj.etag };
  } catch (e) {
    if (e instanceof ObjectNotFoundError) return undefined;
    throw e;
  }
}

/**
 * Times a claim reads the index again after another commit changed it before giving up; also the
 * moves of a group commit's claims to a newer base (commit-claims.ts).
 */
export const CLAIM_RETRIES = 50;

/** What claiming the index before creating a snapshot found. */
export type ClaimOutcome =
  /** The index names our attempt; create snapshot `(base?.id ?? 0) + 1` on `base`. */
  | { held: true; base: Snapshot | undefined }
  /** The identifier has landed in `snapshot` (undefined: landed, and that snapshot has expired). */
  | { held: false; snapshot: Snapshot | undefined; snapshotId: number };

/** One commit call's hold on its identifier's index. */
export class IdentifierClaim {
  private etag?: string;
  private readonly key: string;

  constructor(
    private readonly store: ObjectStore,
    private readonly sm: SnapshotManager,
    readonly identifier: string,
    private readonly holder: string,
    private readonly now: () => number,
  ) {
    this.key = identifierIndexKey(sm.tablePath, identifier);
  }

  private body(attempt: number): Uint8Array {
    const index: IdentifierIndex = {
      identifier: this.identifier,
      holder: this.holder,
      attempt,
      updated: this.now(),
      expiryMarks: true,
    };
    return utf8(JSON.stringify(index));
  }

  /**
   * Makes the index name our attempt on `base` (the latest snapshot this call read), or finds
   * that the identifier already landed. May move the base forward (a takeover plans on the latest).
   */
  async claim(base: Snapshot | undefined, retries = CLAIM_RETRIES): Promise<ClaimOutcome> {
    const attempt = (base?.id ?? 0) + 1;
    let won: { etag: string } | undefined;
    if (this.etag === undefined) won = await this.store.putIfAbsent(this.key, this.body(attempt));
    else won = await this.casOrUndefined(this.body(attempt), this.etag);
    if (won) {
      this.etag = won.etag;
      return { held: true, base };
    }
    // Each retry reads the index another commit just changed, at once (no wait: it moved on).
    const budget = new RetryBudget({
      what: `settling the index of commit identifier ${this.identifier}`,
      maxRetries: retries - 1,
      minWaitMs: 0,
      maxWaitMs: 0,
      advice: 'retry the commit',
    });
    return budget.run(async (): Promise<ClaimOutcome | TryAgain> => {
      const found = await readIdentifierIndex(this.store, this.sm.tablePath, this.identifier);
      if (found === undefined) {
        // Removed meanwhile (never by varve itself): start over from absent.
        const created = await this.store.putIfAbsent(this.key, this.body(attempt));
        if (created) {
          this.etag = created.etag;
          return { held: true, base };
        }
        return new TryAgain('the index was removed, then created by another commit');
      }
      const settled = await this.settle(found.index);
      if (settled.landed) return { held: false, snapshot: settled.snapshot, snapshotId: settled.snapshotId };
      const next = (settled.latest?.id ?? 0) + 1;
      const taken = await this.casOrUndefined(this.body(next), found.etag);
      if (taken) {
        this.etag = taken.etag;
        return { held: true, base: settled.latest };
      }
      return new TryAgain('another commit changed the index since it was read');
    });
  }

  private async casOrUndefined(body: Uint8Array, etag: string): Promise<{ etag: string } | undefined> {
    try {
      return await this.store.putIfMatch(this.key, body, etag);
    } catch (e) {
      if (e instanceof ObjectNotFoundError) return undefined;
      throw e;
    }
  }

  /**
   * See the file comment: did the holder's attempt land? The latest snapshot is read after the
   * index. Every snapshot is read from the store, never from this process's cache: a rollback
   * elsewhere may have removed a snapshot cached here and a new commit reused its id, and a
   * cached copy carrying the identifier would report a commit that is not in the table.
   */
  private async settle(
    index: IdentifierIndex,
  ): Promise<
    | { landed: true; snapshot: Snapshot | undefined; snapshotId: number }
    | { landed: false; latest: Snapshot | undefined }
  > {
    if (index.committed !== undefined) {
      const s = await this.sm.tryReadFresh(index.committed);
      if (s !== undefined && carriesIdentifier(s, this.identifier))
        return { landed: true, snapshot: s, snapshotId: s.id };
      // A rollback removed that snapshot (its id is above the latest, or holds another commit
      // now): the identifier is not in the table any more and may be committed again.
      const latest = await this.sm.latest({ fresh: true });
      if (s !== undefined || latest === undefined || index.committed > latest.id) return { landed: false, latest };
      return { landed: true, snapshot: undefined, snapshotId: index.committed };
    }
    const latest = await this.sm.latest({ fresh: true });
    if (latest === undefined || index.attempt > latest.id) return { landed: false, latest };
    const s = await this.sm.tryReadFresh(index.attempt);
    if (s !== undefined && carriesIdentifier(s, this.identifier))
      return { landed: true, snapshot: s, snapshotId: s.id };
    // Expired unmarked: expiry marks a landed identifier before deleting its snapshot (file comment).
    if (s === undefined && index.expiryMarks === true) return { landed: false, latest };
    if (s === undefined) {
      throw new CommitIdentifierAmbiguousError(
        `commit identifier ${this.identifier} of ${this.sm.tablePath} was being committed as snapshot ${index.attempt}, which has expired ` +
          "before the commit was confirmed: whether it landed cannot be told any more. Check the table's data, then retry under a new identifier",
        this.identifier,
        index.attempt,
      );
    }
    return { landed: false, latest };
  }
}
