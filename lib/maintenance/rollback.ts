/**
 * Rollback (Paimon's `rollback_to`), as a forward commit: `rollbackTo(table, N)` commits snapshot
 * latest + 1 whose live files are exactly snapshot N's (or tag T's) — an OVERWRITE whose delta
 * DELETEs every file live now that N did not hold and ADDs back every file N held that was
 * removed since — through the one commit loop (the `rollback` action), like every commit:
 * - one conditional put, so crash-safe and fenced by construction: a writer's commit either
 *   landed before the rollback's snapshot (then the rollback undoes it, and its result names the
 *   snapshots it undid) or after it (on the rollback's state, through the usual lost-race retry).
 *   The action's plan holds on its base only (`baseSnapshotId`): after a lost race it plans again
 *   on the new latest, so the rollback snapshot always holds exactly N's files;
 * - `nextSequenceNumber` goes on from the latest snapshot, never back to N's: a row written after
 *   the rollback wins over a row it brought back;
 * - the schema stays the latest (Paimon keeps schemas on rollback): N's files are read by field id;
 * - nothing is deleted: the undone snapshots stay in the history (time travel, tags, streams,
 *   the Iceberg export) until expiry removes them as usual; tags on them stay.
 * Earlier varve versions rolled back by deleting snapshots under a journal (`rollback/rollback`);
 * a journal such a version left unfinished is finished here first (finishLegacyJournal).
 */
import { randomUUID } from 'node:crypto';
import * as v from 'valibot';
import { InvalidArgumentError, ObjectNotFoundError, SnapshotNotFoundError } from '../errors.js';
import { fileIdentity } from '../manifest/file-entries.js';
import { LruManifestCache } from '../manifest/manifest-file.js';
import { readLiveFiles } from '../manifest/scan.js';
import type { ManifestEntry } from '../manifest/types.js';
import { jsonInt, jsonStringMap, type JsonSchema } from '../json.js';
import type { ActionPlan, CommitAction, FileChange } from '../snapshot/commit.js';
import { listConsumers, writeConsumer, type ConsumerState } from '../snapshot/consumer.js';
import { ROLLBACK_TARGET_PROPERTY, type Snapshot } from '../snapshot/snapshot.js';
import { SnapshotManager } from '../snapshot/snapshot-manager.js';
import { listTags, readTag } from '../snapshot/tags.js';
import { tagKey } from '../snapshot/paths.js';
import { parseJsonObject } from '../store/json-file.js';
import { commitToTable } from '../table/table-commit.js';
import type { Table } from '../table/table.js';

/** Where to roll back to: a snapshot id or a tag name. */
export type RollbackTarget = { snapshotId: number; tag?: undefined } | { tag: string; snapshotId?: undefined };

/** The commit user of rollback snapshots (`varve sys <table> snapshots` shows it). */
export const ROLLBACK_COMMIT_USER = 'varve-rollback';

/** What a rollback did. */
export interface RollbackResult {
  /** The snapshot whose live files the table holds again. */
  target: number;
  /** The rollback's OVERWRITE snapshot; undefined when the latest snapshot already held exactly the target's files. */
  snapshot?: Snapshot;
  /** The snapshots the rollback undid: every id above the target and below its snapshot (empty without a snapshot). */
  undone: { from: number; to: number } | undefined;
  /** Files the rollback snapshot took out of the live set, and files it brought back. */
  removedFiles: number;
  restoredFiles: number;
  /** Tags on undone snapshots: kept (time travel to them still works). */
  tagsOnUndone: string[];
  /** Consumers that had read past the target: they received rows of undone snapshots, which the rollback does not retract. */
  consumersPastTarget: Array<{ id: string; nextSnapshot: number }>;
  /** The after-commit hook (the Iceberg export) failed: the rollback has landed all the same. */
  hookError?: Error;
  /** What finishing a rollback journal of an earlier varve version did, when there was one. */
  legacy?: string;
}

