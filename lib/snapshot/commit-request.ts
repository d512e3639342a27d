/**
 * What a commit carries (the request), how it is validated, and how its sequence numbers are
 * assigned on a given base: batches get consecutive bases from the table's `nextSequenceNumber`,
 * recomputed on every attempt because a lost race changes the base.
 */
import { InvalidArgumentError } from '../errors.js';
import { describeEntry, fileIdentity } from '../manifest/file-entries.js';
import type { DataFileMeta, ManifestEntry, ManifestFileMeta } from '../manifest/types.js';
import type { JsonValue } from '../schema/value-codec.js';
import type { ManifestCache } from '../manifest/manifest-file.js';
import type { SnapshotManager } from './snapshot-manager.js';
import type { Snapshot } from './snapshot.js';
import type { CompactionDue } from './queued-jobs.js';

/** A data or changelog file of a commit, with where it lives. */
export interface FileChange {
  partition: string;
  bucket: number;
  totalBuckets: number;
  file: DataFileMeta;
}

/** One writer batch; its files' sequence numbers are relative (0..rowCount-1), sequenceBase 0. */
export interface CommitBatch {
  rowCount: number;
  newFiles: FileChange[];
  changelogFiles: FileChange[];
}

/** Everything one commit adds, removes and says about itself. */
export interface CommitRequest {
  commitUser: string;
  /** Derived from the commit's input, so that a retried commit recognises itself. */
  commitIdentifier: string;
  /**
   * The identifier is given by the user (or derived from durable input): it is unique in the table
   * and deduplicates across processes and commit users however many commits came in between,
   * through its index object (commit-identifier.ts). Without it, dedup searches the last
   * `dedupLookback` snapshots for (commitUser, commitIdentifier, kind).
   */
  identifierIndex?: boolean;
  /**
   * A group commit of several writers' batches: the identifier of each batch (parallel to
   * `batches`; undefined for a batch without one). Each claims its own index object, so every
   * batch lands exactly once table-wide; a batch whose identifier has already landed is dropped
   * from the commit and reported in CommitResult.landedBefore. The snapshot lists them in
   * `varve.identifiers`.
   */
  batchIdentifiers?: Array<string | undefined>;
  kind: 'APPEND' | 'COMPACT' | 'OVERWRITE';
  schemaId: number;
  /** APPEND/OVERWRITE: any number (group commit folds several writers' batches into one snapshot). */
  batches?: CommitBatch[];
  /** COMPACT/OVERWRITE: files removed (absolute sequence numbers). */
  compactBefore?: FileChange[];
  /** COMPACT/OVERWRITE: files added with absolute sequence numbers (base 0). */
  compactAfter?: FileChange[];
  /** COMPACT: changelog files produced by compaction (absolute sequence numbers). */
  compactChangelog?: FileChange[];
  properties?: Record<string, string>;
  watermark?: number;
  /**
   * Commit a snapshot even when the request holds no file at all. Without it an empty request
   * commits nothing and returns the latest snapshot: an empty snapshot would only make streams
   * and expiry do work for nothing.
   */
  allowEmpty?: boolean;
  /**
   * Commit files written under an older schema than the latest snapshot's (they are read through
   * the newer one by field id) instead of failing with SchemaChangedError. For files written
   * elsewhere and only committed here (the commit function), which cannot be planned again.
   */
  acceptOlderSchema?: boolean;
  /**
   * OVERWRITE: which partitions the commit replaces. Every file live in them on the snapshot the
   * commit lands on is removed — recomputed on each attempt, so rows a concurrent commit added
   * there before this one are replaced too (Paimon's overwrite). `partitions`: exact partition
   * paths; `match`: partitions whose values equal these (a partial spec); neither: the whole table.
   */
  overwrite?: { partitions?: string[]; match?: Record<string, string> };
  /**
   * The deletion-vector index (Snapshot.deletionVectors) the snapshot takes as it is, instead of
   * one computed for the changes: a rollback's, which holds its target's files again and so its
   * target's vectors, exact for them (vectors of unchanged files may have to shrink again, which
   * a computation over the added files' keys would not do).
   */
  deletionVectors?: string;
}

