/**
 * Stable LSD radix sort of 64-bit unsigned keys held as two 32-bit words, carrying an index
 * array along. Four 16-bit digit passes; a pass whose digit is the same for every element is
 * skipped (32-bit keys cost two passes). The words travel with the index so that every pass reads
 * sequentially (index-indirect reads were measured 8x slower, typescript-stack.md §6).
 */

const SMALL = 64;
const DIGITS = 1 << 16;

/**
 * Sorts `index` by (`hi`, `lo`) ascending, stably; `hi[k]`, `lo[k]` are the words of `index[k]`.
 * The three arrays are consumed (used as scratch); the returned array (`index` itself) holds the
 * sorted indices.
 */
export function radixSortWords(hi: Uint32Array, lo: Uint32Array, index: Uint32Array): Uint32Array {
  const n = index.length;
  if (n < 2) return index;
  if (n <= SMALL) return insertionSort(hi, lo, index);
  const count = countScratch;
  count.fill(0);
  for (let k = 0; k < n; k++) {
    const l = lo[k],
      h = hi[k];
    count[l & 0xffff]++;
    count[DIGITS + (l >>> 16)]++;
    count[2 * DIGITS + (h & 0xffff)]++;
    count[3 * DIGITS + (h >>> 16)]++;
  }
  let h0: Uint32Array = hi,
    l0: Uint32Array = lo,
    i0: Uint32Array = index;
  const [h1s, l1s, i1s] = scratchFor(n);
  let h1: Uint32Array = h1s,
    l1: Uint32Array = l1s,
    i1: Uint32Array = i1s;
  for (let pass = 0; pass < 4; pass++) {
    const base = pass * DIGITS;
    const shift = pass & 1 ? 16 : 0;
    const src = pass < 2 ? l0 : h0;
    if (count[base + ((src[0] >>> shift) & 0xffff)] === n) continue;
    let sum = 0;
    for (let d = 0; d < DIGITS; d++) {
      const c = count[base + d];
      count[base + d] = sum;
      sum += c;
    }
    if (pass < 2) {
      for (let k = 0; k < n; k++) {
        const p = count[base + ((l0[k] >>> shift) & 0xffff)]++;
        h1[p] = h0[k];
        l1[p] = l0[k];
        i1[p] = i0[k];
      }
      [l0, l1] = [l1, l0];
    } else {
      // The low word is no longer needed once its two digits are done.
      for (let k = 0; k < n; k++) {
        const p = count[base + ((h0[k] >>> shift) & 0xffff)]++;
        h1[p] = h0[k];
        i1[p] = i0[k];
      }
    }
    [h0, h1] = [h1, h0];
    [i0, i1] = [i1, i0];
  }
  // After an odd number of passes the order is in the scratch array: back into the caller's.
  if (i0 !== index) index.set(i0);
  return index;
}

/** The digit histogram, reused by every sort of the thread (zeroed at each). */
const countScratch = new Uint32Array(4 * DIGITS);

/**
 * Sorts of up to this many elements reuse the thread's scratch arrays (12 bytes per element: at
 * most 3 MB kept once grown); larger ones take fresh memory. Touching fresh pages is most of a
 * sort's cost where a first-touch page fault is dear (the 2-core bench VM: 12-80 us each): sorting
 * a 250k-row bucket's keys took 7-19 ms with fresh scratch, 6 ms with this one.
 */
const SCRATCH_MAX = 1 << 18;
let scratch: Uint32Array[] = [];

function scratchFor(n: number): Uint32Array[] {
  if (n > SCRATCH_MAX) return [new Uint32Array(n), new Uint32Array(n), new Uint32Array(n)];
  if (scratch.length === 0 || scratch[0].length < n)
    scratch = [0, 1, 2].map(() => new Uint32Array(Math.min(SCRATCH_MAX, Math.max(n, 65_536))));
  return scratch.map((a) => a.subarray(0, n));
}

/** Stable insertion sort for small inputs, where the histogram would cost more than the sort. */
function insertionSort(hi: Uint32Array, lo: Uint32Array, index: Uint32Array): Uint32Array {
  const n = index.length;
  for (let k = 1; k < n; k++) {
    const h = hi[k],
      l = lo[k],
      x = index[k];
    let q = k - 1;
    while (q >= 0 && (hi[q] > h || (hi[q] === h && lo[q] > l))) {
      hi[q + 1] = hi[q];
      lo[q + 1] = lo[q];
      index[q + 1] = index[q];
      q--;
    }
    hi[q + 1] = h;
    lo[q + 1] = l;
    index[q + 1] = x;
  }
  return index;
}
