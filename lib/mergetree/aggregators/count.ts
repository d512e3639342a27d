/**
 * `count`: the number of non-null values. Counting is not associative over merged records, so the
 * raw records of a write are counted (each contributes 1 or 0, a retraction -1 or 0) and every
 * later merge — compaction, reads — sums the stored partial counts.
 */
import type { Numeric } from './numeric.js';
import { SumAggregator } from './sum.js';

/** `count` over raw records, a sum over stored partial counts. */
export class CountAggregator extends SumAggregator {
  /** What version `v` contributes: its own count (raw input) or its stored partial count. */
  protected override read(v: number): Numeric | null {
    if (this.ctx.raw) return this.math.of(this.ctx.column.isNull(v) ? 0 : 1);
    return super.read(v);
  }
}