/**
 * Work the commit loop runs around every commit of an action (the table layer passes the table's
 * commit hooks, lib/table/table-commit.ts): `before` once before the first attempt (may refuse
 * the commit: WriteStallError), `after` once the snapshot was created by this call (a failure
 * there is reported in CommitResult.hookError, never makes the commit look failed).
 */
export interface CommitLoopHooks {
  before?(action: string, changes: CommitRequest): Promise<void>;
  after?(action: string, snapshot: Snapshot, changes: CommitRequest): Promise<void>;
}

/** The file changes of one commit attempt on its base: sequence numbers assigned, an overwrite's replaced files included. */
export interface PlannedChanges {
  adds: ManifestEntry[];
  deletes: ManifestEntry[];
}

/**
 * Keeps a table's deletion vectors (lib/table/deletion-maintenance.ts). Called on every attempt,
 * with the attempt's base (so what other commits landed first is seen): writes the vectors the
 * changes make and returns the name of the new snapshot's deletion-vector index.
 */
export interface DeletionVectorPlanner {
  plan(
    base: Snapshot | undefined,
    changes: PlannedChanges,
    previous: readonly ManifestFileMeta[],
    cache: ManifestCache,
  ): Promise<string>;
}

/** How a commit retries, merges manifests and compares keys. */
export interface CommitOptions {
  /** Retries after lost races and retryable store errors (default 10). */
  maxRetries?: number;
  minRetryWaitMs?: number;
  maxRetryWaitMs?: number;
  /** Give up (CommitRetriesExhaustedError) once this much time has passed; no limit by default. */
  timeoutMs?: number;
  manifestTargetFileSize?: number;
  manifestMergeMinCount?: number;
  manifestFullCompactionThresholdSize?: number;
  /** Orders primary keys (as stored in DataFileMeta.minKey/maxKey), for the level ≥ 1 overlap check. */
  compareKeys: (a: JsonValue[], b: JsonValue[]) => number;
  /** How many recent snapshots are searched for this commit's identifier (default 100). */
  dedupLookback?: number;
  /**
   * Also check that an APPEND's files are not live already (Paimon's checkAppendFiles; default
   * true): a replay older than the dedup window then fails instead of adding files twice. Costs
   * reading the manifests of the touched partitions.
   */
  checkAppendFiles?: boolean;
  /**
   * A snapshot id up to which no snapshot holds any file this commit adds, as its caller knows
   * (the group commit: its deduplication window knows every snapshot since its batches were
   * written, and none holds them: lib/table/group-commit.ts). An attempt on exactly that base
   * skips checkAppendFiles' read of the live files (nothing it adds can be live); an attempt on a
   * later one (a lost race) checks as usual.
   */
  addsUnseenThrough?: number;
  now?: () => number;
  onRetry?: (attempt: number, reason: string) => void;
  /** Reuse across commits of one table (with `cacheSnapshots`) to skip re-reading the dedup window. */
  snapshotManager?: SnapshotManager;
  /** Reuse across commits of one table to read each manifest once. */
  manifestCache?: ManifestCache;
  hooks?: CommitLoopHooks;
  /** The table keeps deletion vectors: every snapshot gets its index (Snapshot.deletionVectors). */
  deletionVectors?: DeletionVectorPlanner;
  /**
   * Set by a committer that sends compaction jobs (the functions): whether a bucket is due in a
   * summary. Each snapshot then records the buckets with a job queued, and which jobs its own
   * committer sends after it lands (queued-jobs.ts).
   */
  compactionDue?: CompactionDue;
  /**
   * Properties a commit carries from its base `base`, given its own `properties` (the table's:
   * the deduplication window's checkpoint for a commit holding no ids of its own).
   */
  carriedProperties?: (base: Snapshot, properties: Readonly<Record<string, string>>) => Record<string, string>;
}

