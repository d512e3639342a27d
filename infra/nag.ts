/**
 * cdk-nag (v3, AwsSolutions pack) acknowledgments for what varve's constructs do on purpose,
 * each with its reason. cdk-nag v3 acknowledges one finding at a time through CDK's
 * `Validations.of(construct).acknowledge()`; this aspect finds the exact findings varve causes
 * and nothing else, so a wildcard that varve did not write still fails the check.
 */
import { Aspects, CfnResource, Stack, Validations, type IAspect } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { CfnPolicy } from 'aws-cdk-lib/aws-iam';
import { CfnFunction } from 'aws-cdk-lib/aws-lambda';
import type { CfnBucket } from 'aws-cdk-lib/aws-s3';
import type { Construct, IConstruct } from 'constructs';
import { isVarveConstruct } from './deploy-rules.js';
import { Warehouse } from './warehouse.js';

const PACK = 'AwsSolutions::AwsSolutions';

const BASIC_EXECUTION = 'Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole';

const REASONS = {
  xray: 'X-Ray PutTraceSegments and PutTelemetryRecords support no resource-level permissions, so Resource "*" is the only form; tracing is active on every varve function.',
  objects: (path: string) =>
    `Object access limited to the key prefix ${path}: the table's (or the consumer's) own files, which get generated unique names, so no narrower resource exists. Bucket listing carries an s3:prefix condition for the same prefix.`,
  runtime:
    'varve pins Node.js 22 (esbuild target node22; the AWS SDK v3 requires Node >= 22 from 2027); moving to a newer runtime is a deliberate, tested upgrade rather than a default.',
  rejects:
    'The rejects queue is itself a terminal queue: ingest puts invalid records there with their reasons for operators to inspect; nothing consumes it, so a DLQ behind it would never receive a message.',
  failures:
    'The expiry failure queue is itself a dead-letter queue: the on-failure destination of the scheduled expiry function and the dead-letter queue of its EventBridge target, read by operators; a DLQ behind it would never receive a message.',
  triggerFailures:
    'The discovery trigger failure queue is itself a dead-letter queue: the dead-letter queue of the EventBridge targets that feed discovery (EventBridge takes standard queues only), read by operators; a DLQ behind it would never receive a message.',
  notifications:
    "CDK's own BucketNotificationsHandler (a singleton Lambda that turns on EventBridge notifications for the warehouse bucket at deploy time) comes with the managed basic execution role and offers no way to replace it; varve's own functions carry no managed policy, only an inline policy scoped to their own log group.",
};

/** The Fn::GetAtt logical id of a bucket ARN and the literal key pattern joined after it. */
function objectResource(resource: unknown): { logicalId: string; suffix: string } | undefined {
  const join = (resource as { 'Fn::Join'?: [string, unknown[]] })['Fn::Join'];
  if (join?.[0] !== '' || join[1].length !== 2) return undefined;
  const [arn, suffix] = join[1];
  const getAtt = (arn as { 'Fn::GetAtt'?: [string, string] })['Fn::GetAtt'];
  if (getAtt?.[1] !== 'Arn' || typeof suffix !== 'string') return undefined;
  return { logicalId: getAtt[0], suffix };
}

/**
 * Acknowledges the cdk-nag AwsSolutions findings that varve's design causes. Add it next to the
 * nag pack: `Aspects.of(app).add(new VarveNagAcknowledgments())`.
 *
 * {@link addVarveNagChecks} does both.
 *
 * @example
 * const app = new App();
 * new VarveExampleStack(app, 'VarveExample');
 * Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
 * Aspects.of(app).add(new VarveNagAcknowledgments());
 */
class VarveNagAcknowledgments implements IAspect {
  /** Acknowledges the findings of one construct, if varve made it. */
  visit(node: IConstruct): void {
    if (!(node instanceof CfnResource)) return;
    if (node.node.path.includes('/BucketNotificationsHandler') && node.cfnResourceType === 'AWS::IAM::Role') {
      // The handler is a stack-level singleton; it exists here because a Warehouse asked for it.
      if (
        Stack.of(node)
          .node.findAll()
          .some((c) => c instanceof Warehouse)
      ) {
        this.ack(node, `IAM4[${BASIC_EXECUTION}]`, REASONS.notifications);
      }
      return;
    }
    if (!isVarveConstruct(node)) return;
    if (node instanceof CfnFunction) this.ack(node, 'L1', REASONS.runtime);
    if (node.cfnResourceType === 'AWS::SQS::Queue' && node.node.path.endsWith('/RejectsQueue/Resource')) {
      this.ack(node, 'SQS3', REASONS.rejects);
    }
    if (node.cfnResourceType === 'AWS::SQS::Queue' && node.node.path.endsWith('/ExpireDlq/Resource')) {
      this.ack(node, 'SQS3', REASONS.failures);
    }
    if (node.cfnResourceType === 'AWS::SQS::Queue' && node.node.path.endsWith('/DiscoverTriggerDlq/Resource')) {
      this.ack(node, 'SQS3', REASONS.triggerFailures);
    }
    if (node instanceof CfnPolicy) this.policy(node);
  }

  /** IAM5 for X-Ray's `*` and for object patterns under a warehouse prefix; nothing else. */
  private policy(policy: CfnPolicy): void {
    const stack = Stack.of(policy);
    const warehouses = new Map<string, string>();
    for (const c of stack.node.findAll()) {
      // An imported bucket has no CloudFormation resource here, so no GetAtt to recognise.
      if (c instanceof Warehouse && c.bucket.node.defaultChild) {
        warehouses.set(stack.resolve((c.bucket.node.defaultChild as CfnBucket).logicalId) as string, c.prefix);
      }
    }
    const doc = stack.resolve(policy.policyDocument) as {
      Statement: { Action: string | string[]; Resource: unknown }[];
    };
    for (const statement of doc.Statement) {
      const actions = ([] as string[]).concat(statement.Action);
      for (const resource of ([] as unknown[]).concat(statement.Resource)) {
        if (resource === '*' && actions.every((a) => a.startsWith('xray:'))) {
          this.ack(policy, 'IAM5[Resource::*]', REASONS.xray);
          continue;
        }
        const object = objectResource(resource);
        const prefix = object && warehouses.get(object.logicalId);
        if (object && prefix !== undefined && object.suffix.startsWith(`/${prefix}/`) && object.suffix.endsWith('*')) {
          this.ack(
            policy,
            `IAM5[Resource::<${object.logicalId}.Arn>${object.suffix}]`,
            REASONS.objects(object.suffix.slice(1)),
          );
        }
      }
    }
  }

  private ack(node: IConstruct, finding: string, reason: string): void {
    Validations.of(node).acknowledge({ id: `${PACK}-${finding}`, reason });
  }
}

/**
 * Runs cdk-nag's AwsSolutions pack over `app` with varve's acknowledgments: synth stops on any
 * other finding. (cdk-nag v3 is a policy-validation plugin, not an aspect.)
 */
export function addVarveNagChecks(app: Construct, opts: { verbose?: boolean } = {}): void {
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: opts.verbose ?? false }));
  Aspects.of(app).add(new VarveNagAcknowledgments());
}
