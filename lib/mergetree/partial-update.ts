/**
 * `merge-engine = partial-update`: a key's record is built up from its versions, oldest first;
 * each non-null field overwrites, NULL keeps the previous value. With sequence groups
 * (`fields.<s1>,<s2>.sequence-group = <cols>`) a group's columns (and its sequence fields) move
 * together, and only when the version's group sequence is ≥ the accumulated one; a version whose
 * group sequence is all NULL leaves the group alone. Group columns may carry an aggregate function.
 * -U/-D fail by default; `ignore-delete` skips them, `partial-update.remove-record-on-delete`
 * makes -D delete the row, and with sequence groups they retract the group's columns.
 */
import { InvalidArgumentError, OptionError } from '../errors.js';
import { RowKind, isRetract, type TableSchema } from '../schema/types.js';
import type { FieldAggregator } from './aggregators/aggregator.js';
import { checkAggregateFunction, createAggregator } from './aggregators/factory.js';
import type { MergeConfig } from './merge-config.js';
import { checkColumnOptions, columnPositions, notNullColumns } from './merge-fields.js';
import type { MergeFunction, MergeOptions } from './merge-function.js';
import { ColumnsResult } from './merge-result.js';
import type { VersionColumn, VersionSet } from './version-set.js';

interface Group {
  sequence: number[];
  columns: number[];
  /** `partial-update.remove-record-on-sequence-group` names one of this group's sequence fields. */
  removesRow: boolean;
}

interface PartialUpdatePlan {
  groups: Group[];
  /** Columns outside every group and not a sequence field: plain non-null overwrite. */
  free: number[];
  /** Aggregate function per column (group columns only), or null. */
  functions: (string | null)[];
  ignoreRetract: boolean[];
  notNull: boolean[];
}

const DELETE_HELP =
  "partial-update cannot accept -U/-D records by default: set 'ignore-delete' = 'true' to drop them, " +
  "'partial-update.remove-record-on-delete' = 'true' to delete the whole row, or declare sequence groups to retract their columns";

/** The partial-update engine: a key's record built from the non-null fields of its versions. */
export class PartialUpdateMergeFunction implements MergeFunction {
  readonly name = 'partial-update';
  private readonly plans = new WeakMap<TableSchema, PartialUpdatePlan>();

  constructor(readonly config: MergeConfig) {}

  validate(schema: TableSchema): void {
    this.plan(schema);
  }

