/** `bool_and` and `bool_or` over non-null BOOLEAN values. */
import { SelectingAggregator, type AggregatorContext } from './aggregator.js';

/** `bool_and` (`absorbing` = false) or `bool_or` (`absorbing` = true): the first absorbing value decides. */
export class BoolAggregator extends SelectingAggregator {
  constructor(
    ctx: AggregatorContext,
    private readonly absorbing: boolean,
  ) {
    super(ctx);
  }

  agg(v: number): void {
    const col = this.ctx.column;
    if (col.isNull(v)) return;
    if (this.picked < 0) this.picked = v;
    else if (col.bool(this.picked) !== this.absorbing && col.bool(v) === this.absorbing) this.picked = v;
  }

  aggReversed(v: number): void {
    this.agg(v);
  }
}
