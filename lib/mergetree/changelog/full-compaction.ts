/**
 * `changelog-producer = full-compaction`: only a compaction into the max level (which takes every
 * run of the bucket) rewrites the max level, so the changelog is the difference between the max
 * level's content before (the previous full compaction's result) and the new merged content, per
 * key: +I, -U/+U, -D (Paimon's FullChangelogMergeFunctionWrapper). Between full compactions the
 * changelog waits; `full-compaction.delta-commits` bounds how long.
 */
import type * as arrow from 'apache-arrow';
import { concatTables, emptyTable } from '../../format/columns.js';
import { physicalArrowSchema } from '../../format/arrow-schema.js';
import type { DataFileMeta } from '../../manifest/types.js';
import type { TableSchema } from '../../schema/types.js';
import type { CompactObserver, SectionPiece } from '../compact-task.js';
import type { MergeFunction } from '../merge-function.js';
import { mergeSortedRuns } from '../sort-merge-reader.js';
import { diffChangelog, rowsWithKeys } from './diff.js';

export interface FullCompactionChangelogOptions {
  schema: TableSchema;
  engine: MergeFunction;
  maxLevel: number;
  rowDeduplicate: boolean;
  /** Reads a file that is moved into the max level without rewrite (its rows are all new there), a row group at a time. */
  chunks(file: DataFileMeta): AsyncIterable<arrow.Table>;
  /** Where the changelog goes as it is found, in key order (changelog files); without it, it is collected for `changelog()`. */
  emit?(log: arrow.Table): Promise<void>;
}

/**
 * A compaction observer that finds the changelog of a compaction whose output level is the
 * max level and whose unit holds every run of the bucket. Key intervals arrive in key order, so
 * the changelog is key-sorted; it streams to `emit` as found (or is collected without one).
 */
export class FullCompactionChangelog implements CompactObserver {
  private readonly parts: arrow.Table[] = [];
  private readonly physical: arrow.Schema;

  constructor(private readonly opts: FullCompactionChangelogOptions) {
    this.physical = physicalArrowSchema(opts.schema);
  }

  async rewritten(pieces: SectionPiece[], merged: arrow.Table, outputLevel: number): Promise<void> {
    if (outputLevel !== this.opts.maxLevel) return;
    // Every max-level file of the bucket is in the unit, so the interval's max-level rows are the
    // whole before image of its keys (a spilled run never mixes max-level files with others).
    const runs = (top: boolean) => pieces.filter((p) => (p.level === this.opts.maxLevel) === top);
    const top = runs(true);
    const before = top.length === 0 ? emptyTable(this.physical) : this.merge(top);
    // Only keys with records besides the max level's changed (Paimon's wrapper sees a lone
    // top-level record and logs nothing); the interval may hold untouched max-level keys too.
    const touched = this.merge(runs(false));
    const keys = this.opts.schema.primaryKeys;
    await this.push(
      diffChangelog(rowsWithKeys(before, touched, keys), rowsWithKeys(merged, touched, keys), this.diffOptions()),
    );
  }

  async upgraded(file: DataFileMeta, outputLevel: number): Promise<void> {
    if (outputLevel !== this.opts.maxLevel) return;
    // The file overlaps no other file of the unit, the old max level included: all its keys are new.
    for await (const chunk of this.opts.chunks(file)) {
      const rows = this.merge([{ table: chunk, sequenceBase: file.sequenceBase, repeatedKeys: false }]);
      await this.push(diffChangelog(emptyTable(this.physical), rows, this.diffOptions()));
    }
  }

  /** The changelog collected so far, key-sorted (empty with `emit`: it went there). */
  changelog(): arrow.Table {
    return this.parts.length === 0 ? emptyTable(this.physical) : concatTables(this.parts, this.physical);
  }

  private async push(t: arrow.Table): Promise<void> {
    if (t.numRows === 0) return;
    if (this.opts.emit) await this.opts.emit(t);
    else this.parts.push(t);
  }

  private merge(runs: { table: arrow.Table; sequenceBase: number; repeatedKeys: boolean }[]): arrow.Table {
    const repeatedKeys = runs.some((r) => r.repeatedKeys);
    return mergeSortedRuns(runs, {
      schema: this.opts.schema,
      keyColumns: this.opts.schema.primaryKeys,
      engine: this.opts.engine,
      dropDeletes: false,
      keepKinds: true,
      repeatedKeys,
    });
  }

  private diffOptions() {
    return { schema: this.opts.schema, rowDeduplicate: this.opts.rowDeduplicate };
  }
}
