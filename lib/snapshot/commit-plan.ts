/**
 * One commit attempt on a given base snapshot: assign sequence numbers, check conflicts, merge
 * the base's manifests into the new base list, write the delta (and changelog) manifests and
 * lists — all under fresh unique names — and build the snapshot that would reference them. Nothing
 * written here is visible until the snapshot file is created; a failed attempt leaves orphans only.
 */
import type { MetadataFileNamer } from '../manifest/file-names.js';
import { settleAll } from '../concurrency.js';
import {
  type EncodedManifest,
  encodeManifestFiles,
  putManifestFiles,
  type ManifestCache,
} from '../manifest/manifest-file.js';
import { writeCombinedManifestList, writeManifestList } from '../manifest/manifest-list.js';
import { encodeMergeWithDelta, planManifestMerge } from '../manifest/merge.js';
import { foldLiveFiles, readDataManifests } from '../manifest/scan.js';
import { fileIdentity } from '../manifest/file-entries.js';
import { parsePartitionPath } from '../schema/partition.js';
import type { ManifestEntry, ManifestFileMeta } from '../manifest/types.js';
import type { Snapshot } from './snapshot.js';
import type { ObjectStore } from '../store/object-store.js';
import {
  type AssignedChanges,
  assignSequenceNumbers,
  type CommitOptions,
  type CommitRequest,
} from './commit-request.js';
import { checkCommitConflicts } from './conflicts.js';
import { INDEXED_IDENTIFIER_PROPERTY } from './commit-identifier.js';
import {
  addBucketFiles,
  BUCKETS_PROPERTY,
  bucketSummaryOf,
  bucketSummaryWithout,
  encodeBucketSummary,
} from './bucket-summary.js';
import { encodeQueuedJobs, nextQueuedJobs, QUEUED_JOBS_PROPERTY, queuedJobsOf } from './queued-jobs.js';

/** The property holding a random id per commit call, so an ambiguous write can recognise itself. */
export const COMMIT_UUID_PROPERTY = 'varve.commit-uuid';
/**
 * Snapshot property: the commit uuid of the snapshot this one was planned on (snapshot id − 1):
 * the chain of commits, checkable without trusting ids (an earlier varve's rollback deleted
 * snapshots, and their ids were created again).
 */
const PARENT_COMMIT_PROPERTY = 'varve.parent-commit';

/** What every attempt of one commit call shares. */
export interface CommitContext {
  store: ObjectStore;
  tablePath: string;
  req: CommitRequest;
  opts: CommitOptions;
  namer: MetadataFileNamer;
  commitUuid: string;
  cache: ManifestCache;
  now: () => number;
}

function rows(entries: readonly ManifestEntry[]): number {
  return entries.reduce((s, e) => s + e.file.rowCount, 0);
}

/**
 * Writes everything snapshot `latest.id + 1` needs and returns that snapshot (not yet committed).
 * The conflict checks run alongside the writes, to keep the time between reading the base and
 * creating the snapshot short: a failed check leaves only unreferenced files behind.
 */
