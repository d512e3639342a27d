/**
 * One run of a bucket's compaction plan: the changelog the plan calls for (lookup: before the
 * rewrite, from the level-0 inputs and the higher levels; full-compaction: observed during it),
 * the compaction task and the changelog files. The commit is the run's (compact-commit.ts): one
 * COMPACT snapshot for every bucket a compaction run compacted.
 */
import { createHash } from 'node:crypto';
import type { DataFileMeta } from '../manifest/types.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import { FullCompactionChangelog } from '../mergetree/changelog/full-compaction.js';
import { lookupCandidates, lookupChangelogPieces } from '../mergetree/changelog/lookup.js';
import { type CompactTaskResult, runCompactTask } from '../mergetree/compact-task.js';
import { mergeConfigFromOptions } from '../mergetree/merge-config.js';
import { type MergeFunction, mergeEngineFor } from '../mergetree/merge-function.js';
import type { FileChange } from '../snapshot/commit.js';
import type { Table } from '../table/table.js';
import { BucketFileIO, type ChangelogFileSink } from './compact-io.js';
import type { BucketPlan } from './compact-plan.js';
import type { CompactionSettings } from './compaction-settings.js';

/** The commit user of every compaction; a retried job is recognised by its identifier. */
export const COMPACT_COMMIT_USER = 'compactor';
/** Snapshot property set on the COMPACT snapshots of full compactions (full-compaction.delta-commits counts from them). */
export const FULL_COMPACTION_PROPERTY = 'varve.full-compaction';

/** The file, byte and changelog counts of a compaction: one bucket's, or summed over a table. */
export interface CompactionCounters {
  filesIn: number;
  filesOut: number;
  upgradedFiles: number;
  bytesIn: number;
  bytesOut: number;
  changelogFiles: number;
  changelogRows: number;
}

const COUNTER_KEYS = [
  'filesIn',
  'filesOut',
  'upgradedFiles',
  'bytesIn',
  'bytesOut',
  'changelogFiles',
  'changelogRows',
] as const satisfies ReadonlyArray<keyof CompactionCounters>;

/** All counters at zero. */
export function zeroCounters(): CompactionCounters {
  return { filesIn: 0, filesOut: 0, upgradedFiles: 0, bytesIn: 0, bytesOut: 0, changelogFiles: 0, changelogRows: 0 };
}

/** Adds `from`'s counters into `into`. */
export function addCounters(into: CompactionCounters, from: CompactionCounters): void {
  for (const k of COUNTER_KEYS) into[k] += from[k];
}

/** What compacting one bucket did. */
export interface BucketCompactionResult extends CompactionCounters {
  partition: string;
  bucket: number;
  /** The COMPACT snapshot, when one was committed (or had been, by an earlier run of the same job). */
  snapshot?: Snapshot;
  /** True when an earlier attempt of the same job had already committed it. */
  alreadyCommitted: boolean;
  /** Plans made (1 + re-plans after conflicts). */
  attempts: number;
}

/** The result of a bucket with nothing due. */
export function emptyResult(partition: string, bucket: number, attempts: number): BucketCompactionResult {
  return { partition, bucket, alreadyCommitted: false, ...zeroCounters(), attempts };
}

/**
 * Derived from what the job compacts, so that a retried job that had committed is recognised:
 * the bucket, the mode and every input file with its level (levels only grow, so the same set
 * never comes back).
 */
function compactCommitIdentifier(partition: string, bucket: number, plan: BucketPlan, full: boolean): string {
  const inputs = plan.unit.files.map((f) => `${f.level}/${f.fileName}`).sort();
  const digest = createHash('sha256')
    .update(JSON.stringify([partition, bucket, full, plan.unit.outputLevel, inputs]))
    .digest('hex');
  return `compact-${digest.slice(0, 32)}`;
}

/** A bucket whose plan ran: its outputs are written, not yet committed. */
export interface PreparedBucket extends CompactionCounters {
  partition: string;
  bucket: number;
  plan: BucketPlan;
  full: boolean;
  /** Files removed, added and changelog written (the run's commit carries them). */
  changes: { before: FileChange[]; after: FileChange[]; changelog: FileChange[] };
  /** What this bucket contributes to the run's commit identifier. */
  identifier: string;
  /** Plans made for this bucket in the run (1 + re-plans after conflicts). */
  attempts: number;
  /** Deletes what the bucket wrote; for outputs the commit certainly did not take. */
  discard: () => Promise<void>;
}