/** The entries of a commit on one base, with sequence numbers made absolute. */
export interface AssignedChanges {
  adds: ManifestEntry[];
  deletes: ManifestEntry[];
  changelog: ManifestEntry[];
  nextSequenceNumber: number;
}

function entry(kind: 'ADD' | 'DELETE', c: FileChange, file: DataFileMeta = c.file): ManifestEntry {
  return { kind, partition: c.partition, bucket: c.bucket, totalBuckets: c.totalBuckets, file };
}

/**
 * Assigns sequence numbers on a base whose `nextSequenceNumber` is `next`: each batch, in order,
 * gets base = the running counter and advances it by its row count; compaction output keeps its
 * absolute numbers and only raises the counter past its largest number.
 */
export function assignSequenceNumbers(req: CommitRequest, next: number): AssignedChanges {
  const adds: ManifestEntry[] = [];
  const changelog: ManifestEntry[] = [];
  for (const batch of req.batches ?? []) {
    const base = next;
    const rebase = (f: DataFileMeta): DataFileMeta => ({
      ...f,
      sequenceBase: base,
      minSequenceNumber: base + f.minSequenceNumber,
      maxSequenceNumber: base + f.maxSequenceNumber,
    });
    for (const c of batch.newFiles) adds.push(entry('ADD', c, rebase(c.file)));
    for (const c of batch.changelogFiles) changelog.push(entry('ADD', c, rebase(c.file)));
    next += batch.rowCount;
  }
  for (const c of req.compactAfter ?? []) {
    adds.push(entry('ADD', c));
    next = Math.max(next, c.file.maxSequenceNumber + 1);
  }
  for (const c of req.compactChangelog ?? []) changelog.push(entry('ADD', c));
  const deletes = (req.compactBefore ?? []).map((c) => entry('DELETE', c));
  return { adds, deletes, changelog, nextSequenceNumber: next };
}

/** True when the request adds, removes and logs no file. */
export function isEmptyRequest(req: CommitRequest): boolean {
  const batchFiles = (req.batches ?? []).some((b) => b.newFiles.length > 0 || b.changelogFiles.length > 0);
  return !batchFiles && !hasCompactFiles(req);
}

function hasCompactFiles(req: CommitRequest): boolean {
  return !!(req.compactBefore?.length || req.compactAfter?.length || req.compactChangelog?.length);
}

function bad(message: string): never {
  throw new InvalidArgumentError(`invalid commit request: ${message}`);
}

function checkFileChange(c: FileChange, where: string): void {
  if (!Number.isSafeInteger(c.totalBuckets) || c.totalBuckets < 1)
    bad(`${where}: totalBuckets ${c.totalBuckets} must be an integer ≥ 1`);
  if (!Number.isSafeInteger(c.bucket) || c.bucket < 0 || c.bucket >= c.totalBuckets) {
    bad(`${where}: bucket ${c.bucket} is outside 0..${c.totalBuckets - 1}`);
  }
  if (typeof c.partition !== 'string') bad(`${where}: partition must be a string ('' when unpartitioned)`);
  const f = c.file;
  if (typeof f?.fileName !== 'string' || f.fileName === '' || f.fileName.includes('/'))
    bad(`${where}: fileName must be a plain file name`);
  if (!Number.isSafeInteger(f.level) || f.level < 0) bad(`${where}: level ${f.level} must be an integer ≥ 0`);
  if (!(f.minSequenceNumber <= f.maxSequenceNumber)) bad(`${where}: minSequenceNumber > maxSequenceNumber`);
}