export async function planCommit(ctx: CommitContext, latest: Snapshot | undefined): Promise<Snapshot> {
  const { store, tablePath, req, opts, namer, cache } = ctx;
  const changes = assignSequenceNumbers(req, latest?.nextSequenceNumber ?? 0);
  const previous = latest ? await readDataManifests(store, tablePath, latest, cache) : [];
  if (req.overwrite) await deleteOverwritten(ctx, previous, req.overwrite, changes);
  // The base's live files per bucket less this commit's removals (bucket-summary.ts): the conflict
  // check's bucket counts, and with the adds the new snapshot's summary.
  const base = bucketSummaryOf(latest);
  const summaryLeft = base && bucketSummaryWithout(base, changes.deletes);

  const writeOpts = { namer, targetFileSize: opts.manifestTargetFileSize, schemaId: req.schemaId };
  const deltaFiles = encodeManifestFiles([...changes.deletes, ...changes.adds], writeOpts);
  const changelogFiles = encodeManifestFiles(changes.changelog, writeOpts);
  const [, , dataManifestList, changelogManifestList, deletionVectors] = await settleAll<
    [void, void, string, string | undefined, string | undefined]
  >([
    // First in the list: a real conflict is reported ahead of any write failure.
    checkCommitConflicts({
      store,
      tablePath,
      baseSnapshotId: latest?.id,
      manifests: previous,
      adds: changes.adds,
      deletes: changes.deletes,
      checkAppendFiles: opts.checkAppendFiles ?? true,
      // Only on the base the caller vouched for: a lost race's newer base may hold them.
      addsUnseen: opts.addsUnseenThrough !== undefined && latest?.id === opts.addsUnseenThrough,
      summaryLeft,
      compareKeys: opts.compareKeys,
      cache,
    }),
    putManifestFiles(store, tablePath, changelogFiles, cache),
    writeDataManifestList(ctx, previous, deltaFiles),
    changelogFiles.length > 0
      ? writeManifestList(
          store,
          tablePath,
          changelogFiles.map((f) => f.meta),
          namer,
        )
      : Promise.resolve(undefined),
    // Deletion vectors are planned on this attempt's base: what landed before this commit is looked up too.
    // A request naming its index (a rollback: its target's, exact for the files it restores) takes it as it is.
    req.deletionVectors === undefined && opts.deletionVectors
      ? opts.deletionVectors.plan(latest, changes, previous, cache)
      : Promise.resolve(req.deletionVectors),
  ]);
  const snapshot = snapshotOf(ctx, latest, changes, dataManifestList, changelogManifestList, deletionVectors);
  // This commit's changes on its base's summary: exact, as every removed file is one the base
  // holds (else the conflict check above failed and this snapshot is never created).
  const summary = summaryLeft && addBucketFiles(summaryLeft, changes.adds);
  const encoded = summary && encodeBucketSummary(summary);
  const props = snapshot.properties!;
  if (latest && opts.carriedProperties) Object.assign(props, opts.carriedProperties(latest, props));
  delete props[BUCKETS_PROPERTY];
  delete props[QUEUED_JOBS_PROPERTY];
  if (summary === undefined || encoded === undefined) return snapshot;
  props[BUCKETS_PROPERTY] = encoded;
  // The buckets with a compaction job queued, when the committer sends them (queued-jobs.ts).
  if (opts.compactionDue) {
    const step = { snapshotId: snapshot.id, now: snapshot.timeMillis, summary, due: opts.compactionDue };
    const jobs = nextQueuedJobs(queuedJobsOf(latest) ?? [], { ...step, adds: changes.adds, deletes: changes.deletes });
    props[QUEUED_JOBS_PROPERTY] = encodeQueuedJobs(jobs);
  }
  return snapshot;
}

/** An overwrite deletes what the overwritten partitions hold on THIS base: a commit that landed since planning is replaced too. */
async function deleteOverwritten(
  ctx: CommitContext,
  previous: ManifestFileMeta[],
  overwrite: NonNullable<CommitRequest['overwrite']>,
  changes: AssignedChanges,
): Promise<void> {
  const replaced = await foldLiveFiles(
    ctx.store,
    ctx.tablePath,
    previous,
    { partition: overwrittenPartition(overwrite) },
    ctx.cache,
  );
  const removed = new Set(changes.deletes.map(fileIdentity));
  for (const e of replaced) if (!removed.has(fileIdentity(e))) changes.deletes.push({ ...e, kind: 'DELETE' });
}

/**
 * base(N) = merged state of N-1 = merge(base(N-1) + delta(N-1)); base and delta go into one
 * combined list (one PUT), named as both the base and the delta list of the snapshot. A merge
 * that writes a manifest takes the delta's entries into it (encodeMergeWithDelta): a merging
 * commit writes one manifest, as every other commit does. Returns the list's name.
 */