  private plan(schema: TableSchema): PartialUpdatePlan {
    let plan = this.plans.get(schema);
    if (plan) return plan;
    const cfg = this.config;
    if (cfg.partialUpdateRemoveRecordOnDelete && cfg.ignoreDelete) {
      throw new OptionError(
        'ignore-delete and partial-update.remove-record-on-delete contradict each other; set only one',
        'partial-update.remove-record-on-delete',
      );
    }
    if (cfg.partialUpdateRemoveRecordOnDelete && cfg.sequenceGroups.length) {
      throw new OptionError(
        'partial-update.remove-record-on-delete cannot be combined with sequence groups; use partial-update.remove-record-on-sequence-group',
        'partial-update.remove-record-on-delete',
      );
    }
    if (cfg.partialUpdateRemoveRecordOnSequenceGroup.length && cfg.ignoreDelete) {
      throw new OptionError(
        'ignore-delete and partial-update.remove-record-on-sequence-group contradict each other; set only one',
        'partial-update.remove-record-on-sequence-group',
      );
    }
    checkColumnOptions(schema, cfg.aggregateFunctions, (c) => `fields.${c}.aggregate-function`);
    checkColumnOptions(schema, cfg.ignoreRetract, (c) => `fields.${c}.ignore-retract`);
    const owner = new Map<number, string>();
    const claim = (c: number, option: string) => {
      if (owner.has(c) && owner.get(c) !== option) {
        throw new OptionError(
          `column ${schema.fields[c].name} belongs to two sequence groups (${owner.get(c)} and ${option})`,
          option,
        );
      }
      if (schema.primaryKeys.includes(schema.fields[c].name)) {
        throw new OptionError(`primary key column ${schema.fields[c].name} cannot be part of a sequence group`, option);
      }
      owner.set(c, option);
    };
    const removing = cfg.partialUpdateRemoveRecordOnSequenceGroup;
    const groups = cfg.sequenceGroups.map((g) => {
      const option = `fields.${g.sequenceFields.join(',')}.sequence-group`;
      const sequence = columnPositions(schema, g.sequenceFields, option);
      const columns = columnPositions(schema, g.fields, option).filter((c) => !sequence.includes(c));
      for (const c of [...sequence, ...columns]) claim(c, option);
      return { sequence, columns, removesRow: g.sequenceFields.some((f) => removing.includes(f)) };
    });
    for (const f of removing) {
      if (!cfg.sequenceGroups.some((g) => g.sequenceFields.includes(f))) {
        throw new OptionError(
          `partial-update.remove-record-on-sequence-group names ${f}, which is not a sequence-group field`,
          'partial-update.remove-record-on-sequence-group',
        );
      }
    }
    const functions = schema.fields.map((f, c) => {
      if (schema.primaryKeys.includes(f.name)) return null;
      const fn = cfg.aggregateFunctions[f.name] ?? cfg.defaultAggregateFunction ?? null;
      if (fn === null || (fn === 'last_non_null_value' && !owner.has(c))) return null;
      const inGroup = groups.some((g) => g.columns.includes(c));
      if (!inGroup) {
        throw new OptionError(
          `partial-update applies aggregate function '${fn}' to column ${f.name} only inside a sequence group; declare fields.<seq>.sequence-group including ${f.name}`,
          `fields.${f.name}.aggregate-function`,
        );
      }
      checkAggregateFunction(fn, f);
      return fn;
    });
    plan = {
      groups,
      free: schema.fields.map((_, c) => c).filter((c) => !owner.has(c)),
      functions,
      ignoreRetract: schema.fields.map((f) => cfg.ignoreRetract.includes(f.name)),
      notNull: notNullColumns(schema),
    };
    this.plans.set(schema, plan);
    return plan;
  }

  merge(versions: VersionSet, opts: MergeOptions): ColumnsResult {
    return new PartialUpdateRun(this.config, this.plan(versions.schema), versions, opts).run();
  }
}

/** The state of one merge call: per-column picks and aggregators, reused across key groups. */
class PartialUpdateRun {
  private readonly cols: VersionColumn[];
  private readonly aggs: (FieldAggregator | null)[];
  private readonly pick: Int32Array;
  private readonly out: ColumnsResult;

  constructor(
    private readonly cfg: MergeConfig,
    private readonly plan: PartialUpdatePlan,
    private readonly versions: VersionSet,
    opts: MergeOptions,
  ) {
    const fields = versions.schema.fields;
    this.cols = fields.map((_, c) => versions.column(c));
    this.aggs = fields.map((field, c) => {
      const fn = plan.functions[c];
      if (fn === null) return null;
      const delimiter = cfg.listaggDelimiters[field.name] ?? ',';
      return createAggregator(
        { field, column: this.cols[c], fn, raw: opts.rawInput, delimiter },
        plan.ignoreRetract[c],
      );
    });
    this.pick = new Int32Array(fields.length);
    this.out = new ColumnsResult(
      versions.groupCount,
      this.aggs.map((a) => a?.computed === true),
      opts,
    );
  }

