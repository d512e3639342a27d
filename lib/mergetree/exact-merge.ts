/**
 * The k-way merge of sorted runs whose keys fit their 8-byte prefix (no `sequence.field`): merge
 * order is (key words hi, lo, sequence number, run), every term a plain number. The runs' words
 * are laid end to end in working arrays kept from one merge to the next, and a tournament (loser)
 * tree picks the next version: a fixed ⌈log2 k⌉ comparisons per version, each against the current
 * words of a run kept beside the tree, where a binary heap's sift compares two children per level
 * (10 interleaved runs: about 4 comparisons per version against 7).
 */
import { CorruptMetadataError } from '../errors.js';
import type { KeyIndex } from './key-order.js';
import { radixSortWords } from './radix-sort.js';

/**
 * From this many versions on, the last version of each key is found by a radix sort of the key
 * words instead of the tournament: a handful of sequential passes, where the tournament takes a
 * mispredicted branch per comparison on interleaved runs (10 runs of random keys, process CPU per
 * 2M versions: heap 158 ms, tournament 122 ms, sort 83 ms in steps of 65,536; 104 against 124 ms
 * in steps of 16,384; even at 4,096, where the sort's 64K-entry digit histograms start to tell).
 */
const SORT_MIN_VERSIONS = 8192;

/** Per version: its run, its row in the run, its kind and sequence number. */
export interface VersionArrays {
  source: Uint16Array;
  row: Uint32Array;
  kind: Uint8Array;
  seq: Float64Array;
}

/** What exactMerge returns: versions in merge order and, for every version kept, where each key group ends. */
export interface ExactMerged extends VersionArrays {
  /** Ends of the key groups (every version kept); empty when only the last of each key is. */
  groupEnd: Uint32Array;
  /** Key groups: entries of the version arrays when only the last of each key is kept. */
  groups: number;
}

/** One run of an exact merge: its key index (exact), sequence numbers and `_VALUE_KIND` bytes. */
export interface ExactRun {
  keys: KeyIndex;
  sequence: Float64Array;
  kinds: Int8Array;
}

/**
 * Merges the runs. `lastOnly`: the version arrays hold the last version of each key group in
 * merge order (`groups` entries; what deduplicate keeps) and groupEnd is empty; else every
 * version, and groupEnd the groups' ends. A run out of merge order fails the merge.
 */
export function exactMerge(runs: ExactRun[], lastOnly: boolean): ExactMerged {
  const { starts, total, work } = concatRuns(runs, lastOnly);
  // Every version is the caller's (a VersionSet); the last of each key is copied out at the end.
  const out = lastOnly ? work : versionArrays(total);
  const groupEnd = new Uint32Array(lastOnly ? 0 : total);
  let groups: number;
  if (total === 0) groups = 0;
  else if (lastOnly && total >= SORT_MIN_VERSIONS) groups = newestBySort(work, starts, total);
  else groups = mergeLoop(work, tournament(work, starts), out, groupEnd, total, lastOnly);
  const kept = lastOnly ? copiedVersions(out, groups) : out;
  return { ...kept, groupEnd, groups };
}

/**
 * The tournament over the non-empty runs (slots, in run order): per slot its cursor (a global
 * row), end, run, and current words (an exhausted slot holds words above every row); `tree[p]`
 * the loser at internal node p (leaves are nodes m..2m−1), `winner` the slot in front.
 */
interface Tournament {
  m: number;
  /** Run r holds global rows starts[r] to starts[r + 1]. */
  starts: Uint32Array;
  cur: Uint32Array;
  lim: Uint32Array;
  run: Uint16Array;
  kh: Uint32Array;
  kl: Uint32Array;
  ks: Float64Array;
  tree: Uint32Array;
  winner: number;
}

function tournament(work: MergeWork, starts: Uint32Array): Tournament {
  let m = 0;
  for (let r = 0; r + 1 < starts.length; r++) if (starts[r + 1] !== starts[r]) m++;
  const t: Tournament = {
    m,
    starts,
    cur: new Uint32Array(m),
    lim: new Uint32Array(m),
    run: new Uint16Array(m),
    kh: new Uint32Array(m),
    kl: new Uint32Array(m),
    ks: new Float64Array(m),
    tree: new Uint32Array(Math.max(1, m)),
    winner: 0,
  };
  let s = 0;
  for (let r = 0; r + 1 < starts.length; r++) {
    if (starts[r + 1] === starts[r]) continue;
    const g = starts[r];
    t.cur[s] = g;
    t.lim[s] = starts[r + 1];
    t.run[s] = r;
    t.kh[s] = work.H[g];
    t.kl[s] = work.L[g];
    t.ks[s++] = work.S[g];
  }
  // Bottom-up: each internal node keeps the loser of its subtree's final and passes the winner up.
  const wins = new Uint32Array(2 * m);
  for (let i = 0; i < m; i++) wins[m + i] = i;
  for (let p = m - 1; p >= 1; p--) {
    const a = wins[2 * p],
      b = wins[2 * p + 1];
    const aFirst = slotBefore(t, a, b);
    wins[p] = aFirst ? a : b;
    t.tree[p] = aFirst ? b : a;
  }
  t.winner = m > 1 ? wins[1] : 0;
  return t;
}

