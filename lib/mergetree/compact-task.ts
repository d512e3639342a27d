/**
 * Runs one compaction unit (Paimon's MergeTreeCompactTask). The unit's files are cut into
 * sections of overlapping key ranges: a section of several runs is rewritten through the merge
 * engine; a lone file is upgraded — the same file, moved to the output level with no rewrite —
 * unless it is small (then it is rewritten with its neighbours) or it may hold deletes and the
 * output is the max level (deletes must not reach the level that no older data sits under).
 * Rewritten output streams into files of about `target-file-size`; each section is merged a row
 * group per input at a time, within `compaction.memory-budget` (section-merge.ts).
 */
import type * as arrow from 'apache-arrow';
import type { DataFileMeta } from '../manifest/types.js';
import type { TableSchema } from '../schema/types.js';
import { intervalPartition } from './interval-partition.js';
import type { MergeFunction } from './merge-function.js';
import { RollingFileSink, type DataFileSink } from './rolling-writer.js';
import { fileRun, mergeSection, type SectionPiece } from './section-merge.js';
import type { KeyComparator, SortedRun } from './sorted-run.js';
import type { CompactUnit } from './universal-compaction.js';

/** How the task reads input files and writes output files (the store layer lives above lib/mergetree). */
export interface CompactFileIO {
  /**
   * The rows of a data file a row group at a time, in the physical layout, with the stored sequence
   * numbers. `reuseBuffers`: decoded into memory reused batch after batch, so a chunk is valid only
   * until two more have been taken (the rewrite's merge holds one chunk per run and copies what it
   * keeps).
   */
  chunks(file: DataFileMeta, opts?: { reuseBuffers?: boolean }): AsyncIterable<arrow.Table>;
  /** A new data file of `level` that key-sorted rows (absolute sequence numbers) stream into. */
  create(level: number): Promise<DataFileSink<DataFileMeta>>;
  /**
   * Every sink `create` returns is done with the rows given to `add` when it returns (encoded or
   * copied, nothing kept), so the merge may build its next steps' rows in the same memory.
   */
  readonly sinksCopyRows?: boolean;
}

export type { SectionPiece };

/** Hooks for changelog producers: told about every rewritten key interval and every upgrade. */
export interface CompactObserver {
  /**
   * A key interval of a section was merged: each input run's rows of it (a run spilled by the
   * memory budget holds several versions per key and never mixes max-level files with others)
   * and the merged, key-sorted result. Intervals arrive in key order.
   */
  rewritten?(pieces: SectionPiece[], merged: arrow.Table, outputLevel: number): void | Promise<void>;
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
  /** Bytes a section's merge may hold before it spills sorted runs to local disk (`compaction.memory-budget`). */
  memoryBudget?: number;
  /** Folder for spilled runs (default: the OS temp directory). */
  spillRoot?: string;
}

/** What a task did: files removed and added (an upgrade is both), and counts for reporting. */
export interface CompactTaskResult {
  before: DataFileMeta[];
  after: DataFileMeta[];
  upgradedFiles: number;
  rewrittenFiles: number;
  bytesRead: number;
  bytesWritten: number;
  /** Spill passes run because a section did not fit `memoryBudget`. */
  spillPasses: number;
}

/** Compacts `unit` into `unit.outputLevel`; nothing is committed here. */
export async function runCompactTask(
  unit: CompactUnit,
  opts: CompactTaskOptions,
  io: CompactFileIO,
  observer: CompactObserver = {},
): Promise<CompactTaskResult> {
  const task = new CompactTask(unit, opts, io, observer);
  await task.run();
  return task.result;
}

class CompactTask {
  readonly result: CompactTaskResult = {
    before: [],
    after: [],
    upgradedFiles: 0,
    rewrittenFiles: 0,
    bytesRead: 0,
    bytesWritten: 0,
    spillPasses: 0,
  };
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
    const out = new RollingFileSink(
      this.opts.targetFileSize,
      bytes,
      rows,
      () => this.io.create(this.outputLevel),
      (meta) => {
        this.result.bytesWritten += meta.fileSize;
        this.result.after.push(meta);
      },
    );
    try {
      for (const section of sections) {
        // Each file is its own run: it carries its own sequence base (an upgraded level-0 file
        // keeps the base its commit gave it), and a run of several files would need one.
        const sectionFiles = section.flat();
        // The merge steps hold one chunk per run and finish with a step (merged, observed, written
        // out) before the next chunk is taken: the inputs decode into reused memory.
        const runs = sectionFiles.map((file) => fileRun(file, this.io.chunks(file, { reuseBuffers: true })));
        const merged = mergeSection(runs, {
          schema: this.opts.schema,
          engine: this.opts.engine,
          dropDeletes: this.opts.dropDeletes,
          memoryBudget: this.opts.memoryBudget ?? Infinity,
          maxLevel: this.opts.maxLevel,
          spillRoot: this.opts.spillRoot,
          onSpill: () => this.result.spillPasses++,
          // Reused only when no one keeps a step's rows: the sinks copy them (into the encoder)
          // before out.add returns, and a changelog producer may keep them.
          reuseOutput: this.io.sinksCopyRows === true && this.observer.rewritten === undefined,
        });
        for await (const { pieces, merged: rowsOut } of merged) {
          await this.observer.rewritten?.(pieces, rowsOut, this.outputLevel);
          await out.add(rowsOut);
        }
        for (const f of sectionFiles) {
          this.result.before.push(f);
          this.result.bytesRead += f.fileSize;
          this.result.rewrittenFiles++;
        }
      }
    } catch (e) {
      await out.discard();
      throw e;
    }
    await out.finish();
  }
}