  run(): ColumnsResult {
    const { kind, sequence, groupEnd, groupCount } = this.versions;
    const { ignoreDelete, partialUpdateRemoveRecordOnDelete: removeOnDelete } = this.cfg;
    const hasGroups = this.plan.groups.length > 0;
    let s = 0;
    for (let g = 0; g < groupCount; g++) {
      const e = groupEnd[g];
      this.reset();
      let latest = -1;
      let meetInsert = false;
      let notNullFilled = false;
      let deleted = false;
      for (let v = s; v < e; v++) {
        const k = kind[v];
        deleted = false;
        if (isRetract(k)) {
          if (!notNullFilled) {
            this.initRow(v);
            notNullFilled = true;
          }
          if (ignoreDelete) continue;
          latest = v;
          if (hasGroups) {
            deleted = this.retractGroups(v, k);
          } else if (removeOnDelete) {
            if (k === RowKind.DELETE) {
              deleted = true;
              this.reset();
              this.initRow(v);
            }
          } else {
            throw new InvalidArgumentError(DELETE_HELP);
          }
          continue;
        }
        latest = v;
        if (hasGroups) this.updateGroups(v);
        else this.updateNonNull(v);
        meetInsert = true;
        notNullFilled = true;
      }
      s = e;
      if (latest < 0) continue;
      this.emit();
      this.out.commit(deleted || !meetInsert ? RowKind.DELETE : RowKind.INSERT, sequence[latest]);
    }
    return this.out;
  }

  private reset(): void {
    this.pick.fill(-1);
    for (const a of this.aggs) a?.reset();
  }

  /** NOT NULL columns (the key at least) take the values of version `v`. */
  private initRow(v: number): void {
    const { notNull } = this.plan;
    for (let c = 0; c < notNull.length; c++) {
      if (!notNull[c]) continue;
      if (this.cols[c].isNull(v)) throw notNullError(this.cols[c]);
      this.pick[c] = v;
      this.aggs[c]?.init(v);
    }
  }

  private updateNonNull(v: number): void {
    const { notNull } = this.plan;
    for (let c = 0; c < this.cols.length; c++) {
      if (!this.cols[c].isNull(v)) this.pick[c] = v;
      else if (notNull[c]) throw notNullError(this.cols[c]);
    }
  }

  private updateGroups(v: number): void {
    for (const c of this.plan.free) if (!this.cols[c].isNull(v)) this.pick[c] = v;
    for (const group of this.plan.groups) {
      if (this.groupSequenceIsNull(group, v)) continue;
      if (this.compareGroupSequence(group, v) >= 0) {
        for (const c of group.sequence) this.pick[c] = v;
        for (const c of group.columns) {
          const agg = this.aggs[c];
          if (agg) agg.agg(v);
          else this.pick[c] = v;
        }
      } else {
        for (const c of group.columns) this.aggs[c]?.aggReversed(v);
      }
    }
  }

  /** Applies a -U/-D to the sequence groups; true when it removed the whole row. */
  private retractGroups(v: number, k: number): boolean {
    for (const group of this.plan.groups) {
      if (this.groupSequenceIsNull(group, v)) continue;
      if (this.compareGroupSequence(group, v) >= 0) {
        if (k === RowKind.DELETE && group.removesRow) {
          this.reset();
          this.initRow(v);
          return true;
        }
        for (const c of group.sequence) this.pick[c] = v;
        for (const c of group.columns) {
          const agg = this.aggs[c];
          if (agg) agg.retract(v);
          else this.pick[c] = -1;
        }
      } else {
        for (const c of group.columns) this.aggs[c]?.retract(v);
      }
    }
    return false;
  }

  private groupSequenceIsNull(group: Group, v: number): boolean {
    for (const c of group.sequence) if (!this.cols[c].isNull(v)) return false;
    return true;
  }

  /** Version `v`'s group sequence against the accumulated one (NULL, or never set, is smallest). */
  private compareGroupSequence(group: Group, v: number): number {
    for (const c of group.sequence) {
      const acc = this.pick[c];
      const col = this.cols[c];
      const cmp = acc < 0 ? (col.isNull(v) ? 0 : 1) : col.compare(v, acc);
      if (cmp !== 0) return cmp;
    }
    return 0;
  }

  private emit(): void {
    for (let c = 0; c < this.cols.length; c++) {
      const agg = this.aggs[c];
      if (agg === null) this.out.take(c, this.pick[c]);
      else if (agg.computed) this.out.set(c, agg.value());
      else this.out.take(c, agg.pick());
    }
  }
}

function notNullError(col: VersionColumn): InvalidArgumentError {
  return new InvalidArgumentError(
    `column ${col.field.name} is NOT NULL but a partial-update record leaves it NULL; give it a value in every record or declare it nullable`,
  );
}
