/**
 * The merge-relevant part of a table's options, as a plain object: which engine merges the
 * versions of a key and how (sequence fields, aggregate functions, sequence groups, delete
 * handling). Option names follow Paimon; `mergeConfigFromOptions` reads them from TableOptions.
 */
import type { AggregateFunction, MergeEngine, TableOptions } from '../schema/options.js';

/** `merge-engine`: how the versions of one primary key become one record. */
export type MergeEngineName = MergeEngine;

/** `fields.<f>.aggregate-function` values (declared once, in lib/schema's option catalog). */
export type AggregateFunctionName = AggregateFunction;

/** `fields.<s1>,<s2>.sequence-group = <c1>,<c2>`: columns updated only by versions whose s1,s2 are not older. */
export interface SequenceGroup {
  sequenceFields: string[];
  fields: string[];
}

/** Everything a merge engine needs from the table options. */
export interface MergeConfig {
  /** `merge-engine` (default deduplicate). */
  engine: MergeEngineName;
  /** `sequence.field`: user columns that order the versions of a key before the sequence number. */
  sequenceFields: string[];
  /** `sequence.field.sort-order = descending`. */
  sequenceDescending: boolean;
  /** `ignore-delete`: -D and -U records are dropped. */
  ignoreDelete: boolean;
  /** `fields.<f>.aggregate-function`, per column. */
  aggregateFunctions: Record<string, AggregateFunctionName>;
  /** `fields.default-aggregate-function` (aggregation: otherwise last_non_null_value). */
  defaultAggregateFunction?: AggregateFunctionName;
  /** Columns with `fields.<f>.ignore-retract = true`. */
  ignoreRetract: string[];
  /** `fields.<f>.list-agg-delimiter` (default ","). */
  listaggDelimiters: Record<string, string>;
  /** `fields.<s>.sequence-group` declarations (partial-update). */
  sequenceGroups: SequenceGroup[];
  /** `partial-update.remove-record-on-delete`. */
  partialUpdateRemoveRecordOnDelete: boolean;
  /** `partial-update.remove-record-on-sequence-group`: sequence fields whose -D removes the row. */
  partialUpdateRemoveRecordOnSequenceGroup: string[];
  /** `aggregation.remove-record-on-delete`. */
  aggregationRemoveRecordOnDelete: boolean;
  /** The table has no primary key (an append table): nothing is merged, every row is kept. */
  appendOnly: boolean;
}

/** A complete MergeConfig from the given fields, Paimon's defaults for the rest. */
export function mergeConfig(partial: Partial<MergeConfig> = {}): MergeConfig {
  return {
    engine: 'deduplicate',
    sequenceFields: [],
    sequenceDescending: false,
    ignoreDelete: false,
    aggregateFunctions: {},
    ignoreRetract: [],
    listaggDelimiters: {},
    sequenceGroups: [],
    partialUpdateRemoveRecordOnDelete: false,
    partialUpdateRemoveRecordOnSequenceGroup: [],
    aggregationRemoveRecordOnDelete: false,
    appendOnly: false,
    ...partial,
  };
}

/**
 * The merge configuration of a table's (validated) options. The primary key is required: with
 * none, the table is an append table and nothing may be merged.
 */
export function mergeConfigFromOptions(options: TableOptions, primaryKeys: readonly string[]): MergeConfig {
  return mergeConfig({
    appendOnly: primaryKeys.length === 0,
    engine: options.mergeEngine,
    sequenceFields: options.sequenceField,
    sequenceDescending: options.sequenceDescending,
    ignoreDelete: options.ignoreDelete,
    aggregateFunctions: options.aggregateFunctions(),
    defaultAggregateFunction: options.fieldsDefaultAggregateFunction,
    ignoreRetract: options.ignoreRetractColumns(),
    listaggDelimiters: options.listAggDelimiters(),
    sequenceGroups: options.sequenceGroups().map((g) => ({ sequenceFields: g.sequenceFields, fields: g.columns })),
    partialUpdateRemoveRecordOnDelete: options.partialUpdateRemoveRecordOnDelete,
    partialUpdateRemoveRecordOnSequenceGroup: options.partialUpdateRemoveRecordOnSequenceGroup,
    aggregationRemoveRecordOnDelete: options.aggregationRemoveRecordOnDelete,
  });
}