/** Slot a's current version comes before slot b's: words, sequence, then the earlier run. */
function slotBefore(t: Tournament, a: number, b: number): boolean {
  if (t.kh[a] !== t.kh[b]) return t.kh[a] < t.kh[b];
  if (t.kl[a] !== t.kl[b]) return t.kl[a] < t.kl[b];
  if (t.ks[a] !== t.ks[b]) return t.ks[a] < t.ks[b];
  return a < b;
}

/**
 * Emits the `total` versions in merge order into `out` (all, with groupEnd; or the last of each
 * key); returns the number of key groups. The loop keeps its state in locals and calls nothing
 * in the common case.
 */
function mergeLoop(
  work: MergeWork,
  t: Tournament,
  out: VersionArrays,
  groupEnd: Uint32Array,
  total: number,
  lastOnly: boolean,
): number {
  const { H, L, S, K } = work;
  const { cur, lim, run, kh, kl, ks, starts } = t;
  const { source, row, kind, seq } = out;
  let w = t.winner;
  let groups = 0;
  let prev = cur[w],
    prevRun = run[w];
  for (let o = 0; o < total; o++) {
    const g = cur[w],
      r = run[w];
    const h = kh[w],
      l = kl[w],
      sq = ks[w];
    if (o > 0 && (h !== H[prev] || l !== L[prev])) {
      // A new key: the previous version was the last of its key.
      if (lastOnly) {
        source[groups] = prevRun;
        row[groups] = prev - starts[prevRun];
        kind[groups] = K[prev];
        seq[groups++] = S[prev];
      } else groupEnd[groups++] = o;
    }
    if (!lastOnly) {
      source[o] = r;
      row[o] = g - starts[r];
      kind[o] = K[g];
      seq[o] = sq;
    }
    prev = g;
    prevRun = r;
    const next = g + 1;
    if (next === lim[w]) {
      // Exhausted: words above every row, so it never wins again before the end.
      kh[w] = 0xffffffff;
      kl[w] = 0xffffffff;
      ks[w] = Infinity;
    } else {
      const nh = H[next],
        nl = L[next],
        ns = S[next];
      if (nh < h || (nh === h && (nl < l || (nl === l && ns < sq)))) {
        // Every invariant of the merge rests on each run being sorted: fail rather than mis-merge.
        throw new CorruptMetadataError(
          `sorted run ${r} is out of order at row ${next - starts[r]}: rows must be sorted by key and sequence`,
        );
      }
      kh[w] = nh;
      kl[w] = nl;
      ks[w] = ns;
    }
    cur[w] = next;
    w = replay(t, w);
  }
  if (lastOnly) {
    source[groups] = prevRun;
    row[groups] = prev - starts[prevRun];
    kind[groups] = K[prev];
    seq[groups++] = S[prev];
  } else groupEnd[groups++] = total;
  return groups;
}

/**
 * Slot w's words changed (its next version, or exhausted): it replays its path to the root, at
 * each node playing the loser kept there; returns the new winner.
 */
function replay(t: Tournament, w: number): number {
  const { kh, kl, ks, tree } = t;
  let wh = kh[w],
    wl = kl[w],
    ws = ks[w];
  for (let p = (w + t.m) >> 1; p > 0; p >>= 1) {
    const x = tree[p];
    const xh = kh[x];
    if (xh > wh) continue;
    if (xh === wh) {
      const xl = kl[x];
      if (xl > wl) continue;
      if (xl === wl) {
        const xs = ks[x];
        if (xs > ws || (xs === ws && x > w)) continue;
      }
    }
    tree[p] = w;
    w = x;
    wh = xh;
    wl = kl[x];
    ws = ks[x];
  }
  return w;
}

/** The first `n` versions, copied out of the reused working arrays. */
function copiedVersions(v: VersionArrays, n: number): VersionArrays {
  return { source: v.source.slice(0, n), row: v.row.slice(0, n), kind: v.kind.slice(0, n), seq: v.seq.slice(0, n) };
}

/**
 * exactMerge's working arrays: the runs' words, sequence numbers and kinds end to end, the
 * versions kept, and newestBySort's sort arrays (each version's run, its words and index).
 */
