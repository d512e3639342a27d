/**
 * `last_value` (the newest version's value, NULL included), `last_non_null_value` (the newest
 * non-null value; the default function) and the implicit keep-last of primary-key and
 * sequence.field columns.
 */
import { SelectingAggregator } from './aggregator.js';

/** `last_value`: a retraction makes the value NULL. */
export class LastValueAggregator extends SelectingAggregator {
  override init(v: number): void {
    this.picked = v;
  }
  agg(v: number): void {
    this.picked = v;
  }
  aggReversed(_v: number): void {}
  override retract(_v: number): void {
    this.picked = -1;
  }
}

/** `last_non_null_value`: NULL input keeps the value; retracting a non-null value makes it NULL. */
export class LastNonNullValueAggregator extends SelectingAggregator {
  agg(v: number): void {
    if (!this.ctx.column.isNull(v)) this.picked = v;
  }
  aggReversed(v: number): void {
    if (this.picked < 0 && !this.ctx.column.isNull(v)) this.picked = v;
  }
  override retract(v: number): void {
    if (!this.ctx.column.isNull(v)) this.picked = -1;
  }
}

/** Primary-key and sequence.field columns: always the newest version's value, retractions too. */
export class KeepLastAggregator extends SelectingAggregator {
  override init(v: number): void {
    this.picked = v;
  }
  agg(v: number): void {
    this.picked = v;
  }
  aggReversed(_v: number): void {}
  override retract(v: number): void {
    this.picked = v;
  }
}
