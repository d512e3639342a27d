/**
 * `count`: the number of non-null values. Counting is not associative over merged records, so the
 * raw records of a write are counted (each contributes 1 or 0, a retraction -1 or 0) and every
 * later merge — compaction, reads — sums the stored partial counts.
 */
import { ComputingAggregator, type AggregatorContext } from './aggregator';
import type { Arithmetic, Numeric } from './numeric';

/** `count` over raw records, a sum over stored partial counts. */
export class CountAggregator extends ComputingAggregator {
  constructor(
    ctx: AggregatorContext,
    private readonly math: Arithmetic,
  ) {
    super(ctx);
  }

  /** What version `v` contributes: its own count (raw input) or its stored partial count. */
  private contribution(v: number): Numeric | null {
    const col = this.ctx.column;
    if (this.ctx.raw) return this.math.of(col.isNull(v) ? 0 : 1);
    return col.isNull(v) ? null : this.math.read(col, v);
  }

  init(v: number): void {
    this.acc = this.contribution(v);
  }

  agg(v: number): void {
    const x = this.contribution(v);
    if (x === null) return;
    this.acc = this.acc === null ? x : this.math.add(this.acc as Numeric, x);
  }

  aggReversed(v: number): void {
    this.agg(v);
  }

  override retract(v: number): void {
    const x = this.contribution(v);
    if (x === null) return;
    this.acc = this.acc === null ? this.math.neg(x) : this.math.sub(this.acc as Numeric, x);
  }
}
