/**
 * Checks that span several options (triggers in order, engine-specific options with their engine,
 * scan start options with their mode) and, given the columns, that per-column options name real
 * columns and that aggregate functions fit the column types.
 */
import { OptionError } from '../errors.js';
import {
  AGGREGATE_FUNCTION_TYPES,
  type AggregateFunction,
  type OptionKey,
  type OptionValueOf,
} from './option-catalog.js';
import { resolveOption, type ParsedOptions } from './option-parse.js';
import type { DataField } from './types.js';

/** Throws OptionError when options contradict each other. */
export function checkOptionCombinations(p: ParsedOptions): void {
  // The one cast: resolveOption returns what the catalog declares for the key.
  const get = <K extends OptionKey>(k: K) => resolveOption(p, k) as OptionValueOf<K>;
  const isSet = (k: string) => p.table.has(k);

  const trigger = get('num-sorted-run.compaction-trigger');
  const stop = get('num-sorted-run.stop-trigger');
  if (stop < trigger) {
    throw new OptionError(
      `num-sorted-run.stop-trigger (${stop}) is below num-sorted-run.compaction-trigger (${trigger}): writers would stall before compaction starts; make it at least ${trigger}`,
      'num-sorted-run.stop-trigger',
    );
  }
  for (const prefix of ['snapshot', 'changelog']) {
    const min = get(`${prefix as 'snapshot' | 'changelog'}.num-retained.min`);
    const max = get(`${prefix as 'snapshot' | 'changelog'}.num-retained.max`);
    if (min > max) {
      throw new OptionError(
        `${prefix}.num-retained.min (${min}) is above ${prefix}.num-retained.max (${max}); make min ≤ max`,
        `${prefix}.num-retained.min`,
      );
    }
  }
  const minWait = get('commit.min-retry-wait');
  const maxWait = get('commit.max-retry-wait');
  if (minWait > maxWait) {
    throw new OptionError(
      `commit.min-retry-wait (${minWait} ms) is above commit.max-retry-wait (${maxWait} ms); make min ≤ max`,
      'commit.min-retry-wait',
    );
  }

  const engine = get('merge-engine');
  const producer = get('changelog-producer');
  if (engine === 'first-row' && producer !== 'none' && producer !== 'lookup') {
    throw new OptionError(
      `merge-engine=first-row works with changelog-producer none or lookup (it keeps the first version, so there is no input or full-compaction changelog to give); got ${producer}`,
      'changelog-producer',
    );
  }
  if (get('deletion-vectors.enabled') && engine !== 'deduplicate' && engine !== 'first-row') {
    throw new OptionError(
      `deletion-vectors.enabled works with merge-engine deduplicate or first-row only: with ${engine} the live row of a key combines several stored rows, so no stored row can stand for it and deleting the others would lose data; use merge-engine deduplicate or first-row, or remove the option`,
      'deletion-vectors.enabled',
    );
  }
  const needs: Array<[string, string[]]> = [];
  for (const k of p.table.keys()) {
    if (k.startsWith('partial-update.')) needs.push([k, ['partial-update']]);
    else if (k.startsWith('aggregation.')) needs.push([k, ['aggregation']]);
    else if (k === 'fields.default-aggregate-function') needs.push([k, ['aggregation', 'partial-update']]);
  }
  for (const [k, f] of p.fields) {
    needs.push([k, f.decl.suffix === 'sequence-group' ? ['partial-update'] : ['aggregation', 'partial-update']]);
  }
  for (const [key, engines] of needs) {
    if (!engines.includes(engine)) {
      throw new OptionError(
        `option ${key} only applies to merge-engine ${engines.join(' or ')}, but the table's merge-engine is ${engine}; set merge-engine=${engines[0]} or remove the option`,
        key,
      );
    }
  }

  checkScanStart(get('scan.mode'), isSet);
  checkSequenceGroups(p);
}

