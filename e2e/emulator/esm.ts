/**
 * Lambda's SQS event source mapping, emulated from the template's AWS::Lambda::EventSourceMapping:
 * pollers receive batches (BatchSize, gathered for MaximumBatchingWindowInSeconds on a standard
 * queue), invoke the function synchronously, delete what succeeded, and honour
 * ReportBatchItemFailures (an invalid response fails the whole batch). A failed message stays
 * invisible for the queue's visibility timeout unless the handler itself changed its visibility;
 * the emulator compresses that wait by `timeScale`. ScalingConfig.MaximumConcurrency caps the
 * concurrent invocations; on a FIFO queue SQS itself (moto) hands out one batch per message
 * group at a time, and maxReceiveCount moves messages to the DLQ. The polling calls are made with
 * the function's role, as Lambda does, and are audited as the function's.
 *
 * A throttled invocation (the Lambda service refused it: TooManyRequestsException) is retried by
 * the mapping with a growing back-off while the batch's visibility timeout lasts, and dropped back
 * to the queue when it runs out, as AWS documents for SQS event sources: "If the invocation fails
 * due to throttling, Lambda gradually backs off retries by reducing the amount of concurrency
 * allocated to your Amazon SQS event source mapping. Lambda continues to retry the message until
 * the message's timestamp exceeds your queue's visibility timeout, at which point Lambda drops the
 * message." (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html). A
 * throttle is not a function error: the batch keeps its order and its receive count.
 *
 * One correction of moto on FIFO queues: SQS keeps a message group locked while any of its
 * messages is in flight, and hands the group out again from its oldest message. moto instead
 * unlocks a group message by message as their visibility lapses, and when several messages of a
 * group were received together and come back by expiry (a handler's backoff, a failed batch) it
 * hands out the group's *last* message first and skips the head (aws-semantics.md §5.1): a split
 * would arrive before its predecessor and fail for a gap, burning receives toward the DLQ. So the
 * failed messages of a FIFO batch are held here per group until the latest of their visibilities
 * (each message's own: the handler's backoff or the queue's timeout), then released together with
 * ChangeMessageVisibility 0, after which moto hands the group out in order, as SQS does.
 */
import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  SQSClient,
  type Message,
} from '@aws-sdk/client-sqs';
import { withFunction } from '../iam/recorder.js';
import type { RecordedCall } from '../iam/requests.js';
import type { EmulatedFunction, InvokeResult } from './lambda.js';
import { receiveMessages, sqsEventOf } from './sqs-event.js';

/** The settings of one mapping, resolved. */
export interface MappingSpec {
  logicalId: string;
  queueUrl: string;
  queueArn: string;
  fifo: boolean;
  batchSize: number;
  windowSeconds: number;
  reportBatchItemFailures: boolean;
  maxConcurrency?: number;
  visibilityTimeout: number;
}

/** Faults a scenario can inject into a mapping. */
export interface MappingFaults {
  /** True: the batch's successful messages are not deleted (a lost delete): SQS redelivers them. */
  loseDelete?(mapping: MappingSpec, messages: Message[]): boolean;
  /** An error: the batch's invocation fails with it (the handler does not run), e.g. to dead-letter a chosen message. */
  failInvocation?(mapping: MappingSpec, messages: Message[]): { name: string; message: string } | undefined;
}

/** Receipt handles whose visibility a handler changed itself, with when it lapses (epoch ms; filled from the audited calls). */
export const handlerChangedVisibility = new Map<string, number>();

/**
 * How much faster than real time the visibilities a handler sets pass (its backoffs): 1 in the
 * end-to-end run (backoffs are real there); a test driving handlers in-process may compress them.
 */
export const handlerVisibility = { timeScale: 1 };

