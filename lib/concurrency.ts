/** Runs async tasks with at most `limit` in flight; results keep the tasks' order. */
export async function runLimited<T>(tasks: Array<() => Promise<T>>, limit: number): Promise<T[]> {
  const out = new Array<T>(tasks.length);
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) {
      const i = next++;
      out[i] = await tasks[i]();
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, tasks.length)) }, worker));
  return out;
}

/**
 * As runLimited, but a failure starts no further task and is thrown only once the tasks in flight
 * have ended: nothing the tasks opened (a file being read) is still in use when the caller's
 * error handling runs. The first failure is thrown.
 */
export async function runLimitedSettled<T>(tasks: Array<() => Promise<T>>, limit: number): Promise<T[]> {
  const out = new Array<T>(tasks.length);
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async () => {
    while (failure === undefined && next < tasks.length) {
      const i = next++;
      try {
        out[i] = await tasks[i]();
      } catch (e) {
        failure ??= { error: e };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, tasks.length)) }, worker));
  if (failure !== undefined) throw failure.error;
  return out;
}

/** Maps `items` through `fn` with at most `limit` calls in flight; results keep the input order. */
export function parallelMap<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  return runLimited(
    items.map((item, i) => () => fn(item, i)),
    limit,
  );
}

/**
 * Waits for every promise, then throws the first failure in array order, if any: unlike
 * Promise.all, nothing is still running when the caller's cleanup starts (what a late task opens
 * is registered before it is released).
 */
export async function settleAll<T extends readonly unknown[]>(promises: { [K in keyof T]: Promise<T[K]> }): Promise<T> {
  const settled = await Promise.allSettled(promises);
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  return settled.map((r) => (r as PromiseFulfilledResult<unknown>).value) as unknown as T;
}