function checkScanStart(mode: string, isSet: (k: string) => boolean): void {
  if (isSet('scan.snapshot-id') && isSet('scan.tag-name')) {
    throw new OptionError('scan.snapshot-id and scan.tag-name both give a start snapshot; keep one', 'scan.tag-name');
  }
  const bySnapshot = mode === 'from-snapshot' || mode === 'from-snapshot-full';
  if (bySnapshot && !isSet('scan.snapshot-id') && !isSet('scan.tag-name')) {
    throw new OptionError(
      `scan.mode=${mode} needs scan.snapshot-id (or scan.tag-name) to say which snapshot`,
      'scan.mode',
    );
  }
  if (mode === 'from-timestamp' && !isSet('scan.timestamp-millis')) {
    throw new OptionError('scan.mode=from-timestamp needs scan.timestamp-millis to say from when', 'scan.mode');
  }
  for (const [key, ok] of [
    ['scan.snapshot-id', bySnapshot],
    ['scan.tag-name', bySnapshot],
    ['scan.timestamp-millis', mode === 'from-timestamp'],
  ] as const) {
    if (isSet(key) && !ok) {
      throw new OptionError(
        `option ${key} has no effect with scan.mode=${mode}; remove it or choose the matching scan.mode`,
        key,
      );
    }
  }
}

function checkSequenceGroups(p: ParsedOptions): void {
  const owner = new Map<string, string>();
  const sequenceFields = new Set<string>();
  for (const [key, f] of p.fields) {
    if (f.decl.suffix !== 'sequence-group') continue;
    f.columns.forEach((c) => sequenceFields.add(c));
    for (const col of f.value as string[]) {
      const other = owner.get(col);
      if (other !== undefined) {
        throw new OptionError(
          `column ${col} is in two sequence groups (${other} and ${key}); a column belongs to at most one group`,
          key,
        );
      }
      owner.set(col, key);
    }
  }
  const removeOn = p.table.get('partial-update.remove-record-on-sequence-group') as string[] | undefined;
  for (const s of removeOn ?? []) {
    if (!sequenceFields.has(s)) {
      throw new OptionError(
        `partial-update.remove-record-on-sequence-group names ${s}, which is not the sequence field of any fields.<seq>.sequence-group option`,
        'partial-update.remove-record-on-sequence-group',
      );
    }
  }
}

/** Throws OptionError when an option names a column `fields` lacks, or an aggregate function misfits its column. */
export function checkOptionsAgainstFields(p: ParsedOptions, fields: DataField[]): void {
  const byName = new Map(fields.map((f) => [f.name, f]));
  const columnList = fields.map((f) => f.name).join(', ');
  const need = (col: string, key: string) => {
    const f = byName.get(col);
    if (f) return f;
    const other = fields.find((x) => x.name.toLowerCase() === col.toLowerCase());
    const hint = other ? `did you mean ${other.name}? ` : '';
    throw new OptionError(
      `option ${key} names column ${col}, which the table does not have; ${hint}the columns are ${columnList}`,
      key,
    );
  };
  for (const key of ['sequence.field', 'bucket-key', 'partial-update.remove-record-on-sequence-group']) {
    for (const col of (p.table.get(key) as string[] | undefined) ?? []) need(col, key);
  }
  for (const [key, f] of p.columnForms) need(f.column, key);
  for (const [key, f] of p.fields) {
    const targets = f.columns.map((c) => need(c, key));
    if (f.decl.suffix === 'sequence-group') {
      for (const col of f.value as string[]) need(col, key);
    } else if (f.decl.suffix === 'aggregate-function') {
      checkAggregateFit(f.value as AggregateFunction, targets[0], key);
    } else if (f.decl.suffix === 'list-agg-delimiter' && targets[0].type.root !== 'STRING') {
      throw new OptionError(
        `option ${key}: listagg delimiters apply to STRING columns, and ${targets[0].name} is ${targets[0].type.root}`,
        key,
      );
    }
  }
}

/** Throws OptionError when aggregate function `fn` cannot aggregate `field`'s type. */
export function checkAggregateFit(fn: AggregateFunction, field: DataField, key: string): void {
  const accepts = AGGREGATE_FUNCTION_TYPES[fn];
  if (accepts && !accepts.includes(field.type.root)) {
    throw new OptionError(
      `option ${key} = ${fn} does not fit column ${field.name} of type ${field.type.root}; ${fn} takes ${accepts.join(', ')}`,
      key,
    );
  }
}