/** Throws InvalidArgumentError unless the request is well formed for its kind. */
export function validateCommitRequest(req: CommitRequest): void {
  if (typeof req.commitUser !== 'string' || req.commitUser === '') bad('commitUser must be a non-empty string');
  if (typeof req.commitIdentifier !== 'string' || req.commitIdentifier === '')
    bad('commitIdentifier must be a non-empty string');
  if (!['APPEND', 'COMPACT', 'OVERWRITE'].includes(req.kind))
    bad(`kind ${JSON.stringify(req.kind)} is not APPEND, COMPACT or OVERWRITE`);
  if (!Number.isSafeInteger(req.schemaId) || req.schemaId < 0) bad(`schemaId ${req.schemaId} must be an integer ≥ 0`);
  const hasCompact = hasCompactFiles(req);
  const hasBatches = (req.batches ?? []).some(
    (b) => b.newFiles.length > 0 || b.changelogFiles.length > 0 || b.rowCount > 0,
  );
  if (req.kind === 'APPEND' && hasCompact)
    bad('an APPEND commit carries batches only; use COMPACT or OVERWRITE to remove or rewrite files');
  if (req.kind === 'COMPACT' && hasBatches)
    bad('a COMPACT commit carries compactBefore/compactAfter only; commit new data with APPEND');
  if (req.overwrite !== undefined && req.kind !== 'OVERWRITE')
    bad('only an OVERWRITE commit may name partitions to overwrite');
  if (req.batchIdentifiers !== undefined) {
    if (req.kind !== 'APPEND') bad('batchIdentifiers are for APPEND commits');
    if (req.identifierIndex)
      bad("a commit indexes either its own identifier (identifierIndex) or its batches' (batchIdentifiers), not both");
    if (req.batchIdentifiers.length !== (req.batches ?? []).length)
      bad(`batchIdentifiers has ${req.batchIdentifiers.length} entries for ${(req.batches ?? []).length} batches`);
    const given = req.batchIdentifiers.filter((id): id is string => id !== undefined);
    if (given.some((id) => typeof id !== 'string' || id === '')) bad('a batch identifier must be a non-empty string');
    if (new Set(given).size !== given.length)
      bad('two batches of one commit carry the same identifier; drop the duplicate before committing');
  }
  (req.batches ?? []).forEach((b, i) => {
    if (!Number.isSafeInteger(b.rowCount) || b.rowCount < 0)
      bad(`batch ${i}: rowCount ${b.rowCount} must be an integer ≥ 0`);
    for (const c of [...b.newFiles, ...b.changelogFiles]) {
      const where = `batch ${i}, file ${c.file?.fileName}`;
      checkFileChange(c, where);
      // Batch files number their rows 0..rowCount-1; the commit adds the base.
      if (c.file.sequenceBase !== 0) bad(`${where}: sequenceBase must be 0 before commit (the commit assigns it)`);
      if (c.file.minSequenceNumber < 0 || c.file.maxSequenceNumber >= b.rowCount) {
        bad(
          `${where}: sequence numbers ${c.file.minSequenceNumber}..${c.file.maxSequenceNumber} fall outside the batch's 0..${b.rowCount - 1}`,
        );
      }
    }
  });
  for (const [name, list] of [
    ['compactBefore', req.compactBefore],
    ['compactAfter', req.compactAfter],
    ['compactChangelog', req.compactChangelog],
  ] as const) {
    for (const c of list ?? []) checkFileChange(c, `${name}, file ${c.file?.fileName}`);
  }
  // One commit names each file once: an ADD twice, or ADD and DELETE of one identity, is a bug.
  const seen = new Set<string>();
  const { adds, deletes, changelog } = assignSequenceNumbers(req, 0);
  for (const e of [...adds, ...deletes]) {
    const id = fileIdentity(e);
    if (seen.has(id)) bad(`file ${describeEntry(e)} appears twice among the files the commit adds and removes`);
    seen.add(id);
  }
  const logged = new Set<string>();
  for (const e of changelog) {
    const id = fileIdentity(e);
    if (logged.has(id)) bad(`changelog file ${describeEntry(e)} appears twice`);
    logged.add(id);
  }
}
