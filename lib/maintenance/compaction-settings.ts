/**
 * The compaction-related options of a table, read once into a plain object (Paimon's names and
 * defaults): universal compaction knobs, levels, write stall, file sizes, changelog producer.
 */
import type { ChangelogProducer } from '../schema/options.js';
import type { Table } from '../table/table.js';
import type { UniversalCompactionOptions } from '../mergetree/universal-compaction.js';
import type { AppendCompactionOptions } from '../mergetree/append-compaction.js';

export interface CompactionSettings {
  universal: UniversalCompactionOptions;
  /** `num-levels`: levels 0..numLevels−1 (default trigger + 1). */
  numLevels: number;
  /** `num-sorted-run.stop-trigger`: writes stall above this many sorted runs (default trigger + 3). */
  stopTrigger: number;
  /** `target-file-size` in bytes (128 MB). */
  targetFileSize: number;
  /** Files below target × SMALL_FILE_RATIO are rewritten, not upgraded. */
  compactionFileSize: number;
  /** `compaction.memory-budget`: a section's merge spills sorted runs to local disk beyond it. */
  memoryBudget: number;
  changelogProducer: ChangelogProducer;
  /** `changelog-producer.row-deduplicate`. */
  rowDeduplicate: boolean;
  /** `full-compaction.delta-commits`: a full compaction every this many APPEND commits. */
  fullCompactionDeltaCommits?: number;
  /** `write-only`: writers never compact; a separate job does. */
  writeOnly: boolean;
  /**
   * True when a -D record resets a key's state in the merge engine (aggregation or partial-update
   * with remove-record-on-delete): merging "-D then +I" into one +I loses the reset, so such a
   * merge must not happen while older data of the key may sit below the output.
   */
  deleteResetsKey: boolean;
  /** Set for an append table (no primary key): small-file compaction instead of universal compaction. */
  append?: AppendCompactionOptions;
}

/**
 * Paimon's `compaction.small-file-ratio` default: a non-overlapping file below this share of the
 * target size is rewritten with its neighbours instead of being moved up as it is.
 */
const SMALL_FILE_RATIO = 0.7;

/** The table's compaction settings. */
export function compactionSettingsOf(table: Table): CompactionSettings {
  const o = table.options;
  return {
    universal: {
      numSortedRunCompactionTrigger: o.numSortedRunCompactionTrigger,
      maxSizeAmplificationPercent: o.compactionMaxSizeAmplificationPercent,
      sizeRatio: o.compactionSizeRatio,
    },
    numLevels: o.numLevels,
    stopTrigger: o.numSortedRunStopTrigger,
    targetFileSize: o.targetFileSize,
    compactionFileSize: o.targetFileSize * SMALL_FILE_RATIO,
    memoryBudget: o.compactionMemoryBudget,
    changelogProducer: o.changelogProducer,
    rowDeduplicate: o.changelogProducerRowDeduplicate,
    fullCompactionDeltaCommits: o.fullCompactionDeltaCommits,
    writeOnly: o.writeOnly,
    deleteResetsKey:
      (o.mergeEngine === 'aggregation' && o.aggregationRemoveRecordOnDelete) ||
      (o.mergeEngine === 'partial-update' &&
        (o.partialUpdateRemoveRecordOnDelete || o.partialUpdateRemoveRecordOnSequenceGroup.length > 0)),
    append:
      table.schema.primaryKeys.length === 0
        ? {
            targetFileSize: o.targetFileSize,
            compactionFileSize: o.targetFileSize * SMALL_FILE_RATIO,
            minFileNum: o.get('compaction.min.file-num'),
            maxFileNum: o.get('compaction.max.file-num'),
          }
        : undefined,
  };
}
