/** `sum`: exact, in the column's type; retractions subtract. */
import { ComputingAggregator, type AggregatorContext } from './aggregator';
import type { Arithmetic, Numeric } from './numeric';

/** `sum`: the sum of the non-null values. */
export class SumAggregator extends ComputingAggregator {
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
    this.acc = this.acc === null ? x : this.math.add(this.acc as Numeric, x);
  }

  aggReversed(v: number): void {
    this.agg(v);
  }

  override retract(v: number): void {
    if (this.ctx.column.isNull(v)) return;
    const x = this.math.read(this.ctx.column, v);
    this.acc = this.acc === null ? this.math.neg(x) : this.math.sub(this.acc as Numeric, x);
  }
}
