import { fileURLToPath } from 'node:url';
import { Duration, type Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { SqsQueue } from 'aws-cdk-lib/aws-events-targets';
import type { CfnFunction, CfnEventSourceMapping } from 'aws-cdk-lib/aws-lambda';
import { Queue, type CfnQueue } from 'aws-cdk-lib/aws-sqs';
import { describe, expect, it } from 'vitest';
import {
  DEPLOY_RULES,
  SQS_MAX_MESSAGE_BYTES,
  VARVE_MAX_MESSAGE_BYTES,
  type DeployRule,
} from '../../infra/deploy-rules.js';
import { StreamConsumer } from '../../infra/stream-consumer.js';
import { VarveTable } from '../../infra/table.js';
import { Warehouse } from '../../infra/warehouse.js';
import { MAX_COMMIT_MESSAGE_BYTES } from '../../lib/table/commit-message.js';
import { MAX_INLINE_MESSAGE_BYTES } from '../../lib/stream/split-message.js';
import { testStack } from './template.js';

const SINK = fileURLToPath(new URL('./fixtures/sink.ts', import.meta.url));

/** A warehouse, a table in queue mode and a consumer: the stack every rule is broken in. */
function varveStack() {
  const stack = testStack();
  const warehouse = new Warehouse(stack, 'Warehouse');
  const table = new VarveTable(stack, 'Orders', { warehouse, database: 'shop', table: 'orders' });
  const consumer = new StreamConsumer(stack, 'Audit', {
    table,
    consumerId: 'audit',
    sink: { kind: 'function', entry: SINK },
  });
  return { stack, warehouse, table, consumer };
}

/** Synthesises `stack` and returns the message synth failed with (fails the test if it did not). */
function synthError(stack: Stack): string {
  try {
    Template.fromStack(stack);
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error('synth passed, but a deploy rule was broken');
}

/** The message names the rule, the construct path and the AWS page. */
function expectBroken(message: string, rule: DeployRule, path: string): void {
  expect(message).toContain(`varve deploy rule ${rule.id} broken at ${path}`);
  expect(message).toContain(rule.doc);
}

const cfn = <T>(c: { node: { defaultChild?: unknown } }) => c.node.defaultChild as T;

describe('varve deploy rules at synth', () => {
  it('passes the default warehouse, table and consumer, with every rule checked', () => {
    // Prepare / Act / Assess: synth throws on any broken rule.
    const { stack } = varveStack();
    expect(() => Template.fromStack(stack)).not.toThrow();
  });

  it('refuses a FIFO queue as the dead-letter queue of an EventBridge rule target (the discovery trigger bug)', () => {
    // Prepare: the discovery triggers' DLQ put back to the FIFO discovery DLQ, as it once was.
    const { stack, consumer } = varveStack();
    const rule = consumer.node.findChild('DiscoverSchedule') as Rule;
    const fifoDlq = consumer.deadLetterQueues[1] as Queue;
    cfn<{ addPropertyOverride(p: string, v: unknown): void }>(rule).addPropertyOverride(
      'Targets.0.DeadLetterConfig.Arn',
      fifoDlq.queueArn,
    );
    // Act / Assess
    expectBroken(synthError(stack), DEPLOY_RULES.ruleDlqStandard, rule.node.defaultChild!.node.path);
  });

  it("refuses an SQS source whose visibility timeout is shorter than its function's timeout", () => {
    const { stack, table } = varveStack();
    cfn<CfnQueue>(table.commitQueue!).visibilityTimeout = 30;
    const message = synthError(stack);
    expectBroken(message, DEPLOY_RULES.visibility, `${table.node.path}/Commit/SqsEventSource:TestOrdersCommitQueue`);
  });

  it("refuses a varve queue whose visibility timeout is under 6x its function's timeout", () => {
    const { stack, consumer } = varveStack();
    // 150 s for a 120-s function: what the discovery queue had.
    cfn<CfnQueue>(consumer.discoverQueue).visibilityTimeout = 150;
    const message = synthError(stack);
    expect(message).toContain(
      `varve deploy rule ${DEPLOY_RULES.visibilitySixfold.id} broken at ${consumer.discoverFunction.node.path}/SqsEventSource`,
    );
    expect(message).toContain('(visibility timeout 150 s) feeds function');
  });

  it('refuses a FIFO source with a batch above 10 or a batching window', () => {
    const { stack, table } = varveStack();
    const mapping = table.compactFunction.node.children.find((c) => c.node.id.startsWith('SqsEventSource'))!.node
      .defaultChild as CfnEventSourceMapping;
    mapping.batchSize = 20;
    mapping.maximumBatchingWindowInSeconds = 5;
    const message = synthError(stack);
    expectBroken(message, DEPLOY_RULES.fifoBatch, mapping.node.path);
    expect(message).toContain('has batch size 20');
    expect(message).toContain('has a batching window of 5 s');
  });

  it("refuses a queue whose dead-letter queue is of the other type, the user's queue on a varve DLQ included", () => {
    const { stack, table } = varveStack();
    // A user's standard queue that dead-letters into varve's FIFO commit DLQ.
    const commitDlq = table.deadLetterQueues[3] as Queue;
    const mine = new Queue(stack, 'MyQueue', { deadLetterQueue: { queue: commitDlq, maxReceiveCount: 3 } });
    expectBroken(synthError(stack), DEPLOY_RULES.dlqType, cfn<CfnQueue>(mine).node.path);
  });

  it('refuses a rule that targets a FIFO queue without a message group id, or one without content-based deduplication', () => {
    const { stack, table } = varveStack();
    // A user's rule feeding varve's commit queue (FIFO, explicit deduplication ids only).
    const rule = new Rule(stack, 'Feed', {
      schedule: Schedule.rate(Duration.minutes(5)),
      targets: [new SqsQueue(table.commitQueue!)],
    });
    const message = synthError(stack);
    expectBroken(message, DEPLOY_RULES.fifoTarget, rule.node.defaultChild!.node.path);
    expect(message).toContain('without a MessageGroupId');
    expect(message).toContain('which has no content-based deduplication');
  });

  it('refuses a function timeout above 900 s', () => {
    const { stack, table } = varveStack();
    cfn<CfnFunction>(table.expireFunction).timeout = 1800;
    expectBroken(synthError(stack), DEPLOY_RULES.lambdaTimeout, cfn<CfnFunction>(table.expireFunction).node.path);
  });

  it("refuses a queue limit above SQS's 1 MiB, or a varve queue that cannot take varve's largest message", () => {
    const { stack, table, consumer } = varveStack();
    cfn<CfnQueue>(table.ingestQueue).maximumMessageSize = 2 * SQS_MAX_MESSAGE_BYTES;
    cfn<CfnQueue>(consumer.splitQueue).maximumMessageSize = 256 * 1024;
    const message = synthError(stack);
    expectBroken(message, DEPLOY_RULES.messageSize, cfn<CfnQueue>(table.ingestQueue).node.path);
    expectBroken(message, DEPLOY_RULES.messageSize, cfn<CfnQueue>(consumer.splitQueue).node.path);
  });

  it('bounds every message varve sends below the largest it declares, and that below SQS limit', () => {
    expect(VARVE_MAX_MESSAGE_BYTES).toBeLessThanOrEqual(SQS_MAX_MESSAGE_BYTES);
    expect(MAX_COMMIT_MESSAGE_BYTES).toBeLessThanOrEqual(VARVE_MAX_MESSAGE_BYTES);
    // A split's inline file list plus its envelope (table, path, ids: well under 64 KiB).
    expect(MAX_INLINE_MESSAGE_BYTES + 64 * 1024).toBeLessThanOrEqual(VARVE_MAX_MESSAGE_BYTES);
    // A reject carries at most 64 Ki characters of its record, each at most 6 bytes JSON-escaped, plus its envelope.
    expect(64 * 1024 * 6 + 64 * 1024).toBeLessThanOrEqual(VARVE_MAX_MESSAGE_BYTES);
  });

  it("leaves the user's own resources that touch nothing of varve alone", () => {
    const { stack } = varveStack();
    // Broken, but not varve's business: AWS will say so at deploy.
    const fifoDlq = new Queue(stack, 'TheirFifoDlq', { fifo: true });
    new Rule(stack, 'TheirRule', {
      schedule: Schedule.rate(Duration.minutes(5)),
      targets: [new SqsQueue(new Queue(stack, 'TheirQueue'), { deadLetterQueue: fifoDlq })],
    });
    expect(() => Template.fromStack(stack)).not.toThrow();
  });
});