interface MergeWork extends VersionArrays {
  H: Uint32Array;
  L: Uint32Array;
  S: Float64Array;
  K: Uint8Array;
  runOf: Uint16Array;
  sortH: Uint32Array;
  sortL: Uint32Array;
  index: Uint32Array;
}

/**
 * Merges of at most this many versions (a compaction's merge step is at most 65,536) work in
 * arrays kept for the next merge (46 bytes a version: at most 12 MB), not fresh ones per step:
 * fresh ones were a sixth of a full compaction's allocations, and each ~30 MB of them costs a
 * full garbage collection. A merge never awaits, so no two merges of a thread share them at once.
 */
const REUSED_MERGE_VERSIONS = 1 << 18;
let reusedWork: MergeWork | undefined;

/**
 * Working arrays for `total` versions (`kept`: with the version arrays too): the reused ones when
 * they are large enough (grown up to the cap), else fresh.
 */
function mergeWork(total: number, kept: boolean): MergeWork {
  if (reusedWork !== undefined && reusedWork.H.length >= total) return reusedWork;
  if (total > REUSED_MERGE_VERSIONS) return { ...versionArrays(kept ? total : 0), ...wordArrays(total) };
  const size = Math.min(REUSED_MERGE_VERSIONS, Math.max(total, 2 * (reusedWork?.H.length ?? 0), 1024));
  reusedWork = { ...versionArrays(size), ...wordArrays(size) };
  return reusedWork;
}

function versionArrays(n: number): VersionArrays {
  return { source: new Uint16Array(n), row: new Uint32Array(n), kind: new Uint8Array(n), seq: new Float64Array(n) };
}

function wordArrays(n: number): Omit<MergeWork, keyof VersionArrays> {
  return {
    H: new Uint32Array(n),
    L: new Uint32Array(n),
    S: new Float64Array(n),
    K: new Uint8Array(n),
    runOf: new Uint16Array(n),
    sortH: new Uint32Array(n),
    sortL: new Uint32Array(n),
    index: new Uint32Array(n),
  };
}

/**
 * The runs' key words, sequence numbers and kinds laid end to end in working arrays (mergeWork;
 * `kept`: with version arrays) that may be longer than the `total` global rows used; run r holds
 * global rows starts[r] to starts[r + 1].
 */
function concatRuns(runs: ExactRun[], kept: boolean) {
  const k = runs.length;
  const starts = new Uint32Array(k + 1);
  for (let r = 0; r < k; r++) starts[r + 1] = starts[r] + runs[r].keys.count;
  const total = starts[k];
  const work = mergeWork(total, kept);
  const { H, L, S, K } = work;
  for (let r = 0; r < k; r++) {
    H.set(runs[r].keys.hi, starts[r]);
    L.set(runs[r].keys.lo, starts[r]);
    S.set(runs[r].sequence, starts[r]);
    K.set(runs[r].kinds, starts[r]);
  }
  return { starts, total, work };
}

/**
 * The last version of each key in merge order, by a stable radix sort of the versions' key words
 * (equal keys stay in run order) and a pass that keeps each key's highest (sequence, run).
 * Each run is first checked to be in merge order.
 */
function newestBySort(work: MergeWork, starts: Uint32Array, total: number): number {
  const { H, L, S, K, source, row, kind, seq } = work;
  const k = starts.length - 1;
  const runOf = work.runOf;
  for (let r = 0; r < k; r++) {
    const e = starts[r + 1];
    runOf.fill(r, starts[r], e);
    for (let g = starts[r] + 1; g < e; g++) {
      const h = H[g],
        ph = H[g - 1];
      if (h > ph) continue;
      if (h === ph) {
        const l = L[g],
          pl = L[g - 1];
        if (l > pl || (l === pl && S[g] >= S[g - 1])) continue;
      }
      throw new CorruptMetadataError(
        `sorted run ${r} is out of order at row ${g - starts[r]}: rows must be sorted by key and sequence`,
      );
    }
  }
  const { sortH, sortL, index } = work;
  sortH.set(H.subarray(0, total));
  sortL.set(L.subarray(0, total));
  for (let g = 0; g < total; g++) index[g] = g;
  const order = radixSortWords(sortH.subarray(0, total), sortL.subarray(0, total), index.subarray(0, total));
  let groups = 0;
  let best = order[0];
  for (let q = 1; q <= total; q++) {
    const g = q < total ? order[q] : 0;
    if (q < total && H[g] === H[best] && L[g] === L[best]) {
      if (S[g] >= S[best]) best = g;
      continue;
    }
    const r = runOf[best];
    source[groups] = r;
    row[groups] = best - starts[r];
    kind[groups] = K[best];
    seq[groups++] = S[best];
    best = g;
  }
  return groups;
}
