/** `first_value` (the oldest version's value, NULL included) and `first_non_null_value`. */
import { SelectingAggregator } from './aggregator.js';

/** `first_value`: retractions are not supported (the first value cannot be restored). */
export class FirstValueAggregator extends SelectingAggregator {
  private seen = false;

  override reset(): void {
    super.reset();
    this.seen = false;
  }
  override init(v: number): void {
    this.picked = v;
    this.seen = true;
  }
  agg(v: number): void {
    if (this.seen) return;
    this.picked = v;
    this.seen = true;
  }
  aggReversed(v: number): void {
    // An older version is the new first one.
    this.init(v);
  }
}

/** `first_non_null_value`: the oldest non-null value. */
export class FirstNonNullValueAggregator extends SelectingAggregator {
  agg(v: number): void {
    if (this.picked < 0 && !this.ctx.column.isNull(v)) this.picked = v;
  }
  aggReversed(v: number): void {
    if (!this.ctx.column.isNull(v)) this.picked = v;
  }
}
