/**
 * Table options: validation of a raw option map and typed access with defaults applied. The
 * declaration of every option is lib/schema/option-catalog.ts; docs/OPTIONS.md is generated from it.
 */
import {
  type AggregateFunction,
  type ChangelogProducer,
  type FileCompression,
  type MergeEngine,
  type ScanMode,
} from './option-catalog.js';
import { checkOptionCombinations, checkOptionsAgainstFields } from './option-checks.js';
import { parseOptionMap, resolveOption, type ParsedOptions } from './option-parse.js';
import type { OptionValue } from './option-values.js';
import type { DataField } from './types.js';

export * from './option-catalog.js';
export { parseDuration, parseMemory, type OptionType, type OptionValue } from './option-values.js';
export { renderOptionsMarkdown } from './options-doc.js';

/**
 * Throws OptionError for an unknown option (suggesting the closest names), an ill-typed value
 * (naming the allowed values or format), or contradicting options; with `fields`, also for
 * per-column options naming missing columns and aggregate functions that do not fit their column.
 */
export function validateOptions(raw: Record<string, string>, fields?: DataField[]): void {
  parseAndCheck(raw, fields);
}

function parseAndCheck(raw: Record<string, string>, fields?: DataField[]): ParsedOptions {
  const parsed = parseOptionMap(raw);
  checkOptionCombinations(parsed);
  if (fields) checkOptionsAgainstFields(parsed, fields);
  return parsed;
}

/** A sequence group of partial-update: `columns` change only with versions whose `sequenceFields` are not older. */
export interface SequenceGroupDecl {
  sequenceFields: string[];
  columns: string[];
}

/** A table's options, validated once, with a typed getter per option and defaults applied. */
export class TableOptions {
  private readonly parsed: ParsedOptions;
  private readonly raw: Record<string, string>;
  /** Getters run on hot paths (per write, per merge): each key is resolved once. */
  private readonly resolved = new Map<string, OptionValue | undefined>();

  /** Validates `raw` (against `fields` when given); throws OptionError. */
  constructor(raw: Record<string, string> = {}, fields?: DataField[]) {
    this.raw = { ...raw };
    this.parsed = parseAndCheck(this.raw, fields);
  }

  /** The typed value of any option, per-column ones included, with its default; undefined when unset without default. */
  get(key: string): OptionValue | undefined {
    let v = this.resolved.get(key);
    if (v === undefined && !this.resolved.has(key)) {
      v = resolveOption(this.parsed, key);
      this.resolved.set(key, v);
    }
    // Lists are copied so a caller's edit cannot change what the next caller sees.
    return Array.isArray(v) ? [...v] : v;
  }

  /** True when the option was given explicitly (not defaulted). */
  has(key: string): boolean {
    return Object.hasOwn(this.raw, key);
  }

  /** The options as given (strings; defaults not materialised), as stored in the schema. */
  toRecord(): Record<string, string> {
    return { ...this.raw };
  }

  private num(key: string): number {
    return this.get(key) as number;
  }

  private optionalNum(key: string): number | undefined {
    return this.get(key) as number | undefined;
  }

  private bool(key: string): boolean {
    return this.get(key) as boolean;
  }

  private list(key: string): string[] {
    return (this.get(key) as string[] | undefined) ?? [];
  }

  // Layout
  /** `bucket`: buckets per partition (fixed, ≥ 1). */
  get bucket(): number { return this.num('bucket'); }
  /** `bucket-key`: the bucket key columns; empty when unset (then the primary key minus partition keys). */
  get bucketKey(): string[] { return this.list('bucket-key'); }
  /** `partition.default-name`: the path value of a NULL or empty partition column. */
  get partitionDefaultName(): string { return this.get('partition.default-name') as string; }
  /** `file.format`. */
  get fileFormat(): 'parquet' { return this.get('file.format') as 'parquet'; }
  /** `file.compression`. */
  get fileCompression(): FileCompression { return this.get('file.compression') as FileCompression; }
  /** `target-file-size` in bytes. */
  get targetFileSize(): number { return this.num('target-file-size'); }

