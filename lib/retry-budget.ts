/**
 * The one retry budget of varve's loops (the commit loop, the identifier index claim, expiry's
 * marker compare-and-swap, ...): a count of retries and an optional time limit, decorrelated
 * backoff between retries, and one error when the budget runs out (RetriesExhaustedError, or the
 * loop's own subclass of it). A loop asks `retry(reason)` before each retry; only errors that say
 * a retry can help (VarveError.retryable) belong there: anything else is thrown at once.
 */
import { RetriesExhaustedError } from './errors.js';

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
    const max = this.opts.maxRetries ?? 10;
    const elapsed = performance.now() - this.started;
    if (this.retries >= max || (this.opts.timeoutMs !== undefined && elapsed >= this.opts.timeoutMs)) {
      const message =
        `${this.opts.what} gave up after ${this.retries} ${this.retries === 1 ? 'retry' : 'retries'} in ${Math.round(elapsed)} ms (last: ${reason})` +
        (this.opts.advice ? `; ${this.opts.advice}` : '');
      throw this.opts.exhausted ? this.opts.exhausted(message, this.retries, cause) : new RetriesExhaustedError(message, this.retries, { cause });
    }
    this.retries++;
    this.opts.onRetry?.(this.retries, reason);
    // Jittered: racing callers spread out instead of colliding again in lockstep; decorrelated, so
    // one that lost often is not parked at the cap while fresh ones take every turn.
    this.lastWaitMs = decorrelatedBackoff(this.lastWaitMs, this.opts.minWaitMs ?? 10, this.opts.maxWaitMs ?? 10_000);
    await sleep(this.lastWaitMs);
  }
}