async function writeDataManifestList(
  ctx: CommitContext,
  previous: ManifestFileMeta[],
  deltaFiles: EncodedManifest[],
): Promise<string> {
  const { store, tablePath, opts, namer, cache } = ctx;
  const plan = await planManifestMerge(
    store,
    tablePath,
    previous,
    {
      targetFileSize: opts.manifestTargetFileSize,
      mergeMinCount: opts.manifestMergeMinCount,
      fullCompactionThresholdSize: opts.manifestFullCompactionThresholdSize,
    },
    cache,
  );
  const data = encodeMergeWithDelta(plan, namer, deltaFiles, ctx.req.schemaId);
  // The list may be written before its manifests: nothing is referenced until the snapshot is.
  const [, list] = await settleAll<[void, string]>([
    putManifestFiles(store, tablePath, data.files, cache),
    writeCombinedManifestList(store, tablePath, data.base, data.delta, namer, cache),
  ]);
  return list;
}

/** Snapshot `latest.id + 1` referencing the lists just written. */
function snapshotOf(
  ctx: CommitContext,
  latest: Snapshot | undefined,
  changes: AssignedChanges,
  dataManifestList: string,
  changelogManifestList: string | undefined,
  deletionVectors: string | undefined,
): Snapshot {
  const { req } = ctx;
  const deltaRecordCount = rows(changes.adds) - rows(changes.deletes);
  const snapshot: Snapshot = {
    version: 1,
    id: (latest?.id ?? 0) + 1,
    // Never lower than the base's: a snapshot's schema can read every file it references.
    schemaId: Math.max(req.schemaId, latest?.schemaId ?? 0),
    baseManifestList: dataManifestList,
    deltaManifestList: dataManifestList,
    commitUser: req.commitUser,
    commitIdentifier: req.commitIdentifier,
    commitKind: req.kind,
    // Never earlier than the base: timeMillis is non-decreasing with the id, so time travel can
    // binary-search it even when committers' clocks disagree.
    timeMillis: Math.max(ctx.now(), latest?.timeMillis ?? 0),
    totalRecordCount: (latest?.totalRecordCount ?? 0) + deltaRecordCount,
    deltaRecordCount,
    nextSequenceNumber: Math.max(changes.nextSequenceNumber, latest?.nextSequenceNumber ?? 0),
    properties: { ...req.properties, [COMMIT_UUID_PROPERTY]: ctx.commitUuid },
  };
  // Expiry marks this identifier's index before it deletes the snapshot (commit-identifier.ts).
  if (req.identifierIndex) snapshot.properties![INDEXED_IDENTIFIER_PROPERTY] = 'true';
  const parent = latest?.properties?.[COMMIT_UUID_PROPERTY];
  if (parent !== undefined) snapshot.properties![PARENT_COMMIT_PROPERTY] = parent;
  if (changelogManifestList !== undefined) {
    snapshot.changelogManifestList = changelogManifestList;
    snapshot.changelogRecordCount = rows(changes.changelog);
  }
  if (deletionVectors !== undefined) snapshot.deletionVectors = deletionVectors;
  const watermark = Math.max(latest?.watermark ?? -Infinity, req.watermark ?? -Infinity);
  if (Number.isFinite(watermark)) snapshot.watermark = watermark;
  return snapshot;
}

/** The partition filter of an overwrite (undefined: every partition). */
function overwrittenPartition(o: NonNullable<CommitRequest['overwrite']>): ((p: string) => boolean) | undefined {
  if (o.partitions !== undefined) {
    const set = new Set(o.partitions);
    return (p) => set.has(p);
  }
  if (o.match !== undefined && Object.keys(o.match).length > 0) {
    const spec = Object.entries(o.match);
    return (p) => {
      const values = parsePartitionPath(p);
      return spec.every(([k, v]) => values[k] === v);
    };
  }
  return undefined;
}
