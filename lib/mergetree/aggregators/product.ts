/** `product`: exact, in the column's type; retractions divide (integer types truncate, like Paimon). */
import { ComputingAggregator, type AggregatorContext } from './aggregator';
import type { Arithmetic, Numeric } from './numeric';

/** `product`: the product of the non-null values. */
export class ProductAggregator extends ComputingAggregator {
  constructor(
    ctx: AggregatorContext,
    private readonly math: Arithmetic,
  ) {
    super(ctx);
  }

  init(v: number): void {
    this.acc = this.ctx.column.isNull(v) ? null : this.math.read(this.ctx.column, v);
  }

  agg(v: number): void {
    if (this.ctx.column.isNull(v)) return;
    const x = this.math.read(this.ctx.column, v);
    this.acc = this.acc === null ? x : this.math.mul(this.acc as Numeric, x);
  }

  aggReversed(v: number): void {
    this.agg(v);
  }

  override retract(v: number): void {
    // Nothing accumulated, or nothing to divide by: the value stays (Paimon's FieldProductAgg).
    if (this.acc === null || this.ctx.column.isNull(v)) return;
    this.acc = this.math.div(this.acc as Numeric, this.math.read(this.ctx.column, v));
  }
}
