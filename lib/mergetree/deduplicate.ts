/**
 * `merge-engine = deduplicate` (the default): the newest version of a key wins, whole. A newest
 * version that is -U or -D means the key is absent (readers drop it; level-0 files keep it, since
 * older versions may live in higher levels). With `ignore-delete`, retractions are skipped.
 */
import { isRetract, type TableSchema } from '../schema/types.js';
import type { MergeConfig } from './merge-config.js';
import type { MergeFunction, MergeOptions } from './merge-function.js';
import { takeOnePerGroup, type TakeResult } from './merge-result.js';
import type { VersionSet } from './version-set.js';

/** The deduplicate engine: the newest version of each key, whole. */
export class DeduplicateMergeFunction implements MergeFunction {
  readonly name = 'deduplicate';

  constructor(readonly config: MergeConfig) {}

  validate(_schema: TableSchema): void {}

  merge(versions: VersionSet, opts: MergeOptions): TakeResult {
    const kind = versions.kind;
    const ignoreDelete = this.config.ignoreDelete;
    return takeOnePerGroup(versions, opts, (s, e) => {
      let v = e - 1;
      // Defensive: files written before ignore-delete was set may still hold retractions.
      if (ignoreDelete) while (v >= s && isRetract(kind[v])) v--;
      return v >= s ? v : -1;
    });
  }
}