/**
 * Runs a bucket's plan: the changelog the plan calls for, the compaction task, the changelog
 * files. Returns undefined when the plan changed nothing. Nothing is committed here: the run
 * commits every prepared bucket in one COMPACT snapshot (compact-commit.ts). On a failure the
 * bucket's outputs are deleted (nothing references them).
 */
export async function prepareBucketPlan(
  table: Table,
  settings: CompactionSettings,
  job: { partition: string; bucket: number; plan: BucketPlan; full: boolean; attempt: number },
): Promise<PreparedBucket | undefined> {
  const { plan } = job;
  const io = new BucketFileIO(table, job.partition, job.bucket);
  const engine = mergeEngineFor(mergeConfigFromOptions(table.options, table.schema.primaryKeys));
  const { levels, unit } = plan;
  // Changelog rows stream into level-0 changelog files as a producer finds them.
  const unitRows = unit.files.reduce((s, f) => s + f.rowCount, 0);
  const bytesPerRow = unitRows > 0 ? plan.inputBytes / unitRows : 1;
  const changelog = io.changelogFiles(settings.targetFileSize, bytesPerRow);
  try {
    const lookupFiles = plan.lookupChangelog
      ? await writeLookupChangelog(table, settings, io, plan, engine, changelog)
      : undefined;
    const fullLog = plan.fullChangelog
      ? new FullCompactionChangelog({
          schema: table.schema,
          engine,
          maxLevel: levels.maxLevel,
          rowDeduplicate: settings.rowDeduplicate,
          chunks: (f) => io.chunks(f),
          emit: (log) => changelog.add(log),
        })
      : undefined;
    const result = await runCompactTask(
      unit,
      {
        schema: table.schema,
        engine,
        compareKeys: table.compareKeys,
        maxLevel: levels.maxLevel,
        dropDeletes: plan.dropDeletes,
        targetFileSize: settings.targetFileSize,
        compactionFileSize: settings.compactionFileSize,
        memoryBudget: settings.memoryBudget,
      },
      io,
      fullLog ?? {},
    );
    const changelogFiles = lookupFiles ?? (await changelog.finish());
    if (result.before.length === 0 && changelogFiles.length === 0) {
      await io.deleteWritten();
      return undefined;
    }
    return preparedBucket(job, io, result, changelogFiles, changelog.rows);
  } catch (e) {
    // Nothing references what this bucket wrote: no commit has been tried yet.
    await changelog.discard();
    await io.deleteWritten();
    throw e;
  }
}

/**
 * The lookup changelog, from the level-0 inputs and the higher-level files their keys may be in,
 * written before the rewrite starts (its last file too); returns its files.
 */
async function writeLookupChangelog(
  table: Table,
  settings: CompactionSettings,
  io: BucketFileIO,
  plan: BucketPlan,
  engine: MergeFunction,
  changelog: ChangelogFileSink,
): Promise<DataFileMeta[]> {
  const level0 = plan.unit.files.filter((f) => f.level === 0);
  const higher = lookupCandidates(level0, plan.levels.allFiles(), table.compareKeys);
  const runs = (files: typeof level0) => files.map((file) => ({ file, chunks: io.chunks(file) }));
  const pieces = lookupChangelogPieces(runs(level0), runs(higher), {
    schema: table.schema,
    engine,
    rowDeduplicate: settings.rowDeduplicate,
    compareKeys: table.compareKeys,
  });
  for await (const log of pieces) await changelog.add(log);
  return changelog.finish();
}

/** The bucket's changes and counters once its plan ran. */
function preparedBucket(
  job: { partition: string; bucket: number; plan: BucketPlan; full: boolean; attempt: number },
  io: BucketFileIO,
  result: CompactTaskResult,
  changelogFiles: DataFileMeta[],
  changelogRows: number,
): PreparedBucket {
  const { partition, bucket, plan, full } = job;
  const change = (file: FileChange['file']): FileChange => ({
    partition,
    bucket,
    totalBuckets: plan.totalBuckets,
    file,
  });
  return {
    partition,
    bucket,
    plan,
    full,
    changes: {
      before: result.before.map(change),
      after: result.after.map(change),
      changelog: changelogFiles.map(change),
    },
    identifier: compactCommitIdentifier(partition, bucket, plan, full),
    attempts: job.attempt,
    discard: () => io.deleteWritten(),
    filesIn: result.before.length,
    filesOut: result.after.length,
    upgradedFiles: result.upgradedFiles,
    bytesIn: result.bytesRead,
    bytesOut: result.bytesWritten,
    changelogFiles: changelogFiles.length,
    changelogRows,
  };
}
