/** `min` and `max`: the smallest / largest non-null value (strings in code-point order). */
import { SelectingAggregator, type AggregatorContext } from './aggregator.js';

/** Keeps the version with the smallest (`sign` = 1) or largest (`sign` = -1) value. */
export class ExtremumAggregator extends SelectingAggregator {
  constructor(
    ctx: AggregatorContext,
    private readonly sign: 1 | -1,
  ) {
    super(ctx);
  }

  agg(v: number): void {
    const col = this.ctx.column;
    if (col.isNull(v)) return;
    if (this.picked < 0 || this.sign * col.compare(v, this.picked) < 0) this.picked = v;
  }

  aggReversed(v: number): void {
    this.agg(v);
  }
}
