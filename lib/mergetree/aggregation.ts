/**
 * `merge-engine = aggregation`: each column folds the versions of a key with its aggregate
 * function (`fields.<f>.aggregate-function`, else `fields.default-aggregate-function`, else
 * last_non_null_value); primary-key and sequence.field columns keep the newest value. -U/-D
 * records retract (functions that cannot undo fail unless `fields.<f>.ignore-retract`);
 * `aggregation.remove-record-on-delete` makes -D delete the row. A key's single record passes
 * through unchanged (kind included) so a lone retraction still applies when merged later.
 */
import { RowKind, isRetract, type TableSchema } from '../schema/types.js';
import type { FieldAggregator } from './aggregators/aggregator.js';
import { KEEP_LAST, checkAggregateFunction, createAggregator } from './aggregators/factory.js';
import type { MergeConfig } from './merge-config.js';
import { checkColumnOptions, columnPositions, notNullColumns } from './merge-fields.js';
import type { MergeFunction, MergeOptions } from './merge-function.js';
import { ColumnsResult } from './merge-result.js';
import type { VersionSet } from './version-set.js';

interface AggregationPlan {
  functions: string[];
  ignoreRetract: boolean[];
  notNull: boolean[];
}

/** The aggregation engine: folds every column of a key with its aggregate function. */
export class AggregationMergeFunction implements MergeFunction {
  readonly name = 'aggregation';
  private readonly plans = new WeakMap<TableSchema, AggregationPlan>();

  constructor(readonly config: MergeConfig) {}

  validate(schema: TableSchema): void {
    this.plan(schema);
  }

  private plan(schema: TableSchema): AggregationPlan {
    let plan = this.plans.get(schema);
    if (plan) return plan;
    const cfg = this.config;
    checkColumnOptions(schema, cfg.aggregateFunctions, (c) => `fields.${c}.aggregate-function`);
    checkColumnOptions(schema, cfg.ignoreRetract, (c) => `fields.${c}.ignore-retract`);
    const sequence = new Set(columnPositions(schema, cfg.sequenceFields, 'sequence.field'));
    const functions = schema.fields.map((f, c) => {
      if (schema.primaryKeys.includes(f.name) || sequence.has(c)) return KEEP_LAST;
      const fn = cfg.aggregateFunctions[f.name] ?? cfg.defaultAggregateFunction ?? 'last_non_null_value';
      checkAggregateFunction(fn, f);
      return fn;
    });
    plan = {
      functions,
      ignoreRetract: schema.fields.map((f) => cfg.ignoreRetract.includes(f.name)),
      notNull: notNullColumns(schema),
    };
    this.plans.set(schema, plan);
    return plan;
  }

  merge(versions: VersionSet, opts: MergeOptions): ColumnsResult {
    const plan = this.plan(versions.schema);
    const { kind, sequence, groupEnd, groupCount, schema } = versions;
    const aggs: FieldAggregator[] = schema.fields.map((field, c) =>
      createAggregator(
        {
          field,
          column: versions.column(c),
          fn: plan.functions[c],
          raw: opts.rawInput,
          delimiter: this.config.listaggDelimiters[field.name] ?? ',',
        },
        plan.ignoreRetract[c],
      ),
    );
    const n = aggs.length;
    const out = new ColumnsResult(
      groupCount,
      aggs.map((a) => a.computed),
      opts,
    );
    const { ignoreDelete, aggregationRemoveRecordOnDelete: removeOnDelete } = this.config;
    let s = 0;
    for (let g = 0; g < groupCount; g++) {
      const e = groupEnd[g];
      const first = s;
      s = e;
      if (e - first === 1) {
        if (ignoreDelete && isRetract(kind[first])) continue;
        // A single record passes through: selecting columns take it as is, computed ones (count
        // counts raw input) see it alone.
        for (let c = 0; c < n; c++) {
          const a = aggs[c];
          if (!a.computed) out.take(c, first);
          else {
            a.reset();
            a.init(first);
            out.set(c, a.value());
          }
        }
        out.commit(kind[first], sequence[first]);
        continue;
      }
      for (let c = 0; c < n; c++) aggs[c].reset();
      let deleted = false;
      let latest = -1;
      for (let v = first; v < e; v++) {
        const k = kind[v];
        if (ignoreDelete && isRetract(k)) continue;
        latest = v;
        deleted = removeOnDelete && k === RowKind.DELETE;
        if (deleted) {
          // The row starts over; only NOT NULL columns (the key) keep the delete record's values.
          for (let c = 0; c < n; c++) {
            aggs[c].reset();
            if (plan.notNull[c]) aggs[c].init(v);
          }
        } else if (isRetract(k)) {
          for (let c = 0; c < n; c++) aggs[c].retract(v);
        } else {
          for (let c = 0; c < n; c++) aggs[c].agg(v);
        }
      }
      if (latest < 0) continue;
      emitRow(out, aggs);
      out.commit(deleted ? RowKind.DELETE : RowKind.INSERT, sequence[latest]);
    }
    return out;
  }
}

function emitRow(out: ColumnsResult, aggs: FieldAggregator[]): void {
  for (let c = 0; c < aggs.length; c++) {
    const a = aggs[c];
    if (a.computed) out.set(c, a.value());
    else out.take(c, a.pick());
  }
}
