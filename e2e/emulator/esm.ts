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
 */
import { ChangeMessageVisibilityBatchCommand, DeleteMessageBatchCommand, SQSClient, type Message } from '@aws-sdk/client-sqs';
import { withFunction } from '../iam/recorder.js';
import type { EmulatedFunction } from './lambda.js';
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
}

/** Receipt handles whose visibility a handler changed itself (filled from the audited calls). */
export const handlerChangedVisibility = new Set<string>();

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
  inFlight = 0;

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
    const result = await this.fn.invoke(sqsEventOf(this.spec.queueArn, messages));
    let failed: Set<string>;
    if (!result.ok) {
      failed = new Set(messages.map((m) => m.MessageId!));
      this.failedBatches++;
    } else if (this.spec.reportBatchItemFailures) {
      const items = (result.value as { batchItemFailures?: { itemIdentifier?: string }[] } | null)?.batchItemFailures ?? [];
      const ids = new Set(messages.map((m) => m.MessageId!));
      // Lambda treats a response naming an unknown or empty identifier as a failure of the whole batch.
      const valid = items.every((f) => typeof f.itemIdentifier === 'string' && ids.has(f.itemIdentifier));
      failed = valid ? new Set(items.map((f) => f.itemIdentifier!)) : ids;
      if (failed.size > 0) this.partialFailures++;
    } else {
      failed = new Set();
    }
    const done = messages.filter((m) => !failed.has(m.MessageId!));
    const back = messages.filter((m) => failed.has(m.MessageId!) && !handlerChangedVisibility.has(m.ReceiptHandle!));
    // A lost delete: the messages come back when their visibility lapses (compressed like a
    // failure's), in two waves a few seconds apart, so that they are redelivered in batches of
    // another composition than the one they were handled in.
    const lost = done.length > 0 && this.faults.loseDelete?.(this.spec, done) === true;
    const late = lost ? done.filter((_, i) => i % 2 === 1) : [];
    if (lost) back.push(...done.filter((_, i) => i % 2 === 0));
    await withFunction(this.fn.spec.logicalId, async () => {
      if (done.length > 0 && !lost) {
        for (let i = 0; i < done.length; i += 10) {
          const chunk = done.slice(i, i + 10);
          await this.sqs.send(new DeleteMessageBatchCommand({ QueueUrl: this.spec.queueUrl, Entries: chunk.map((m, k) => ({ Id: String(k), ReceiptHandle: m.ReceiptHandle! })) }));
        }
      }
    });
    // What failed stays invisible for the visibility timeout (compressed here), then SQS
    // redelivers it; the handler may have set its own (backoff), which is then left alone.
    const seconds = Math.max(1, Math.round(this.spec.visibilityTimeout / this.timeScale));
    await this.hide(back, seconds);
    await this.hide(late, seconds + 2 * this.spec.windowSeconds + 3);
  }

  private async hide(messages: Message[], seconds: number): Promise<void> {
    for (let i = 0; i < messages.length; i += 10) {
      const chunk = messages.slice(i, i + 10);
      await this.sqs
        .send(new ChangeMessageVisibilityBatchCommand({ QueueUrl: this.spec.queueUrl, Entries: chunk.map((m, k) => ({ Id: String(k), ReceiptHandle: m.ReceiptHandle!, VisibilityTimeout: seconds })) }))
        .catch(() => undefined);
    }
  }
}
