/**
 * The merge engine interface. A driver (the write buffer's flush, the sort-merge reader,
 * compaction) lays out every version of every key in merge order as a VersionSet; the engine
 * walks the key groups (oldest → newest) and emits, per group, a whole version to take or a
 * computed row, with its row kind. Engines never see row objects.
 */
import type { TableSchema } from '../schema/types.js';
import { AggregationMergeFunction } from './aggregation.js';
import { AppendOnlyMergeFunction } from './append-only.js';
import { DeduplicateMergeFunction } from './deduplicate.js';
import { FirstRowMergeFunction } from './first-row.js';
import type { MergeConfig, MergeEngineName } from './merge-config.js';
import type { MergeResult } from './merge-result.js';
import { PartialUpdateMergeFunction } from './partial-update.js';
import type { VersionSet } from './version-set.js';

/** How a driver asks an engine to merge. */
export interface MergeOptions {
  /**
   * True when the versions are raw input records (the write buffer), false when they are
   * already-merged records from files. Only aggregates that count records (`count`) differ.
   */
  rawInput: boolean;
  /** Drop groups whose result is a retraction (-U/-D): batch reads. */
  dropRetracts: boolean;
}

/** A merge engine: turns the versions of each key into at most one record. */
export interface MergeFunction {
  readonly name: MergeEngineName | 'append-only';
  readonly config: MergeConfig;
  /** Checks the configuration against a schema (unknown columns, functions that do not fit a type). */
  validate(schema: TableSchema): void;
  /** Merges every key group of `versions`; results come out in key order. */
  merge(versions: VersionSet, opts: MergeOptions): MergeResult;
}

/** The engine named by `config.engine` (none for an append table: every row is kept). */
export function mergeEngineFor(config: MergeConfig): MergeFunction {
  if (config.appendOnly) return new AppendOnlyMergeFunction(config);
  switch (config.engine) {
    case 'deduplicate':
      return new DeduplicateMergeFunction(config);
    case 'first-row':
      return new FirstRowMergeFunction(config);
    case 'partial-update':
      return new PartialUpdateMergeFunction(config);
    case 'aggregation':
      return new AggregationMergeFunction(config);
  }
}
