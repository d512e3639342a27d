/**
 * The one retry budget of varve's loops (the commit loop, the identifier index claim, expiry's
 * marker compare-and-swap, ...): a count of retries and an optional time limit, decorrelated
 * backoff between retries, and one error when the budget runs out (RetriesExhaustedError, or the
 * loop's own subclass of it). A loop asks `retry(reason)` before each retry; only errors that say
 * a retry can help (VarveError.retryable) belong there: anything else is thrown at once.
 * `run(attempt)` is that loop: an attempt returns its result, or a TryAgain saying why not yet.
 * followSchemaChanges is the loop of work planned again under a newer schema (a write, a
 * compaction) when an alter lands meanwhile.
 */
import { RetriesExhaustedError, SchemaChangedError } from './errors.js';

/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * "Decorrelated jitter" (AWS Architecture Blog, "Exponential Backoff And Jitter"): the next wait is
 * drawn between `baseMs` and three times the previous one, capped at `maxMs`. Waits still grow
 * about geometrically while a writer keeps losing, but each draw starts again from the floor with
 * some probability, so a writer that lost many times is not parked for seconds while fresh
 * writers take every id (the starvation plain exponential backoff shows across processes).
 * `previousMs` is undefined before the first retry.
 */
function decorrelatedBackoff(previousMs: number | undefined, baseMs: number, maxMs: number): number {
  const prev = Math.max(baseMs, previousMs ?? baseMs);
  return Math.min(maxMs, baseMs + Math.random() * (prev * 3 - baseMs));
}

/** The limits and waits of a RetryBudget. */
export interface RetryBudgetOptions {
  /** What is retried, for the error: `commit to db.t`, `moving the EARLIEST marker`. */
  what: string;
  /** Retries allowed after the first attempt. @default 10 */
  maxRetries?: number;
  /** Give up once this many milliseconds have passed since the budget was made (no limit by default). */
  timeoutMs?: number;
  /** @default 10 */
  minWaitMs?: number;
  /** @default 10_000 */
  maxWaitMs?: number;
  /** What to do when the budget runs out, appended to the error message. */
  advice?: string;
  /** Called before each wait, with the retry's number (1-based) and reason. */
  onRetry?: (retry: number, reason: string) => void;
  /** The error thrown when the budget runs out. @default RetriesExhaustedError */
  exhausted?: (message: string, retries: number, cause: unknown) => RetriesExhaustedError;
}

/** What an attempt run by RetryBudget.run returns to be tried again: why (and the error that said so). */
export class TryAgain {
  constructor(
    readonly reason: string,
    readonly cause?: unknown,
  ) {}
}

/** See the file comment. */
export class RetryBudget {
  /** Retries made so far. */
  retries = 0;
  private readonly started = performance.now();
  private lastWaitMs: number | undefined;

  constructor(private readonly opts: RetryBudgetOptions) {}

  /**
   * Waits before the next retry, or throws the budget's error when no retry is left: the retries
   * made reach `maxRetries`, or `timeoutMs` has passed. `reason` (and `cause`) say why the last
   * attempt failed.
   */
  async retry(reason: string, cause?: unknown): Promise<void> {
    const elapsed = performance.now() - this.started;
    if (this.spent) {
      const message =
        `${this.opts.what} gave up after ${this.retries} ${this.retries === 1 ? 'retry' : 'retries'} in ${Math.round(elapsed)} ms (last: ${reason})` +
        (this.opts.advice ? `; ${this.opts.advice}` : '');
      throw this.opts.exhausted
        ? this.opts.exhausted(message, this.retries, cause)
        : new RetriesExhaustedError(message, this.retries, { cause });
    }
    this.retries++;
    this.opts.onRetry?.(this.retries, reason);
    // Jittered: racing callers spread out instead of colliding again in lockstep; decorrelated, so
    // one that lost often is not parked at the cap while fresh ones take every turn.
    this.lastWaitMs = decorrelatedBackoff(this.lastWaitMs, this.opts.minWaitMs ?? 10, this.opts.maxWaitMs ?? 10_000);
    await sleep(this.lastWaitMs);
  }

  /**
   * True when no retry is left (`retry` would throw the budget's error): for a loop that gives up
   * with a result rather than an error (a compaction run reports the buckets it gave up).
   */
  get spent(): boolean {
    const elapsed = performance.now() - this.started;
    return (
      this.retries >= (this.opts.maxRetries ?? 10) ||
      (this.opts.timeoutMs !== undefined && elapsed >= this.opts.timeoutMs)
    );
  }

  /**
   * Runs `attempt` until it returns a result: an attempt that returns a TryAgain runs again after
   * `retry(reason)` (its wait, or the budget's error); one that throws ends the run with its
   * error. `attempt` is given the number of retries made before it.
   */
  async run<T>(attempt: (retries: number) => Promise<T | TryAgain>): Promise<T> {
    for (;;) {
      const r = await attempt(this.retries);
      if (!(r instanceof TryAgain)) return r;
      await this.retry(r.reason, r.cause);
    }
  }
}

/** Schema changes (alters landing meanwhile) a write or a compaction follows before giving up: one cap for all of them. */
const SCHEMA_CHANGE_RETRIES = 5;

/** The budget of schema changes followed by one write or compaction (see followSchemaChanges). */
function schemaChangeBudget(what: string): RetryBudget {
  return new RetryBudget({
    what,
    maxRetries: SCHEMA_CHANGE_RETRIES,
    minWaitMs: 0,
    maxWaitMs: 0,
    advice: 'alters kept landing while it was planned; run it again once the schema settles',
  });
}

/**
 * Runs `attempt` on `state`. When it fails with SchemaChangedError (an alter landed while it was
 * planned under the old schema; nothing was committed), `reopen` moves the state to the newer
 * schema and it runs again, at once (the new schema is there to be read), at most
 * SCHEMA_CHANGE_RETRIES times; then RetriesExhaustedError (caused by the last schema change).
 * Any other error is thrown as it is. `attempt` is given the number of schema changes followed.
 */
export async function followSchemaChanges<S, T>(
  what: string,
  state: S,
  attempt: (state: S, retries: number) => Promise<T>,
  reopen: (state: S, e: SchemaChangedError) => Promise<S>,
): Promise<T> {
  const budget = schemaChangeBudget(what);
  let changed: SchemaChangedError | undefined;
  return budget.run(async (retries) => {
    if (changed !== undefined) state = await reopen(state, changed);
    try {
      return await attempt(state, retries);
    } catch (e) {
      if (!(e instanceof SchemaChangedError)) throw e;
      changed = e;
      return new TryAgain(e.message, e);
    }
  });
}
