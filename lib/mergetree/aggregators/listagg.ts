/** `listagg`: non-blank strings joined with `fields.<f>.list-agg-delimiter` (default ","), oldest first. */
import { ComputingAggregator } from './aggregator.js';

const BLANK = /^\s*$/;

/** `listagg`: the joined string of the non-blank values. */
export class ListaggAggregator extends ComputingAggregator {
  init(v: number): void {
    this.acc = this.ctx.column.isNull(v) ? null : this.ctx.column.string(v);
  }

  agg(v: number): void {
    this.acc = this.join(this.acc as string | null, this.read(v));
  }

  aggReversed(v: number): void {
    this.acc = this.join(this.read(v), this.acc as string | null);
  }

  private read(v: number): string | null {
    return this.ctx.column.isNull(v) ? null : this.ctx.column.string(v);
  }

  private join(older: string | null, newer: string | null): string | null {
    if (newer === null || BLANK.test(newer)) return older;
    if (older === null || BLANK.test(older)) return newer;
    return older + this.ctx.delimiter + newer;
  }
}
