/** `product`: exact, in the column's type; retractions divide (integer types truncate, like Paimon). */
import { ArithmeticAggregator } from './aggregator.js';
import type { Numeric } from './numeric.js';

/** `product`: the product of the non-null values. */
export class ProductAggregator extends ArithmeticAggregator {
  protected combine(acc: Numeric, x: Numeric): Numeric {
    return this.math.mul(acc, x);
  }

  override retract(v: number): void {
    // Nothing accumulated, or nothing to divide by: the value stays (Paimon's FieldProductAgg).
    if (this.acc === null) return;
    const x = this.read(v);
    if (x === null) return;
    this.acc = this.math.div(this.acc as Numeric, x);
  }
}
