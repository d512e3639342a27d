/**
 * The measuring core: warm-up and measured repetitions, variants of one benchmark interleaved in
 * every repetition (so that a load spike on a shared machine hits both sides of a ratio), the
 * median with min/max and IQR, and per-repetition ratios. Correctness checks run on every
 * repetition, warm-up included, outside the timed region; a failed check aborts the whole run.
 */
import v8 from 'node:v8';
import vm from 'node:vm';

/** Summary of a list of samples (same unit as the samples). */
export interface Stats {
  n: number;
  median: number;
  min: number;
  max: number;
  /** First and third quartile (linear interpolation). */
  q1: number;
  q3: number;
  samples: number[];
}

/** Quantile q ∈ [0, 1] of sorted values (linear interpolation). */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

/** Median, min/max and quartiles of the samples. */
export function statsOf(samples: readonly number[]): Stats {
  const s = [...samples].sort((a, b) => a - b);
  return {
    n: s.length,
    median: quantile(s, 0.5),
    min: s[0],
    max: s[s.length - 1],
    q1: quantile(s, 0.25),
    q3: quantile(s, 0.75),
    samples: [...samples],
  };
}

let gcFn: (() => void) | undefined;

/** Runs a full garbage collection (exposed at run time, so `tsx bench/run.ts` needs no node flag). */
export function collectGarbage(): void {
  if (!gcFn) {
    v8.setFlagsFromString('--expose-gc');
    gcFn = vm.runInNewContext('gc') as () => void;
  }
  gcFn();
}

/** One side of a comparison: what is timed and how its result is checked. */
export interface Variant<C, R> {
  id: string;
  /** Untimed preparation for one repetition (fresh table copy, input, …). */
  setup?: () => Promise<C> | C;
  /** The timed work; `untimed.exclude(fn)` runs a check inside it without counting its time. */
  run: (ctx: C, untimed: Untimed) => Promise<R> | R;
  /** Untimed check of the result; throws BenchCheckError on a wrong answer. */
  check: (result: R, ctx: C) => Promise<void> | void;
  /** Runs of `run` per sample, for sub-millisecond work; the sample is the mean of one run. */
  inner?: number;
  /** Untimed cleanup after the check. */
  teardown?: (ctx: C, result: R) => Promise<void> | void;
}

/** Lets a timed run verify intermediate results it cannot keep until the end, off the clock. */
export interface Untimed {
  exclude<T>(fn: () => T): T;
}

/** Per-variant timings (ms) of a comparison, in repetition order. */
export type Timings = Record<string, Stats>;

/** How many repetitions: `warmup` unrecorded ones, then `reps` recorded ones. */
export interface RepPlan {
  warmup: number;
  reps: number;
  /**
   * What a sample measures: wall time (default), or the CPU time of the whole process (every
   * thread, user + system, `process.cpuUsage`): the work done, which a busy machine's waits
   * and a second core's help do not change.
   */
  clock?: 'wall' | 'cpu';
}

/** CPU time of the whole process so far (user + system, every thread), in ms. */
function processCpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

/**
 * Runs every variant once per repetition, rotating their order from one repetition to the next,
 * and returns each variant's timing stats. Checks every result, warm-up included.
 */
export async function compare(
  plan: RepPlan,
  variants: Variant<any, any>[],
  onRep?: (line: string) => void,
): Promise<Timings> {
  const samples: Record<string, number[]> = Object.fromEntries(variants.map((v) => [v.id, []]));
  const total = plan.warmup + plan.reps;
  for (let rep = 0; rep < total; rep++) {
    const warm = rep < plan.warmup;
    const order = variants.map((_, i) => variants[(i + rep) % variants.length]);
    const parts: string[] = [];
    for (const v of order) {
      const ctx = v.setup ? await v.setup() : undefined;
      collectGarbage();
      const inner = v.inner ?? 1;
      let excluded = 0;
      const now = plan.clock === 'cpu' ? processCpuMs : () => performance.now();
      const untimed: Untimed = {
        exclude: (fn) => {
          const s = now();
          try {
            return fn();
          } finally {
            excluded += now() - s;
          }
        },
      };
      const t0 = now();
      let result = await v.run(ctx, untimed);
      for (let k = 1; k < inner; k++) result = await v.run(ctx, untimed);
      const ms = (now() - t0 - excluded) / inner;
      await v.check(result, ctx);
      if (v.teardown) await v.teardown(ctx, result);
      if (!warm) samples[v.id].push(ms);
      parts.push(`${v.id} ${ms < 10 ? ms.toFixed(2) : ms.toFixed(0)} ms`);
    }
    onRep?.(`${warm ? 'warm-up' : `rep ${rep - plan.warmup + 1}/${plan.reps}`}: ${parts.join(', ')}`);
  }
  return Object.fromEntries(Object.entries(samples).map(([id, s]) => [id, statsOf(s)]));
}

/**
 * Ratio of two interleaved variants: the ratio of medians, with the spread of the per-repetition
 * ratios (repetition i of both sides ran back to back).
 */
export function ratioOf(num: Stats, den: Stats): { value: number; min: number; max: number } {
  const per = num.samples.map((x, i) => x / den.samples[i]).filter((x) => Number.isFinite(x));
  return { value: num.median / den.median, min: Math.min(...per), max: Math.max(...per) };
}

/** Ratio of medians of two sides measured in separate loops: the spread is the extremes' ratios. */
export function ratioUnpaired(num: Stats, den: Stats): { value: number; min: number; max: number } {
  return { value: num.median / den.median, min: num.min / den.max, max: num.max / den.min };
}