/** The snapshot to go back to: a snapshot that exists, or a tag's own snapshot (kept by the tag even after expiry). */
async function resolveTarget(table: Table, target: RollbackTarget): Promise<Snapshot> {
  if (target.tag !== undefined) {
    const { tagCreateTime: _created, ...tagged } = await readTag(table.store, table.path, target.tag);
    return tagged;
  }
  if (!Number.isInteger(target.snapshotId) || target.snapshotId < 1) {
    throw new InvalidArgumentError(`rollback needs a snapshot id of 1 or more, got ${target.snapshotId}`);
  }
  const s = await table.snapshots.tryReadFresh(target.snapshotId);
  if (s !== undefined) return s;
  await table.snapshots.read(target.snapshotId); // throws SnapshotNotFoundError naming the available range
  throw new SnapshotNotFoundError(`snapshot ${target.snapshotId} of ${table.name} does not exist`);
}

function fileChange(e: ManifestEntry): FileChange {
  return { partition: e.partition, bucket: e.bucket, totalBuckets: e.totalBuckets, file: e.file };
}

/**
 * The `rollback` action: on a base, DELETE what the target does not hold, ADD back what it holds
 * and the base does not. The plan holds on that base only; the loop plans again on any other.
 */
class RollbackAction implements CommitAction {
  readonly name = 'rollback';
  /** Names the target, so `varve sys <table> snapshots` tells where each rollback went. */
  private readonly identifier: string;
  private readonly cache = new LruManifestCache();
  /** What the last plan removed and restored. */
  removed = 0;
  restored = 0;

  constructor(
    private readonly table: Table,
    private readonly target: Snapshot,
    private readonly targetFiles: Map<string, ManifestEntry>,
  ) {
    this.identifier = `rollback-to-${target.id}-${randomUUID()}`;
  }

  async plan(base: Snapshot | undefined): Promise<ActionPlan> {
    if (base === undefined)
      throw new SnapshotNotFoundError(`table ${this.table.name} has no snapshot: there is nothing to roll back`);
    const live = await readLiveFiles(this.table.store, this.table.path, base, {}, this.cache);
    const liveIds = new Set(live.map(fileIdentity));
    const deletes = live.filter((e) => !this.targetFiles.has(fileIdentity(e)));
    const adds = [...this.targetFiles].filter(([id]) => !liveIds.has(id)).map(([, e]) => e);
    this.removed = deletes.length;
    this.restored = adds.length;
    return {
      changes: {
        commitUser: ROLLBACK_COMMIT_USER,
        commitIdentifier: this.identifier,
        kind: 'OVERWRITE',
        schemaId: base.schemaId,
        compactBefore: deletes.map(fileChange),
        compactAfter: adds.map(fileChange),
        properties: { [ROLLBACK_TARGET_PROPERTY]: String(this.target.id) },
        // A deletion-vector table: the target's vectors, exact for the files it holds again.
        ...(this.target.deletionVectors !== undefined ? { deletionVectors: this.target.deletionVectors } : {}),
      },
      requirements: { baseSnapshotId: base.id },
    };
  }
}

/** Rolls `table` back to a snapshot or tag (see the file comment). */
export async function rollbackTo(table: Table, target: RollbackTarget): Promise<RollbackResult> {
  const legacy = await finishLegacyJournal(table);
  const snapshot = await resolveTarget(table, target);
  const files = await readLiveFiles(table.store, table.path, snapshot, {}, table.manifestCache);
  const action = new RollbackAction(table, snapshot, new Map(files.map((e) => [fileIdentity(e), e])));
  // A fresh identifier per call: no dedup window to search. A manager without a cache: the first
  // plan is made on the latest snapshot as stored, never on a warm guess (on an older base the
  // delta could look empty, and an empty plan commits nothing).
  const committed = await commitToTable(table, action, {
    dedupLookback: 0,
    snapshotManager: new SnapshotManager(table.store, table.path),
  });
  const made = committed.committed ? committed.snapshot : undefined;
  const undone =
    made !== undefined && made.id - 1 > snapshot.id ? { from: snapshot.id + 1, to: made.id - 1 } : undefined;
  const inUndone = (id: number) => undone !== undefined && id >= undone.from && id <= undone.to;
  const tagsOnUndone = (await listTags(table.store, table.path))
    .filter(({ tag }) => inUndone(tag.id))
    .map(({ name }) => name);
  const consumersPastTarget =
    made === undefined
      ? []
      : (await listConsumers(table.store, table.path))
          .filter((c) => c.nextSnapshot > snapshot.id + 1)
          .map((c) => ({ id: c.id, nextSnapshot: c.nextSnapshot }));
  return {
    target: snapshot.id,
    snapshot: made,
    undone,
    removedFiles: made ? action.removed : 0,
    restoredFiles: made ? action.restored : 0,
    tagsOnUndone,
    consumersPastTarget,
    ...(committed.hookError ? { hookError: committed.hookError } : {}),
    ...(legacy !== undefined ? { legacy } : {}),
  };
}

