/**
 * `merge-engine = first-row`: the first version of a key (in merge order) wins, later ones are
 * dropped. A table of first rows has nothing to retract: -U/-D input is an error unless
 * `ignore-delete` is set, in which case it is skipped.
 */
import { InvalidArgumentError } from '../errors.js';
import { isRetract, type TableSchema } from '../schema/types.js';
import type { MergeConfig } from './merge-config.js';
import type { MergeFunction, MergeOptions } from './merge-function.js';
import { takeOnePerGroup, type TakeResult } from './merge-result.js';
import type { VersionSet } from './version-set.js';

/** The first-row engine: the oldest version of each key, whole. */
export class FirstRowMergeFunction implements MergeFunction {
  readonly name = 'first-row';

  constructor(readonly config: MergeConfig) {}

  validate(_schema: TableSchema): void {}

  merge(versions: VersionSet, opts: MergeOptions): TakeResult {
    const kind = versions.kind;
    const ignoreDelete = this.config.ignoreDelete;
    return takeOnePerGroup(versions, opts, (s, e) => {
      let first = -1;
      for (let v = s; v < e; v++) {
        if (isRetract(kind[v])) {
          if (ignoreDelete) continue;
          throw new InvalidArgumentError(
            'the first-row merge engine cannot accept -U/-D records; set ignore-delete = true to drop them, or use another merge-engine',
          );
        }
        if (first < 0) first = v;
      }
      return first;
    });
  }
}
