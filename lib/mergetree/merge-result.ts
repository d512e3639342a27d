/**
 * What a merge engine emits per key group, columnar: either "take version v" for the whole row
 * (deduplicate, first-row: a zero-copy gather plan) or, per column, a version to take or a
 * computed value (partial-update, aggregation). A group that merges to nothing emits nothing.
 */
import { isRetract, type Value } from '../schema/types.js';
import type { VersionSet } from './version-set.js';

/** How a collector treats retract results: keep them (level-0 files, compaction) or drop them (reads). */
export interface EmitPolicy {
  dropRetracts: boolean;
}

/** Whole-row results: output row k is version `version[k]` with kind `kind[k]`. */
export class TakeResult {
  readonly mode = 'take';
  count = 0;
  readonly version: Uint32Array;
  readonly kind: Uint8Array;
  readonly sequence: Float64Array;

  constructor(
    capacity: number,
    private readonly policy: EmitPolicy,
  ) {
    this.version = new Uint32Array(capacity);
    this.kind = new Uint8Array(capacity);
    this.sequence = new Float64Array(capacity);
  }

  /** Emits version `v` as the group's record. */
  emit(v: number, kind: number, sequence: number): void {
    if (this.policy.dropRetracts && isRetract(kind)) return;
    const k = this.count++;
    this.version[k] = v;
    this.kind[k] = kind;
    this.sequence[k] = sequence;
  }
}

/**
 * Whole-row results of the engines that keep one version per key: `pick(start, end)` names the
 * version of group [start, end) to emit, or -1 when the group emits nothing.
 */
export function takeOnePerGroup(
  versions: VersionSet,
  policy: EmitPolicy,
  pick: (start: number, end: number) => number,
): TakeResult {
  const { kind, sequence, groupEnd, groupCount } = versions;
  const out = new TakeResult(groupCount, policy);
  let s = 0;
  for (let g = 0; g < groupCount; g++) {
    const e = groupEnd[g];
    const v = pick(s, e);
    if (v >= 0) out.emit(v, kind[v], sequence[v]);
    s = e;
  }
  return out;
}

/** Per column: take a version's value (-1 = NULL), or a computed value. */
export type ColumnOutput = { take: Int32Array } | { values: Value[] };

/**
 * Column-wise results. An engine fills slot `count` of each column with `take`/`set`, then calls
 * `commit`; a dropped result leaves the slot to be overwritten by the next group.
 */
export class ColumnsResult {
  readonly mode = 'columns';
  count = 0;
  readonly kind: Uint8Array;
  readonly sequence: Float64Array;
  readonly columns: ColumnOutput[];

  constructor(
    capacity: number,
    computed: boolean[],
    private readonly policy: EmitPolicy,
  ) {
    this.kind = new Uint8Array(capacity);
    this.sequence = new Float64Array(capacity);
    this.columns = computed.map((c) =>
      c ? { values: new Array<Value>(capacity) } : { take: new Int32Array(capacity) },
    );
  }

  /** Column `c` of the current row takes version `v`'s value (-1 for NULL). */
  take(c: number, v: number): void {
    (this.columns[c] as { take: Int32Array }).take[this.count] = v;
  }

  /** Column `c` of the current row is the computed `value`. */
  set(c: number, value: Value): void {
    (this.columns[c] as { values: Value[] }).values[this.count] = value;
  }

  /** Ends the current row with its kind and sequence number. */
  commit(kind: number, sequence: number): void {
    if (this.policy.dropRetracts && isRetract(kind)) return;
    this.kind[this.count] = kind;
    this.sequence[this.count] = sequence;
    this.count++;
  }
}

/** The result of merging a VersionSet. */
export type MergeResult = TakeResult | ColumnsResult;