/** Notes a handler's ChangeMessageVisibility(Batch) call (an audited call of a function). */
export function noteVisibilityChange(call: Pick<RecordedCall, 'service' | 'command' | 'input'>): void {
  if (call.service !== 'SQS' || !call.command.startsWith('ChangeMessageVisibility')) return;
  const lapses = (s: unknown) => Date.now() + ((Number(s) || 0) * 1000) / handlerVisibility.timeScale;
  if (call.input.ReceiptHandle)
    handlerChangedVisibility.set(call.input.ReceiptHandle as string, lapses(call.input.VisibilityTimeout));
  for (const e of (call.input.Entries as { ReceiptHandle?: string; VisibilityTimeout?: number }[] | undefined) ?? [])
    if (e.ReceiptHandle) handlerChangedVisibility.set(e.ReceiptHandle, lapses(e.VisibilityTimeout));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A mapping's pollers. */
export class EmulatedMapping {
  private running = false;
  private readonly loops: Promise<void>[] = [];
  private readonly sqs = new SQSClient({});
  batches = 0;
  /** Messages handed to the function (a redelivered one each time). */
  records = 0;
  failedBatches = 0;
  partialFailures = 0;
  /** Invocations of a batch the Lambda service refused (retried), and batches dropped back to the queue by them. */
  throttledInvocations = 0;
  throttleDrops = 0;
  inFlight = 0;
  /** FIFO: failed messages held per group until the group is released (see the file's comment). */
  private readonly releases = new Set<ReturnType<typeof setTimeout>>();

  constructor(
    readonly spec: MappingSpec,
    readonly fn: EmulatedFunction,
    private readonly timeScale: number,
    private readonly faults: MappingFaults = {},
  ) {}

  start(): void {
    this.running = true;
    // Lambda starts with a few pollers; concurrency grows with the backlog up to the cap.
    const pollers = Math.min(this.spec.maxConcurrency ?? 5, this.spec.fifo ? 5 : 3);
    for (let i = 0; i < pollers; i++) this.loops.push(this.loop());
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
    for (const t of this.releases) clearTimeout(t);
    this.releases.clear();
    this.sqs.destroy();
  }

  private async loop(): Promise<void> {
    // Lambda's pollers long-poll; moto's long poll spins while a queue holds in-flight messages,
    // so an idle poller here backs off instead (150 ms doubling to 1 s), keeping moto's CPU for the run.
    let idleMs = 150;
    while (this.running) {
      const messages = await this.gather();
      if (messages.length === 0) {
        await sleep(idleMs);
        idleMs = Math.min(1000, idleMs * 2);
        continue;
      }
      idleMs = 150;
      this.inFlight++;
      try {
        await this.process(messages);
      } finally {
        this.inFlight--;
      }
    }
  }

  private receive(max: number): Promise<Message[]> {
    return withFunction(this.fn.spec.logicalId, () => receiveMessages(this.sqs, this.spec.queueUrl, max));
  }

  /** One batch: up to BatchSize messages, gathered for at most the batching window. */
  private async gather(): Promise<Message[]> {
    const first = await this.receive(this.spec.batchSize);
    if (first.length === 0 || this.spec.fifo || this.spec.windowSeconds === 0) return first;
    const batch = [...first];
    const until = Date.now() + this.spec.windowSeconds * 1000;
    while (batch.length < this.spec.batchSize && Date.now() < until) {
      const more = await this.receive(this.spec.batchSize - batch.length);
      if (more.length === 0) await sleep(100);
      batch.push(...more);
    }
    return batch;
  }

  private async process(messages: Message[]): Promise<void> {
    this.batches++;
    this.records += messages.length;
    const result = await this.invokeThrottled(messages);
    let failed: Set<string>;
    if (!result.ok && result.kind === 'throttle') {
      failed = new Set(messages.map((m) => m.MessageId!));
      this.throttleDrops++;
    } else if (!result.ok) {
      failed = new Set(messages.map((m) => m.MessageId!));
      this.failedBatches++;
    } else if (this.spec.reportBatchItemFailures) {
      const items =
        (result.value as { batchItemFailures?: { itemIdentifier?: string }[] } | null)?.batchItemFailures ?? [];
      const ids = new Set(messages.map((m) => m.MessageId!));
      // Lambda treats a response naming an unknown or empty identifier as a failure of the whole batch.
      const valid = items.every((f) => typeof f.itemIdentifier === 'string' && ids.has(f.itemIdentifier));
      failed = valid ? new Set(items.map((f) => f.itemIdentifier!)) : ids;
      if (failed.size > 0) this.partialFailures++;
    } else {
      failed = new Set();
    }
    const done = messages.filter((m) => !failed.has(m.MessageId!));
    // What failed stays invisible for the visibility timeout (compressed here), then SQS
    // redelivers it; the handler may have set its own (backoff), which is then left alone.
    const seconds = Math.max(1, Math.round(this.spec.visibilityTimeout / this.timeScale));
    if (this.spec.fifo) {
      await this.deleteDone(done);
      await this.holdGroups(
        messages.filter((m) => failed.has(m.MessageId!)),
        seconds,
      );
      return;
    }
    const back = messages.filter((m) => failed.has(m.MessageId!) && !handlerChangedVisibility.has(m.ReceiptHandle!));
    // A lost delete: the messages come back when their visibility lapses (compressed like a
    // failure's), in two waves a few seconds apart, so that they are redelivered in batches of
    // another composition than the one they were handled in.
    const lost = done.length > 0 && this.faults.loseDelete?.(this.spec, done) === true;
    const late = lost ? done.filter((_, i) => i % 2 === 1) : [];
    if (lost) back.push(...done.filter((_, i) => i % 2 === 0));
    if (!lost) await this.deleteDone(done);
    await this.hide(back, seconds);
    await this.hide(late, seconds + 2 * this.spec.windowSeconds + 3);
  }

  /**
   * Invokes the function with the batch; a throttled invocation is retried after 250 ms, doubling
   * up to 2 s, while the batch's (compressed) visibility timeout lasts, then returned as it is.
   */
  private async invokeThrottled(messages: Message[]): Promise<InvokeResult> {
    const event = sqsEventOf(this.spec.queueArn, messages);
    const fail = this.faults.failInvocation?.(this.spec, messages);
    const until = Date.now() + (this.spec.visibilityTimeout * 1000) / this.timeScale;
    for (let waitMs = 250; ; waitMs = Math.min(2000, 2 * waitMs)) {
      const result = await this.fn.invoke(event, fail);
      if (result.ok || result.kind !== 'throttle') return result;
      this.throttledInvocations++;
      if (Date.now() + waitMs >= until) return result;
      await sleep(waitMs);
    }
  }

  private async deleteDone(done: Message[]): Promise<void> {
    await withFunction(this.fn.spec.logicalId, async () => {
      for (let i = 0; i < done.length; i += 10) {
        const chunk = done.slice(i, i + 10);
        await this.sqs.send(
          new DeleteMessageBatchCommand({
            QueueUrl: this.spec.queueUrl,
            Entries: chunk.map((m, k) => ({ Id: String(k), ReceiptHandle: m.ReceiptHandle! })),
          }),
        );
      }
    });
  }

  /**
   * FIFO: holds each group's failed messages until the latest of their visibilities (the
   * handler's own, else `seconds`), then makes them all visible at once, in order, so that the
   * group comes back from its head (SQS's behaviour; moto's own expiry would not).
   */
  private async holdGroups(failed: Message[], seconds: number): Promise<void> {
    const groups = new Map<string, Message[]>();
    for (const m of failed) {
      const g = m.Attributes?.MessageGroupId ?? '';
      groups.set(g, [...(groups.get(g) ?? []), m]);
    }
    const now = Date.now();
    for (const group of groups.values()) {
      const releaseAt = Math.max(
        ...group.map((m) => handlerChangedVisibility.get(m.ReceiptHandle!) ?? now + seconds * 1000),
      );
      for (const m of group) handlerChangedVisibility.delete(m.ReceiptHandle!);
      // Hidden past the release (a safety net should the emulator stop first), then released.
      await this.hide(group, Math.ceil((releaseAt - Date.now()) / 1000) + 30);
      const t = setTimeout(
        () => {
          this.releases.delete(t);
          void this.hide(group, 0);
        },
        Math.max(0, releaseAt - Date.now()),
      );
      this.releases.add(t);
    }
  }

  private async hide(messages: Message[], seconds: number): Promise<void> {
    for (let i = 0; i < messages.length; i += 10) {
      const chunk = messages.slice(i, i + 10);
      await this.sqs
        .send(
          new ChangeMessageVisibilityBatchCommand({
            QueueUrl: this.spec.queueUrl,
            Entries: chunk.map((m, k) => ({
              Id: String(k),
              ReceiptHandle: m.ReceiptHandle!,
              VisibilityTimeout: seconds,
            })),
          }),
        )
        .catch(() => undefined);
    }
  }
}