  // Merging
  /** `merge-engine`. */
  get mergeEngine(): MergeEngine { return this.get('merge-engine') as MergeEngine; }
  /** `sequence.field`: user columns ordering the versions of a key; empty when unset. */
  get sequenceFields(): string[] { return this.list('sequence.field'); }
  /** `sequence.field.sort-order`. */
  get sequenceFieldSortOrder(): 'ascending' | 'descending' { return this.get('sequence.field.sort-order') as 'ascending' | 'descending'; }
  /** True when `sequence.field.sort-order = descending`. */
  get sequenceDescending(): boolean { return this.sequenceFieldSortOrder === 'descending'; }
  /** `ignore-delete`. */
  get ignoreDelete(): boolean { return this.bool('ignore-delete'); }
  /** `partial-update.remove-record-on-delete`. */
  get partialUpdateRemoveRecordOnDelete(): boolean { return this.bool('partial-update.remove-record-on-delete'); }
  /** `partial-update.remove-record-on-sequence-group`: sequence fields whose -D removes the row. */
  get partialUpdateRemoveRecordOnSequenceGroup(): string[] { return this.list('partial-update.remove-record-on-sequence-group'); }
  /** `aggregation.remove-record-on-delete`. */
  get aggregationRemoveRecordOnDelete(): boolean { return this.bool('aggregation.remove-record-on-delete'); }
  /** `fields.default-aggregate-function`; undefined when unset. */
  get defaultAggregateFunction(): AggregateFunction | undefined { return this.get('fields.default-aggregate-function') as AggregateFunction | undefined; }

  /** `fields.<col>.aggregate-function`; undefined when unset for that column. */
  aggregateFunction(col: string): AggregateFunction | undefined {
    return this.get(`fields.${col}.aggregate-function`) as AggregateFunction | undefined;
  }

  /** Every column with an explicit `fields.<col>.aggregate-function`. */
  aggregateFunctions(): Record<string, AggregateFunction> {
    return this.perColumn('aggregate-function') as Record<string, AggregateFunction>;
  }

  /** `fields.<col>.ignore-retract` (default false). */
  ignoreRetract(col: string): boolean {
    return this.get(`fields.${col}.ignore-retract`) as boolean;
  }

  /** Columns with `fields.<col>.ignore-retract = true`. */
  ignoreRetractColumns(): string[] {
    return Object.entries(this.perColumn('ignore-retract')).filter(([, v]) => v === true).map(([c]) => c);
  }

  /** `fields.<col>.list-agg-delimiter` (default ","). */
  listAggDelimiter(col: string): string {
    return this.get(`fields.${col}.list-agg-delimiter`) as string;
  }

  /** Every column with an explicit `fields.<col>.list-agg-delimiter`. */
  listAggDelimiters(): Record<string, string> {
    return this.perColumn('list-agg-delimiter') as Record<string, string>;
  }

  /** `fields.<s1>,<s2>.sequence-group = <c1>,<c2>` declarations, in option order. */
  sequenceGroups(): SequenceGroupDecl[] {
    const out: SequenceGroupDecl[] = [];
    for (const f of this.parsed.fields.values()) {
      if (f.decl.suffix === 'sequence-group') out.push({ sequenceFields: [...f.columns], columns: [...(f.value as string[])] });
    }
    return out;
  }

  private perColumn(suffix: string): Record<string, OptionValue> {
    const out: Record<string, OptionValue> = {};
    for (const f of this.parsed.fields.values()) if (f.decl.suffix === suffix) out[f.target] = f.value;
    return out;
  }

  // Changelog
  /** `changelog-producer`. */
  get changelogProducer(): ChangelogProducer { return this.get('changelog-producer') as ChangelogProducer; }
  /** `changelog-producer.row-deduplicate`. */
  get changelogProducerRowDeduplicate(): boolean { return this.bool('changelog-producer.row-deduplicate'); }

  // Writing
  /** `write-buffer-size` in bytes. */
  get writeBufferSize(): number { return this.num('write-buffer-size'); }
  /** `write-buffer-spillable`. */
  get writeBufferSpillable(): boolean { return this.bool('write-buffer-spillable'); }
  /** `write-buffer-spill.max-disk-size` in bytes; undefined = unlimited. */
  get writeBufferSpillMaxDiskSize(): number | undefined { return this.optionalNum('write-buffer-spill.max-disk-size'); }
  /** `write-only`. */
  get writeOnly(): boolean { return this.bool('write-only'); }

  // Compaction
  /** `num-sorted-run.compaction-trigger`. */
  get numSortedRunCompactionTrigger(): number { return this.num('num-sorted-run.compaction-trigger'); }
  /** `num-sorted-run.stop-trigger` (default trigger + 3). */
  get numSortedRunStopTrigger(): number { return this.num('num-sorted-run.stop-trigger'); }
  /** `num-levels` (default trigger + 1). */
  get numLevels(): number { return this.num('num-levels'); }
  /** `compaction.max-size-amplification-percent`. */
  get compactionMaxSizeAmplificationPercent(): number { return this.num('compaction.max-size-amplification-percent'); }
  /** `compaction.size-ratio`. */
  get compactionSizeRatio(): number { return this.num('compaction.size-ratio'); }
  /** `full-compaction.delta-commits`; undefined when unset. */
  get fullCompactionDeltaCommits(): number | undefined { return this.optionalNum('full-compaction.delta-commits'); }

