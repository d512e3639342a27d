/**
 * The "merge" of an append table (no primary key, Paimon's append-only table): nothing is merged.
 * Every stored row is its own record; with no key columns a merge driver orders the versions by
 * sequence number alone, so the output is the rows in the order they were written.
 */
import type { TableSchema } from '../schema/types.js';
import type { MergeConfig } from './merge-config.js';
import type { MergeFunction, MergeOptions } from './merge-function.js';
import { TakeResult } from './merge-result.js';
import type { VersionSet } from './version-set.js';

/** Emits every version, in merge (= sequence) order. */
export class AppendOnlyMergeFunction implements MergeFunction {
  readonly name = 'append-only';

  constructor(readonly config: MergeConfig) {}

  validate(schema: TableSchema): void {
    // A keyed table merged this way would keep every version of every key: never silently.
    if (schema.primaryKeys.length > 0)
      throw new Error(`internal: append-only merge on a table with primary key ${schema.primaryKeys.join(', ')}`);
  }

  merge(versions: VersionSet, opts: MergeOptions): TakeResult {
    const { kind, sequence } = versions;
    const out = new TakeResult(versions.size, opts);
    for (let v = 0; v < versions.size; v++) out.emit(v, kind[v], sequence[v]);
    return out;
  }
}
