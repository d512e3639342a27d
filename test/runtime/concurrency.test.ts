/** runLimitedSettled and settleAll: a failure is thrown only after the tasks in flight have ended. */
import { describe, expect, it } from 'vitest';
import { runLimitedSettled, settleAll } from '../../lib/concurrency.js';

/** A promise and the functions that settle it. */
function deferred<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

describe('runLimitedSettled', () => {
  it('keeps the order of the results, with at most `limit` tasks in flight', async () => {
    let inFlight = 0;
    let most = 0;
    const tasks = Array.from({ length: 9 }, (_, i) => async () => {
      most = Math.max(most, ++inFlight);
      await Promise.resolve();
      inFlight--;
      return i * 2;
    });
    expect(await runLimitedSettled(tasks, 3)).toEqual([0, 2, 4, 6, 8, 10, 12, 14, 16]);
    expect(most).toBe(3);
  });

  it('throws the first failure once the task in flight has ended, and starts no other', async () => {
    const slow = deferred<number>();
    const started: number[] = [];
    let slowEnded = false;
    const tasks = [
      async () => {
        started.push(0);
        const v = await slow.promise;
        slowEnded = true;
        return v;
      },
      async () => {
        started.push(1);
        throw new Error('first failure');
      },
      async () => {
        started.push(2);
        throw new Error('never started');
      },
    ];
    let settled = false;
    const run = runLimitedSettled(tasks, 2).finally(() => (settled = true));
    for (let i = 0; i < 10; i++) await Promise.resolve();
    expect(settled, 'still waiting for task 0').toBe(false);
    slow.resolve(1);
    await expect(run).rejects.toThrow('first failure');
    expect(slowEnded).toBe(true);
    expect(started).toEqual([0, 1]);
  });
});

describe('settleAll', () => {
  it('throws the first failure in array order only after every promise settled', async () => {
    const late = deferred<number>();
    let settled = false;
    const all = settleAll([late.promise, Promise.reject(new Error('b')), Promise.reject(new Error('c'))]).finally(
      () => (settled = true),
    );
    for (let i = 0; i < 10; i++) await Promise.resolve();
    expect(settled).toBe(false);
    late.resolve(1);
    await expect(all).rejects.toThrow('b');
    expect(await settleAll([Promise.resolve(1), Promise.resolve(2)])).toEqual([1, 2]);
  });
});