  // Commit
  /** `commit.max-retries`. */
  get commitMaxRetries(): number { return this.num('commit.max-retries'); }
  /** `commit.min-retry-wait` in ms. */
  get commitMinRetryWaitMs(): number { return this.num('commit.min-retry-wait'); }
  /** `commit.max-retry-wait` in ms. */
  get commitMaxRetryWaitMs(): number { return this.num('commit.max-retry-wait'); }
  /** `commit.timeout` in ms; undefined when unset. */
  get commitTimeoutMs(): number | undefined { return this.optionalNum('commit.timeout'); }
  /** `manifest.target-file-size` in bytes. */
  get manifestTargetFileSize(): number { return this.num('manifest.target-file-size'); }
  /** `manifest.merge-min-count`. */
  get manifestMergeMinCount(): number { return this.num('manifest.merge-min-count'); }
  /** `manifest.full-compaction-threshold-size` in bytes. */
  get manifestFullCompactionThresholdSize(): number { return this.num('manifest.full-compaction-threshold-size'); }

  // Expiry
  /** `snapshot.num-retained.min`. */
  get snapshotNumRetainedMin(): number { return this.num('snapshot.num-retained.min'); }
  /** `snapshot.num-retained.max`. */
  get snapshotNumRetainedMax(): number { return this.num('snapshot.num-retained.max'); }
  /** `snapshot.time-retained` in ms. */
  get snapshotTimeRetainedMs(): number { return this.num('snapshot.time-retained'); }
  /** `snapshot.expire.limit`. */
  get snapshotExpireLimit(): number { return this.num('snapshot.expire.limit'); }
  /** `changelog.num-retained.min` (default: the snapshot value). */
  get changelogNumRetainedMin(): number { return this.num('changelog.num-retained.min'); }
  /** `changelog.num-retained.max` (default: the snapshot value). */
  get changelogNumRetainedMax(): number { return this.num('changelog.num-retained.max'); }
  /** `changelog.time-retained` in ms (default: the snapshot value). */
  get changelogTimeRetainedMs(): number { return this.num('changelog.time-retained'); }
  /** True when changelogs outlive their snapshots (a changelog retention exceeds the snapshot one), as in Paimon. */
  get changelogDecoupled(): boolean {
    return (
      this.changelogNumRetainedMin > this.snapshotNumRetainedMin ||
      this.changelogNumRetainedMax > this.snapshotNumRetainedMax ||
      this.changelogTimeRetainedMs > this.snapshotTimeRetainedMs
    );
  }
  /** `orphan-files.older-than` in ms. */
  get orphanFilesOlderThanMs(): number { return this.num('orphan-files.older-than'); }

  // Consumers and reads
  /** `consumer-id`; undefined when unset. */
  get consumerId(): string | undefined { return this.get('consumer-id') as string | undefined; }
  /** `consumer.expiration-time` in ms; undefined = consumers never expire. */
  get consumerExpirationTimeMs(): number | undefined { return this.optionalNum('consumer.expiration-time'); }
  /** `consumer.ignore-progress`. */
  get consumerIgnoreProgress(): boolean { return this.bool('consumer.ignore-progress'); }
  /** `scan.mode`, resolved as Paimon's `default` mode when unset (see the option's default). */
  get scanMode(): ScanMode { return this.get('scan.mode') as ScanMode; }
  /** `scan.snapshot-id`; undefined when unset. */
  get scanSnapshotId(): number | undefined { return this.optionalNum('scan.snapshot-id'); }
  /** `scan.timestamp-millis`; undefined when unset. */
  get scanTimestampMillis(): number | undefined { return this.optionalNum('scan.timestamp-millis'); }
  /** `scan.tag-name`; undefined when unset. */
  get scanTagName(): string | undefined { return this.get('scan.tag-name') as string | undefined; }
  /** `scan.on-expired`. */
  get scanOnExpired(): 'fail' | 'skip-to-earliest' { return this.get('scan.on-expired') as 'fail' | 'skip-to-earliest'; }
  /** `incremental-between` as [start, end] (snapshot ids or tag names); undefined when unset. */
  get incrementalBetween(): [string, string] | undefined { return this.get('incremental-between') as [string, string] | undefined; }
  /** `incremental-between-scan-mode`. */
  get incrementalBetweenScanMode(): 'auto' | 'delta' | 'changelog' { return this.get('incremental-between-scan-mode') as 'auto' | 'delta' | 'changelog'; }
  /** `continuous.discovery-interval` in ms. */
  get continuousDiscoveryIntervalMs(): number { return this.num('continuous.discovery-interval'); }
}
