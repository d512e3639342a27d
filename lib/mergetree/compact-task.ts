/**
 * Runs one compaction unit (Paimon's MergeTreeCompactTask). The unit's files are cut into
 * sections of overlapping key ranges: a section of several runs is rewritten through the merge
 * engine; a lone file is upgraded — the same file, moved to the output level with no rewrite —
 * unless it is small (then it is rewritten with its neighbours) or it may hold deletes and the
 * output is the max level (deletes must not reach the level that no older data sits under).
 * Rewritten output is rolled into files of about `target-file-size`.
 */
import type * as arrow from 'apache-arrow';
import { runLimited } from '../concurrency.js';
import type { DataFileMeta } from '../manifest/types.js';
import type { TableSchema } from '../schema/types.js';
import { intervalPartition } from './interval-partition.js';
import type { MergeFunction } from './merge-function.js';
import { RollingFileWriter } from './rolling-writer.js';
import { mergeSortedRuns, type RunInput } from './sort-merge-reader.js';
import type { KeyComparator, SortedRun } from './sorted-run.js';
import type { CompactUnit } from './universal-compaction.js';

/** How the task reads input files and writes output files (the store layer lives above lib/mergetree). */
export interface CompactFileIO {
  /** The rows of a data file, in the physical layout, with the stored sequence numbers. */
  read(file: DataFileMeta): Promise<arrow.Table>;
  /** Writes key-sorted rows (absolute sequence numbers) as a new data file of `level`; returns its metadata. */
  write(data: arrow.Table, level: number): Promise<DataFileMeta>;
}

/** One input file of a rewritten section, with its rows. */
export interface SectionInput {
  file: DataFileMeta;
  table: arrow.Table;
}

/** Each input file as its own sorted run, with the sequence base its commit gave it. */
export function sectionRuns(inputs: SectionInput[]): RunInput[] {
  return inputs.map((i) => ({ table: i.table, sequenceBase: i.file.sequenceBase }));
}

/** Hooks for changelog producers: told about every rewritten section and every upgrade. */
export interface CompactObserver {
  /** A section was merged: its input files (with rows) and the merged, key-sorted result. */
  rewritten?(inputs: SectionInput[], merged: arrow.Table, outputLevel: number): void | Promise<void>;
  /** A file moved up to `outputLevel` without being rewritten. */
  upgraded?(file: DataFileMeta, outputLevel: number): void | Promise<void>;
}

export interface CompactTaskOptions {
  schema: TableSchema;
  engine: MergeFunction;
  compareKeys: KeyComparator;
  /** The bucket's highest level (`num-levels` − 1). */
  maxLevel: number;
  /** Drop -U/-D results: only when no older data can sit below the output level. */
  dropDeletes: boolean;
  /** Output files roll at about this many bytes (`target-file-size`). */
  targetFileSize: number;
  /** Non-overlapping files smaller than this are rewritten rather than upgraded (target × `compaction.small-file-ratio`). */
  compactionFileSize: number;
  /** Files read at once within a section. */
  readParallelism?: number;
}

/** What a task did: files removed and added (an upgrade is both), and counts for reporting. */
export interface CompactTaskResult {
  before: DataFileMeta[];
  after: DataFileMeta[];
  upgradedFiles: number;
  rewrittenFiles: number;
  bytesRead: number;
  bytesWritten: number;
}

/** Compacts `unit` into `unit.outputLevel`; nothing is committed here. */
export async function runCompactTask(unit: CompactUnit, opts: CompactTaskOptions, io: CompactFileIO, observer: CompactObserver = {}): Promise<CompactTaskResult> {
  const task = new CompactTask(unit, opts, io, observer);
  await task.run();
  return task.result;
}

class CompactTask {
  readonly result: CompactTaskResult = { before: [], after: [], upgradedFiles: 0, rewrittenFiles: 0, bytesRead: 0, bytesWritten: 0 };
  private readonly outputLevel: number;

  constructor(
    private readonly unit: CompactUnit,
    private readonly opts: CompactTaskOptions,
    private readonly io: CompactFileIO,
    private readonly observer: CompactObserver,
  ) {
    this.outputLevel = unit.outputLevel;
  }

  async run(): Promise<void> {
    // Sections are disjoint and in key order; so are the candidates gathered below, which keeps
    // every output of the unit apart from every other in key range (level ≥ 1 stays one run).
    const candidate: SortedRun[][] = [];
    for (const section of intervalPartition(this.unit.files, this.opts.compareKeys)) {
      if (section.length > 1) {
        candidate.push(section);
        continue;
      }
      for (const file of section[0]) {
        if (file.fileSize < this.opts.compactionFileSize) {
          candidate.push([[file]]);
        } else {
          // A large file breaks the candidate: rewrite what came before it, then move it up as is.
          await this.rewrite(candidate);
          await this.upgrade(file);
        }
      }
    }
    await this.rewrite(candidate);
  }

  private async upgrade(file: DataFileMeta): Promise<void> {
    if (file.level === this.outputLevel) return;
    if (this.outputLevel !== this.opts.maxLevel || file.deleteRowCount === 0) {
      const moved: DataFileMeta = { ...file, level: this.outputLevel };
      this.result.before.push(file);
      this.result.after.push(moved);
      this.result.upgradedFiles++;
      await this.observer.upgraded?.(file, this.outputLevel);
    } else {
      // Its retractions would otherwise sit at the max level forever.
      await this.rewriteSections([[[file]]]);
    }
  }

  private async rewrite(candidate: SortedRun[][]): Promise<void> {
    if (candidate.length === 0) return;
    const sections = candidate.splice(0);
    if (sections.length === 1 && sections[0].length === 1) {
      // One run overlapping nothing: nothing to merge, every file can move up as it is.
      for (const file of sections[0][0]) await this.upgrade(file);
      return;
    }
    await this.rewriteSections(sections);
  }

  private async rewriteSections(sections: SortedRun[][]): Promise<void> {
    const files = sections.flat(2);
    let bytes = 0;
    let rows = 0;
    for (const f of files) {
      bytes += f.fileSize;
      rows += f.rowCount;
    }
    const out = new RollingFileWriter(this.opts.targetFileSize, bytes, rows, async (data) => {
      const meta = await this.io.write(data, this.outputLevel);
      this.result.bytesWritten += meta.fileSize;
      this.result.after.push(meta);
    });
    for (const section of sections) {
      const sectionFiles = section.flat();
      const inputs = await runLimited(
        sectionFiles.map((file) => async (): Promise<SectionInput> => ({ file, table: await this.io.read(file) })),
        this.opts.readParallelism ?? 4,
      );
      // Each file is its own run: it carries its own sequence base (an upgraded level-0 file keeps
      // the base its commit gave it), and a run of several files would need one.
      const merged = mergeSortedRuns(
        sectionRuns(inputs),
        { schema: this.opts.schema, keyColumns: this.opts.schema.primaryKeys, engine: this.opts.engine, dropDeletes: this.opts.dropDeletes, keepKinds: true },
      );
      await this.observer.rewritten?.(inputs, merged, this.outputLevel);
      await out.add(merged);
      for (const f of sectionFiles) {
        this.result.before.push(f);
        this.result.bytesRead += f.fileSize;
        this.result.rewrittenFiles++;
      }
    }
    await out.finish();
  }
}
