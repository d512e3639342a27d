/** In-memory models of merge engines, for the randomized model tests of tables and compaction. */
import { RowKind } from '../../lib/schema/types.js';

/** The model's state: key → latest merged value of columns `v` (BIGINT) and `s` (STRING). */
export type ModelState = Map<string, { v: bigint | null; s: string | null }>;

/** A merge engine's table options and how it applies one version to the model, in commit order. */
export interface ModelEngine {
  name: string;
  options: Record<string, string>;
  apply(state: ModelState, key: string, kind: number, v: bigint | null, s: string | null): void;
}

/** deduplicate: the last version wins; a delete removes the key. */
export const DEDUPLICATE_MODEL: ModelEngine = {
  name: 'deduplicate',
  options: {},
  apply(state, key, kind, v, s) {
    if (kind === RowKind.DELETE) state.delete(key);
    else state.set(key, { v, s });
  },
};

/** aggregation: `v` summed, `s` the last non-null value; a delete removes the key. */
export const SUM_AGGREGATION_MODEL: ModelEngine = {
  name: 'aggregation',
  options: {
    'merge-engine': 'aggregation',
    'fields.v.aggregate-function': 'sum',
    'fields.s.aggregate-function': 'last_non_null_value',
    'aggregation.remove-record-on-delete': 'true',
  },
  apply(state, key, kind, v, s) {
    if (kind === RowKind.DELETE) return void state.delete(key);
    const old = state.get(key);
    state.set(key, { v: (old?.v ?? 0n) + (v ?? 0n), s: s ?? old?.s ?? null });
  },
};