/** The part of an earlier version's rollback journal (`rollback/rollback`) still needed. */
interface LegacyJournal {
  target: number;
  snapshots: Record<string, string>;
  tags: string[];
}

const LegacyJournalSchema: JsonSchema<LegacyJournal> = v.looseObject({
  target: jsonInt,
  snapshots: jsonStringMap,
  tags: v.array(v.string()),
});

/**
 * A rollback journal left by an earlier varve, which rolled back by deleting the snapshots above
 * its target newest first (so the snapshots left were always complete), then the tags above it,
 * then moved consumers back, then deleted the removed snapshots' files. A journal still there
 * means that run stopped part way. It is finished as far as it is safe without deleting anything:
 * its tags go (they name snapshot ids new commits will use again), consumers past the latest
 * snapshot move back to latest + 1 in a new run (else they would skip the ids commits use again),
 * and the journal is deleted. Snapshots it had not removed yet stay (complete, undone by the next
 * rollback if wanted); files only removed snapshots used are left to `varve remove-orphans`.
 */
async function finishLegacyJournal(table: Table): Promise<string | undefined> {
  const key = `${table.path}/rollback/rollback`;
  let j: LegacyJournal;
  try {
    j = parseJsonObject(table.store, key, (await table.store.get(key)).body, LegacyJournalSchema, {
      what: 'rollback journal',
    });
  } catch (e) {
    if (e instanceof ObjectNotFoundError) return undefined;
    throw e;
  }
  const latest = (await table.snapshots.latest({ fresh: true }))?.id ?? j.target;
  const removed = Object.keys(j.snapshots)
    .map(Number)
    .filter((id) => id > latest)
    .sort((a, b) => a - b);
  const tags: string[] = [];
  for (const name of j.tags) {
    if ((await table.store.head(tagKey(table.path, name))) === undefined) continue;
    await table.store.delete(tagKey(table.path, name));
    tags.push(name);
  }
  const moved: string[] = [];
  for (const c of await listConsumers(table.store, table.path)) {
    if (c.nextSnapshot <= latest + 1 && (c.plannedSnapshot ?? 0) <= latest) continue;
    const { id, etag, fullSnapshot, ...state } = c;
    const reset: ConsumerState = {
      ...state,
      nextSnapshot: latest + 1,
      plannedSnapshot: latest,
      buckets: {},
      run: randomUUID(),
      lastUpdated: Date.now(),
    };
    if (fullSnapshot !== undefined && fullSnapshot <= latest) reset.fullSnapshot = fullSnapshot;
    if (!(await writeConsumer(table.store, table.path, id, reset, etag))) {
      throw new InvalidArgumentError(
        `consumer ${id} of ${table.name} moved while the unfinished rollback of an earlier varve was finished; run the rollback again`,
      );
    }
    moved.push(`${id} (from ${c.nextSnapshot} to ${latest + 1})`);
  }
  await table.store.delete(key);
  table.snapshots.forgetFrom(latest);
  table.commitSnapshots.forgetFrom(latest);
  const gone =
    removed.length > 0
      ? `it had removed snapshots ${removed[0]}..${removed[removed.length - 1]}`
      : 'it had removed no snapshot yet';
  return (
    `finished the rollback to snapshot ${j.target} that an earlier varve left unfinished: ${gone}, the latest snapshot is ${latest}` +
    (tags.length ? `; removed its tags ${tags.join(', ')}` : '') +
    (moved.length ? `; moved consumers back: ${moved.join(', ')}` : '') +
    '; files only removed snapshots used are left to varve remove-orphans'
  );
}
