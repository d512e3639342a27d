/**
 * AWS's deploy-time rules, checked at synth. CloudFormation (or the service behind it) refuses
 * each of these only when the stack is deployed, and moto accepts every one of them, so a stack
 * that breaks one passes every emulated test and then rolls back on AWS. This aspect checks the
 * rendered CloudFormation of every resource varve's constructs create, and of the user's
 * resources where they touch ours (a reference either way), and fails synthesis with one
 * message per broken rule: what, where (the construct path), the rule and the AWS page that
 * states it.
 *
 * A Warehouse adds the aspect to its stack, so every app with a varve construct (the example app,
 * the e2e app, a user's app) runs the checks at `cdk synth`.
 */
import { Aspects, AspectPriority, CfnResource, Stack, type IAspect } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';
import { MAX_COMMIT_MESSAGE_BYTES } from '../lib/table/commit-message.js';

/** One rule AWS enforces at deploy time: what it says and where AWS says it. */
export interface DeployRule {
  readonly id: string;
  /** The rule, in AWS's words where they are short enough. */
  readonly rule: string;
  /** The AWS documentation page that states it. */
  readonly doc: string;
}

/** The rules, each with the AWS page it encodes. */
export const DEPLOY_RULES = {
  ruleDlqStandard: {
    id: 'eventbridge-dlq-standard',
    rule: 'EventBridge DLQs are standard Amazon SQS queues (PutTargets answers "SQS FIFO is not supported by Dead Letter Queues")',
    doc: 'https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-rule-dlq.html',
  },
  visibility: {
    id: 'sqs-visibility-covers-timeout',
    rule: "Your function's timeout must be less than or equal to the queue's visibility timeout (Lambda refuses the event source mapping otherwise)",
    doc: 'https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html',
  },
  visibilitySixfold: {
    id: 'sqs-visibility-sixfold',
    rule: "set the source queue's visibility timeout to at least six times the configuration timeout on your function (varve keeps this guidance for every queue it consumes: a throttled batch is retried before it becomes visible again)",
    doc: 'https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html',
  },
  fifoBatch: {
    id: 'fifo-source-batch',
    rule: 'for FIFO queues, the maximum BatchSize is 10, and a batching window (MaximumBatchingWindowInSeconds) is not supported',
    doc: 'https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-parameters.html',
  },
  dlqType: {
    id: 'sqs-dlq-same-type',
    rule: 'the queue type must match the source queue type: a FIFO queue can only use a FIFO DLQ, and a standard queue can only use a standard DLQ',
    doc: 'https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-configure-dead-letter-queue.html',
  },
  fifoTarget: {
    id: 'eventbridge-fifo-target',
    rule: 'a FIFO queue target needs SqsParameters.MessageGroupId, and the queue must have content-based deduplication enabled (a rule sends no deduplication id)',
    doc: 'https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_SqsParameters.html',
  },
  lambdaTimeout: {
    id: 'lambda-timeout-max',
    rule: 'a function timeout is at most 900 seconds (15 minutes)',
    doc: 'https://docs.aws.amazon.com/lambda/latest/dg/configuration-timeout.html',
  },
  messageSize: {
    id: 'sqs-message-size',
    rule: `a message is at most 1 MiB (1,048,576 bytes), and a queue varve sends to must take the largest message varve sends (${MAX_COMMIT_MESSAGE_BYTES} bytes)`,
    doc: 'https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html',
  },
} as const satisfies Record<string, DeployRule>;

/** SQS's message size quota (and the default of MaximumMessageSize since 2025). */
export const SQS_MAX_MESSAGE_BYTES = 1_048_576;

/**
 * The largest message varve's functions send to a queue of its own. Each kind is bounded where
 * it is encoded: a commit message refuses to grow past MAX_COMMIT_MESSAGE_BYTES
 * (lib/table/commit-message.ts), a split message sends its file list by reference above
 * MAX_INLINE_MESSAGE_BYTES (lib/stream/split-message.ts), a reject cuts its record at 64 Ki
 * characters (functions/shared/rejects.ts), and compaction jobs and discovery triggers are a few
 * fixed fields. test/infra/deploy-rules.test.ts holds each bound under this one.
 */
export const VARVE_MAX_MESSAGE_BYTES = MAX_COMMIT_MESSAGE_BYTES;

/** Lambda's default timeout and SQS's default visibility timeout (what CloudFormation leaves unset). */
const LAMBDA_DEFAULT_TIMEOUT_S = 3;
const SQS_DEFAULT_VISIBILITY_S = 30;
const LAMBDA_MAX_TIMEOUT_S = 900;

/** One resource as CloudFormation will get it (escape-hatch overrides applied). */
interface Rendered {
  readonly construct: CfnResource;
  readonly id: string;
  readonly type: string;
  readonly props: Record<string, unknown>;
  readonly varve: boolean;
}

/** What a reference points at: a resource of this stack, or a literal ARN from elsewhere. */
type Target = { resource: Rendered } | { arn: string } | undefined;

/** A broken rule at one construct. */
export interface DeployRuleViolation {
  readonly rule: DeployRule;
  readonly construct: IConstruct;
  readonly path: string;
  readonly what: string;
}

