/**
 * Per-column aggregators of the aggregation engine (and of partial-update sequence groups).
 * An aggregator folds the versions of one key, oldest first, into one value. Selecting
 * aggregators (last/first value, min/max, bool_and/or) only remember which version holds the
 * result, so the column is later gathered without decoding; arithmetic ones (sum, product, count,
 * listagg) compute a value.
 */
import { InvalidArgumentError } from '../../errors.js';
import type { DataField, Value } from '../../schema/types.js';
import type { VersionColumn } from '../version-set.js';
import type { Arithmetic, Numeric } from './numeric.js';

/** What an aggregator is built from. */
export interface AggregatorContext {
  field: DataField;
  column: VersionColumn;
  /** `fields.<f>.aggregate-function` (or the default) that selected this aggregator. */
  fn: string;
  /** True when the versions are raw input (the write buffer), false when they are merged records. */
  raw: boolean;
  /** `fields.<f>.list-agg-delimiter`. */
  delimiter: string;
}

/** One column's fold over the versions of a key. */
export interface FieldAggregator {
  /** True for aggregators that produce values (read `value()`), false for those that pick a version (`pick()`). */
  readonly computed: boolean;
  /** Forgets the previous key. */
  reset(): void;
  /** The state becomes version `v`'s value alone (a record passed through or re-initialised). */
  init(v: number): void;
  /** Folds in version `v`, newer than everything folded so far. */
  agg(v: number): void;
  /** Folds in version `v`, older than the accumulated value (partial-update sequence groups). */
  aggReversed(v: number): void;
  /** Retracts version `v` (a -U/-D record). */
  retract(v: number): void;
  /** Selecting aggregators: the version holding the result, or -1 for NULL. */
  pick(): number;
  /** Computing aggregators: the result (DECIMAL as unscaled bigint). */
  value(): Value;
}

/** Base of aggregators whose result is one of the versions' values. */
export abstract class SelectingAggregator implements FieldAggregator {
  readonly computed = false;
  protected picked = -1;

  constructor(protected readonly ctx: AggregatorContext) {}

  reset(): void {
    this.picked = -1;
  }

  init(v: number): void {
    this.picked = this.ctx.column.isNull(v) ? -1 : v;
  }

  abstract agg(v: number): void;
  abstract aggReversed(v: number): void;

  retract(_v: number): void {
    throw retractUnsupported(this.ctx);
  }

  pick(): number {
    return this.picked;
  }

  value(): Value {
    throw new Error(`aggregator ${this.ctx.fn} selects a version; read pick()`);
  }
}

/** Base of aggregators that compute their result. */
export abstract class ComputingAggregator implements FieldAggregator {
  readonly computed = true;
  protected acc: Value = null;

  constructor(protected readonly ctx: AggregatorContext) {}

  reset(): void {
    this.acc = null;
  }

  abstract init(v: number): void;
  abstract agg(v: number): void;
  abstract aggReversed(v: number): void;

  retract(_v: number): void {
    throw retractUnsupported(this.ctx);
  }

  pick(): number {
    throw new Error(`aggregator ${this.ctx.fn} computes a value; read value()`);
  }

  value(): Value {
    return this.acc;
  }
}

/**
 * Base of sum, product and count: folds what each version contributes (`read`) with one operation
 * (`combine`) of the column's exact arithmetic; a version contributing nothing (null) is skipped.
 */
export abstract class ArithmeticAggregator extends ComputingAggregator {
  constructor(
    ctx: AggregatorContext,
    protected readonly math: Arithmetic,
  ) {
    super(ctx);
  }

  /** What version `v` contributes: its value, or null for NULL. */
  protected read(v: number): Numeric | null {
    return this.ctx.column.isNull(v) ? null : this.math.read(this.ctx.column, v);
  }

  protected abstract combine(acc: Numeric, x: Numeric): Numeric;

  init(v: number): void {
    this.acc = this.read(v);
  }

  agg(v: number): void {
    const x = this.read(v);
    if (x === null) return;
    this.acc = this.acc === null ? x : this.combine(this.acc as Numeric, x);
  }

  aggReversed(v: number): void {
    this.agg(v);
  }
}

/** The error for a -U/-D record reaching a function that cannot undo a value. */
function retractUnsupported(ctx: AggregatorContext): InvalidArgumentError {
  return new InvalidArgumentError(
    `aggregate function '${ctx.fn}' of column ${ctx.field.name} cannot retract a value (-U/-D record); set 'fields.${ctx.field.name}.ignore-retract' = 'true' to ignore retractions for it`,
  );
}

/** `fields.<f>.ignore-retract`: retractions leave the accumulated value unchanged. */
export class IgnoreRetract implements FieldAggregator {
  constructor(private readonly inner: FieldAggregator) {}
  get computed(): boolean {
    return this.inner.computed;
  }
  reset(): void {
    this.inner.reset();
  }
  init(v: number): void {
    this.inner.init(v);
  }
  agg(v: number): void {
    this.inner.agg(v);
  }
  aggReversed(v: number): void {
    this.inner.aggReversed(v);
  }
  retract(_v: number): void {}
  pick(): number {
    return this.inner.pick();
  }
  value(): Value {
    return this.inner.value();
  }
}
