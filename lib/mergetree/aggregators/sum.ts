/** `sum`: exact, in the column's type; retractions subtract. */
import { ArithmeticAggregator } from './aggregator.js';
import type { Numeric } from './numeric.js';

/** `sum`: the sum of the non-null values. */
export class SumAggregator extends ArithmeticAggregator {
  protected combine(acc: Numeric, x: Numeric): Numeric {
    return this.math.add(acc, x);
  }

  override retract(v: number): void {
    const x = this.read(v);
    if (x === null) return;
    this.acc = this.acc === null ? this.math.neg(x) : this.math.sub(this.acc as Numeric, x);
  }
}
