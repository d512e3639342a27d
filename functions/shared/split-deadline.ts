/**
 * How long a split reader invocation may deliver. A sink call must end before the invocation's
 * messages become visible again (SQS hands them to another container then) and before Lambda's
 * own timeout: the reader's deadline is the earlier of the two, less a margin, and a sink call
 * still running then fails its split (SinkTimeoutError, delivered again). The bucket's split fence
 * (lib/stream/split-fence.ts) is held until the invocation's end: a Lambda container ends at its
 * timeout, and a sink call still running with it, so no call of this invocation lands later.
 */
import type { Context, SQSRecord } from 'aws-lambda';

/** The reader function's environment: the split queue's visibility timeout (the StreamConsumer construct sets it). */
export interface SplitDeadlineEnv {
  VARVE_SPLIT_VISIBILITY_S?: string;
}

/** Without a Lambda context or a known visibility: the StreamConsumer's default reader timeout. */
const DEFAULT_WINDOW_MS = 5 * 60_000;

/** How far two containers' clocks may disagree. */
const CLOCK_SKEW_MS = 1000;

/** The deadlines of one invocation (epoch ms). */
export interface SplitDeadlines {
  /** Every sink call has ended by then. */
  sink: number;
  /** The invocation's end: the split fences are held until then. */
  hold: number;
  /** True on Lambda: a sink call still running at the end is ended with the container, so the handler waits for it. */
  ends: boolean;
}

/** The deadlines of an invocation with `records`, `context` and `env`, at `now`. */
export function splitDeadlines(records: readonly SQSRecord[], context: Context | undefined, env: SplitDeadlineEnv, now = Date.now()): SplitDeadlines {
  const remaining = typeof context?.getRemainingTimeInMillis === 'function' ? context.getRemainingTimeInMillis() : undefined;
  const lambdaEnd = remaining === undefined ? undefined : now + remaining;
  const visibilityS = Number(env.VARVE_SPLIT_VISIBILITY_S);
  let visibleAgain: number | undefined;
  if (Number.isFinite(visibilityS) && visibilityS > 0) {
    // A first receive tells when its visibility started; a redelivered one only that it started before now.
    const received = records.map((r) => (r.attributes.ApproximateReceiveCount === '1' ? Number(r.attributes.ApproximateFirstReceiveTimestamp) || now : now));
    visibleAgain = Math.min(now, ...received) + visibilityS * 1000;
  }
  const end = Math.min(lambdaEnd ?? Infinity, visibleAgain ?? Infinity);
  const window = Number.isFinite(end) ? end - now : DEFAULT_WINDOW_MS;
  // Room to record progress and answer after the last sink call: a tenth, between 0.2 and 5 s.
  const margin = Math.min(5000, Math.max(200, window / 10));
  // The hold outlasts the invocation by the clock skew another container may have.
  return { sink: now + window - margin, hold: (lambdaEnd ?? now + window) + CLOCK_SKEW_MS, ends: lambdaEnd !== undefined };
}