/** The message synth fails with. */
function formatViolation(v: DeployRuleViolation): string {
  return `varve deploy rule ${v.rule.id} broken at ${v.path}: ${v.what}. AWS: ${v.rule.rule} (${v.rule.doc})`;
}

/**
 * Checks AWS's deploy-time rules over a stack. Added by every Warehouse to its stack; add it
 * yourself to a stack that only imports varve's resources: `Aspects.of(stack).add(new VarveDeployRules())`.
 */
export class VarveDeployRules implements IAspect {
  /** Checks the stack when visited; every other construct is reached through it. */
  visit(node: IConstruct): void {
    if (!Stack.isStack(node)) return;
    for (const v of checkDeployRules(node, isVarveConstruct)) {
      v.construct.node.addValidation({ validate: () => [formatViolation(v)] });
    }
  }
}

/** The Warehouse, VarveTable and StreamConsumer constructs (each registers itself). */
const varveConstructs = new WeakSet<IConstruct>();

/**
 * Registers a varve construct (a Warehouse, VarveTable or StreamConsumer) and adds the deploy
 * rules to its stack once, to run after every mutating aspect.
 */
export function addVarveDeployRules(construct: IConstruct): void {
  varveConstructs.add(construct);
  const stack = Stack.of(construct);
  if (Aspects.of(stack).all.some((a) => a instanceof VarveDeployRules)) return;
  Aspects.of(stack).add(new VarveDeployRules(), { priority: AspectPriority.READONLY });
}

/** True when the construct lies inside a varve construct. */
export function isVarveConstruct(c: IConstruct): boolean {
  return c.node.scopes.some((s) => varveConstructs.has(s));
}

/** Every broken rule of `stack`, checking resources `isVarve` accepts and those touching them. */
export function checkDeployRules(stack: Stack, isVarve: (c: IConstruct) => boolean): DeployRuleViolation[] {
  const byId = new Map<string, Rendered>();
  for (const c of stack.node.findAll()) {
    if (!(c instanceof CfnResource) || Stack.of(c) !== stack) continue;
    const cfn = stack.resolve((c as unknown as { _toCloudFormation(): unknown })._toCloudFormation()) as {
      Resources: Record<string, { Type: string; Properties?: Record<string, unknown> }>;
    };
    for (const [id, r] of Object.entries(cfn.Resources)) {
      byId.set(id, { construct: c, id, type: r.Type, props: r.Properties ?? {}, varve: isVarve(c) });
    }
  }
  const target = (value: unknown): Target => {
    const getAtt = (value as { 'Fn::GetAtt'?: [string, string] } | undefined)?.['Fn::GetAtt'];
    const ref = (value as { Ref?: string } | undefined)?.Ref;
    const id = getAtt?.[0] ?? ref;
    if (id !== undefined) {
      const resource = byId.get(id);
      return resource ? { resource } : undefined;
    }
    return typeof value === 'string' ? { arn: value } : undefined;
  };
  const touchesVarve = (r: Rendered): boolean => r.varve || referencedIds(r.props).some((id) => byId.get(id)?.varve);
  const out: DeployRuleViolation[] = [];
  const report = (rule: DeployRule, r: Rendered, what: string) =>
    out.push({ rule, construct: r.construct, path: r.construct.node.path, what });
  const checked = [...byId.values()].filter(touchesVarve);
  for (const r of checked) {
    if (r.type === 'AWS::Events::Rule') checkRuleTargets(r, target, report);
    if (r.type === 'AWS::Lambda::EventSourceMapping') checkEventSource(r, target, report);
    if (r.type === 'AWS::SQS::Queue') checkQueue(r, target, report);
    if (r.type === 'AWS::Lambda::Function') {
      const timeout = numberOr(r.props.Timeout, LAMBDA_DEFAULT_TIMEOUT_S);
      if (timeout > LAMBDA_MAX_TIMEOUT_S)
        report(DEPLOY_RULES.lambdaTimeout, r, `the function's timeout is ${timeout} s`);
    }
  }
  return out;
}

type Report = (rule: DeployRule, r: Rendered, what: string) => void;

/** A queue's type from its resource or, for an imported queue, its ARN's `.fifo` suffix. */
function isFifo(t: Target): boolean | undefined {
  if (!t) return undefined;
  if ('arn' in t) return /^arn:[^:]+:sqs:/.test(t.arn) ? t.arn.endsWith('.fifo') : undefined;
  return t.resource.type === 'AWS::SQS::Queue'
    ? t.resource.props.FifoQueue === true || t.resource.props.FifoQueue === 'true'
    : undefined;
}

function describe(t: Target): string {
  if (!t) return 'an unknown queue';
  return 'arn' in t ? t.arn : t.resource.construct.node.path;
}

