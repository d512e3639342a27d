/**
 * How long a batch of split messages may deliver (the split-delivery policy's time rule, one for
 * every reader). A sink call must end before the batch's messages become visible again (the queue
 * hands them to another reader then) and before the reader itself ends (a Lambda invocation's
 * timeout): the sink deadline is the earlier of the two, less a margin, and a sink call still
 * running then fails its split (SinkTimeoutError, delivered again). The bucket's split fence
 * (split-fence.ts) is held until the reader's end: a Lambda container ends at its timeout, and a
 * sink call still running with it, so no call of this batch lands later.
 */

/** Without a known end or visibility: the StreamConsumer's default reader timeout. */
const DEFAULT_WINDOW_MS = 5 * 60_000;

/** How far two readers' clocks may disagree. */
const CLOCK_SKEW_MS = 1000;

/** What a reader knows about its batch's time. */
export interface SplitWindowInput {
  /** Epoch ms now. */
  now: number;
  /** Time left before the reader ends (a Lambda invocation's remaining time); undefined when it does not end by itself. */
  remainingMs?: number;
  /** The queue's visibility timeout in ms; undefined or 0 when unknown. */
  visibilityMs?: number;
  /**
   * When each message's visibility started, when the queue says so (a first receive's timestamp);
   * undefined for a message received again (its visibility started before now, at the latest now).
   */
  visibleSince?: ReadonlyArray<number | undefined>;
}

/** The deadlines of one batch (epoch ms). */
export interface SplitWindow {
  /** Every sink call has ended by then (undefined: no limit). */
  sinkDeadline?: number;
  /** The split fences are held until then. */
  holdUntil: number;
  /**
   * How long the batch's end waits for sink calls that outlived their deadline, as an epoch ms
   * (undefined: as long as they run, because the reader's end ends them, as Lambda's does).
   */
  lateCallsUntil?: number;
}

/** The window of a batch (see the file comment). */
export function splitWindow(input: SplitWindowInput): SplitWindow {
  const { now, remainingMs } = input;
  const readerEnd = remainingMs === undefined ? undefined : now + remainingMs;
  let visibleAgain: number | undefined;
  if (input.visibilityMs !== undefined && Number.isFinite(input.visibilityMs) && input.visibilityMs > 0) {
    const since = (input.visibleSince ?? [undefined]).map((t) => t ?? now);
    visibleAgain = Math.min(now, ...since) + input.visibilityMs;
  }
  const end = Math.min(readerEnd ?? Infinity, visibleAgain ?? Infinity);
  const window = Number.isFinite(end) ? end - now : DEFAULT_WINDOW_MS;
  // Room to record progress and answer after the last sink call: a tenth, between 0.2 and 5 s.
  const margin = Math.min(5000, Math.max(200, window / 10));
  // The hold outlasts the reader by the clock skew another reader may have.
  const holdUntil = (readerEnd ?? now + window) + CLOCK_SKEW_MS;
  return {
    sinkDeadline: now + window - margin,
    holdUntil,
    lateCallsUntil: readerEnd === undefined ? holdUntil : undefined,
  };
}
