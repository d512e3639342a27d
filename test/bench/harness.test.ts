import { describe, expect, it, vi } from 'vitest';
import { BenchCheckError } from '../../bench/lib/checksum.js';
import { compare, quantile, ratioOf, statsOf } from '../../bench/lib/harness.js';

describe('benchmark harness', () => {
  it('summarises samples with median, extremes and quartiles', () => {
    // Act
    const s = statsOf([5, 1, 4, 2, 3]);
    // Assess
    expect(s).toMatchObject({ n: 5, median: 3, min: 1, max: 5, q1: 2, q3: 4 });
    expect(quantile([10, 20], 0.5)).toBe(15);
  });

  it('runs every variant in every repetition, rotating the order, and records only measured ones', async () => {
    // Prepare
    const order: string[] = [];
    const variant = (id: string) => ({ id, run: () => order.push(id), check: () => undefined });
    // Act
    const t = await compare({ warmup: 1, reps: 2 }, [variant('a'), variant('b')]);
    // Assess
    expect(order).toEqual(['a', 'b', 'b', 'a', 'a', 'b']);
    expect(t.a.n).toBe(2);
    expect(t.b.n).toBe(2);
  });

  it('fails the comparison when a check fails, warm-up included', async () => {
    // Prepare
    const wrong = {
      id: 'wrong',
      run: () => 41,
      check: (r: number) => {
        if (r !== 42) throw new BenchCheckError('WRONG RESULT');
      },
    };
    // Act / Assess
    await expect(compare({ warmup: 1, reps: 0 }, [wrong])).rejects.toThrow(BenchCheckError);
  });

  it('leaves time spent in untimed checks out of the sample', async () => {
    // Prepare: a clock only the run moves (no wall-clock race on a busy machine): 5 ms of timed
    // work around a 60 ms check.
    let clock = 0;
    const now = vi.spyOn(performance, 'now').mockImplementation(() => clock);
    const v = {
      id: 'v',
      run: (_: unknown, untimed: { exclude: <T>(fn: () => T) => T }) => {
        clock += 5;
        untimed.exclude(() => (clock += 60));
      },
      check: () => undefined,
    };
    // Act
    const t = await compare({ warmup: 0, reps: 1 }, [v]).finally(() => now.mockRestore());
    // Assess
    expect(t.v.median).toBe(5);
  });

  it('gives the ratio of medians with the spread of per-repetition ratios', () => {
    // Act
    const r = ratioOf(statsOf([20, 40, 30]), statsOf([10, 10, 20]));
    // Assess
    expect(r.value).toBeCloseTo(30 / 10);
    expect(r.min).toBeCloseTo(1.5);
    expect(r.max).toBeCloseTo(4);
  });
});