function checkRuleTargets(r: Rendered, target: (v: unknown) => Target, report: Report): void {
  for (const t of (r.props.Targets ?? []) as {
    Id?: string;
    Arn?: unknown;
    DeadLetterConfig?: { Arn?: unknown };
    SqsParameters?: { MessageGroupId?: unknown };
  }[]) {
    if (t.DeadLetterConfig?.Arn !== undefined) {
      const dlq = target(t.DeadLetterConfig.Arn);
      if (isFifo(dlq))
        report(
          DEPLOY_RULES.ruleDlqStandard,
          r,
          `target ${t.Id ?? '?'} has the FIFO queue ${describe(dlq)} as its dead-letter queue`,
        );
    }
    const queue = target(t.Arn);
    if (isFifo(queue)) {
      if (!t.SqsParameters?.MessageGroupId)
        report(
          DEPLOY_RULES.fifoTarget,
          r,
          `target ${t.Id ?? '?'} is the FIFO queue ${describe(queue)} without a MessageGroupId`,
        );
      const q = queue && 'resource' in queue ? queue.resource : undefined;
      if (q && q.props.ContentBasedDeduplication !== true && q.props.ContentBasedDeduplication !== 'true') {
        report(
          DEPLOY_RULES.fifoTarget,
          r,
          `target ${t.Id ?? '?'} is the FIFO queue ${describe(queue)}, which has no content-based deduplication`,
        );
      }
    }
  }
}

function checkEventSource(r: Rendered, target: (v: unknown) => Target, report: Report): void {
  const source = target(r.props.EventSourceArn);
  const queue =
    source && 'resource' in source && source.resource.type === 'AWS::SQS::Queue' ? source.resource : undefined;
  const fifo = isFifo(source);
  if (!queue && fifo === undefined) return; // not an SQS source (or one this stack cannot see)
  if (fifo) {
    const batch = numberOr(r.props.BatchSize, 10);
    if (batch > 10) report(DEPLOY_RULES.fifoBatch, r, `the FIFO source ${describe(source)} has batch size ${batch}`);
    if (r.props.MaximumBatchingWindowInSeconds !== undefined) {
      report(
        DEPLOY_RULES.fifoBatch,
        r,
        `the FIFO source ${describe(source)} has a batching window of ${r.props.MaximumBatchingWindowInSeconds} s`,
      );
    }
  }
  const fnTarget = target(r.props.FunctionName);
  const fn =
    fnTarget && 'resource' in fnTarget && fnTarget.resource.type === 'AWS::Lambda::Function'
      ? fnTarget.resource
      : undefined;
  if (!queue || !fn) return;
  const timeout = numberOr(fn.props.Timeout, LAMBDA_DEFAULT_TIMEOUT_S);
  const visibility = numberOr(queue.props.VisibilityTimeout, SQS_DEFAULT_VISIBILITY_S);
  const pair = `queue ${queue.construct.node.path} (visibility timeout ${visibility} s) feeds function ${fn.construct.node.path} (timeout ${timeout} s)`;
  if (visibility < timeout) report(DEPLOY_RULES.visibility, r, pair);
  else if (queue.varve && fn.varve && visibility < 6 * timeout) report(DEPLOY_RULES.visibilitySixfold, r, pair);
}

function checkQueue(r: Rendered, target: (v: unknown) => Target, report: Report): void {
  const redrive = r.props.RedrivePolicy as { deadLetterTargetArn?: unknown } | undefined;
  if (redrive?.deadLetterTargetArn !== undefined) {
    const dlq = target(redrive.deadLetterTargetArn);
    const fifo = isFifo({ resource: r });
    const dlqFifo = isFifo(dlq);
    if (dlqFifo !== undefined && dlqFifo !== fifo) {
      report(
        DEPLOY_RULES.dlqType,
        r,
        `the ${fifo ? 'FIFO' : 'standard'} queue's dead-letter queue ${describe(dlq)} is ${dlqFifo ? 'FIFO' : 'standard'}`,
      );
    }
  }
  if (r.props.MaximumMessageSize !== undefined) {
    const max = numberOr(r.props.MaximumMessageSize, SQS_MAX_MESSAGE_BYTES);
    if (max > SQS_MAX_MESSAGE_BYTES) report(DEPLOY_RULES.messageSize, r, `MaximumMessageSize is ${max} bytes`);
    else if (r.varve && max < VARVE_MAX_MESSAGE_BYTES)
      report(DEPLOY_RULES.messageSize, r, `MaximumMessageSize is ${max} bytes, less than varve's largest message`);
  }
}

/** A number property as rendered (CloudFormation takes numbers as strings too). */
function numberOr(value: unknown, fallback: number): number {
  if (value === undefined || value === null) return fallback;
  const n = Number(value);
  return Number.isFinite(n) ? n : fallback;
}

/** Logical ids a rendered value refers to (Ref and Fn::GetAtt, at any depth). */
function referencedIds(value: unknown, out: string[] = []): string[] {
  if (Array.isArray(value)) {
    for (const v of value) referencedIds(v, out);
  } else if (value && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    if (typeof o.Ref === 'string') out.push(o.Ref);
    const getAtt = o['Fn::GetAtt'];
    if (Array.isArray(getAtt) && typeof getAtt[0] === 'string') out.push(getAtt[0]);
    for (const v of Object.values(o)) referencedIds(v, out);
  }
  return out;
}
