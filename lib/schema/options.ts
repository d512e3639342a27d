/**
 * Table options: validation of a raw option map and typed access with defaults applied. The
 * declaration of every option is lib/schema/option-catalog.ts; docs/OPTIONS.md is generated from it.
 */
import {
  TABLE_OPTIONS,
  type AggregateFunction,
  type OptionKey,
  type OptionProperties,
  type OptionValueOf,
} from './option-catalog.js';
import { checkOptionCombinations, checkOptionsAgainstFields } from './option-checks.js';
import { parseOptionMap, resolveOption, type ParsedOptions } from './option-parse.js';
import type { OptionValue } from './option-values.js';
import type { DataField } from './types.js';

export * from './option-catalog.js';
export { parseDuration, parseMemory, type OptionValue } from './option-values.js';
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

/**
 * How a table's data files are written, from its `parquet.*` options: what `writeDataFile` and
 * the streaming writers build parquet-wasm's WriterProperties from (lib/format/data-file.ts).
 */
export interface ParquetWriterOptions {
  /** Dictionary encoding of every table column; undefined: STRING columns only. */
  dictionary?: boolean;
  /** Dictionary encoding per column, over `dictionary`. */
  columnDictionary: Record<string, boolean>;
  /** Bytes of a dictionary page, past which a chunk falls back to plain pages. */
  dictionaryPageSize: number;
  /** Target bytes of a data page. */
  dataPageSize: number;
  /** Data page format: 1 (DATA_PAGE) or 2 (DATA_PAGE_V2). */
  writerVersion: 1 | 2;
}

/** A sequence group of partial-update: `columns` change only with versions whose `sequenceFields` are not older. */
export interface SequenceGroupDecl {
  sequenceFields: string[];
  columns: string[];
}

/** The property name of an option key (the run-time twin of CamelCase). */
function optionPropertyName(key: string): string {
  return key.replace(/[-.]([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

const LIST_KEYS = new Set<string>(TABLE_OPTIONS.filter((d) => d.type === 'list').map((d) => d.key));

// Declaration merging: the class below gets one property per option (defined on its prototype after it).
export interface TableOptions extends OptionProperties {}

/**
 * A table's options, validated once, with defaults applied: `get(key)` typed by the option
 * catalog, and the same value as a property (`options.writeBufferSize`) for every option.
 */
// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: the interface types the per-option properties defined on the prototype below
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

  /** The typed value of an option with its default; undefined when unset without default (a list is then empty). */
  get<K extends OptionKey>(key: K): OptionValueOf<K>;
  /** The value of any option, per-column ones (`fields.<col>.…`) included. */
  get(key: string): OptionValue | undefined;
  get(key: string): OptionValue | undefined {
    let v = this.resolved.get(key);
    if (v === undefined && !this.resolved.has(key)) {
      v = resolveOption(this.parsed, key) ?? (LIST_KEYS.has(key) ? [] : undefined);
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

  /** True when `sequence.field.sort-order = descending`. */
  get sequenceDescending(): boolean {
    return this.sequenceFieldSortOrder === 'descending';
  }

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
    return Object.entries(this.perColumn('ignore-retract'))
      .filter(([, v]) => v === true)
      .map(([c]) => c);
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
      if (f.decl.suffix === 'sequence-group')
        out.push({ sequenceFields: [...f.columns], columns: [...(f.value as string[])] });
    }
    return out;
  }

  /** The Parquet writer settings of the `parquet.*` options, for every data and changelog file the table writes. */
  parquetWriter(): ParquetWriterOptions {
    const columnDictionary: Record<string, boolean> = {};
    for (const f of this.parsed.columnForms.values()) {
      if (f.decl.key === 'parquet.enable.dictionary') columnDictionary[f.column] = f.value as boolean;
    }
    const version = this.parquetWriterVersion;
    return {
      dictionary: this.parquetEnableDictionary,
      columnDictionary,
      dictionaryPageSize: this.parquetDictionaryPageSize,
      dataPageSize: this.parquetPageSize,
      writerVersion: version === 'v2' || version === 'PARQUET_2_0' ? 2 : 1,
    };
  }

  private perColumn(suffix: string): Record<string, OptionValue> {
    const out: Record<string, OptionValue> = {};
    for (const f of this.parsed.fields.values()) if (f.decl.suffix === suffix) out[f.target] = f.value;
    return out;
  }

  /** True when changelogs outlive their snapshots (a changelog retention exceeds the snapshot one), as in Paimon. */
  get changelogDecoupled(): boolean {
    return (
      this.changelogNumRetainedMin > this.snapshotNumRetainedMin ||
      this.changelogNumRetainedMax > this.snapshotNumRetainedMax ||
      this.changelogTimeRetained > this.snapshotTimeRetained
    );
  }
}

for (const d of TABLE_OPTIONS) {
  Object.defineProperty(TableOptions.prototype, optionPropertyName(d.key), {
    get(this: TableOptions) {
      return this.get(d.key);
    },
  });
}
